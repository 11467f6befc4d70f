// The server's sessions (docs/server.md, "Sessions"): session bytes (kv/session_file.h) kept in
// memory under a client-chosen id, so a chat request naming the id continues from its KV
// (only the new turn is prefilled), and a conversation can be exported to / imported from
// another device running the same model file.
//
// Bounded by a count and a byte total; when a put() would exceed either, the least recently
// used other sessions are dropped (a session larger than the byte bound alone is refused). Memory
// only: sessions do not survive a restart of the server (export them to keep them).
//
// Thread-safety: every function may be called from any thread (one mutex; no callback).
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "core/json.h"

namespace edgellm {

class SessionStore {
 public:
  SessionStore(size_t max_sessions, size_t max_bytes);

  // True for a usable id: 1 to 64 characters of [A-Za-z0-9_.-] (it appears in URL paths).
  static bool valid_id(const std::string& id);

  // The bytes under `id` (now the most recently used), or nothing. The bytes are shared, not
  // copied, and stay valid after a later put() / erase() of the id.
  std::shared_ptr<const std::string> get(const std::string& id);
  // Stores (replaces) `id`. False, storing nothing, when bytes alone exceed max_bytes.
  bool put(const std::string& id, std::string bytes);
  bool erase(const std::string& id);

  // {"sessions": [{"id", "bytes"}, ...] most recently used first, "bytes", "max_sessions", "max_bytes"}.
  Json to_json() const;
  size_t count() const;
  size_t bytes() const;
  size_t max_sessions() const { return max_sessions_; }
  size_t max_bytes() const { return max_bytes_; }

 private:
  struct Entry {
    std::string id;
    std::shared_ptr<const std::string> bytes;
  };
  void erase_locked(std::list<Entry>::iterator it);

  const size_t max_sessions_;
  const size_t max_bytes_;
  mutable std::mutex mutex_;
  std::list<Entry> lru_;  // front: most recently used
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  size_t bytes_ = 0;
};

}  // namespace edgellm
