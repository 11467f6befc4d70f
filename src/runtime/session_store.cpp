#include "runtime/session_store.h"

#include <iterator>
#include <utility>

namespace edgellm {

SessionStore::SessionStore(size_t max_sessions, size_t max_bytes)
    : max_sessions_(max_sessions), max_bytes_(max_bytes) {}

bool SessionStore::valid_id(const std::string& id) {
  if (id.empty() || id.size() > 64) return false;
  for (const char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '-' || c == '.';
    if (!ok) return false;
  }
  return id != "." && id != "..";
}

std::shared_ptr<const std::string> SessionStore::get(const std::string& id) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = index_.find(id);
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->bytes;
}

bool SessionStore::put(const std::string& id, std::string bytes) {
  if (bytes.size() > max_bytes_ || max_sessions_ == 0) return false;
  auto shared = std::make_shared<const std::string>(std::move(bytes));
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = index_.find(id); it != index_.end()) erase_locked(it->second);
  // Drop the least recently used until the new one fits both bounds.
  while (!lru_.empty() && (lru_.size() + 1 > max_sessions_ || bytes_ + shared->size() > max_bytes_)) {
    erase_locked(std::prev(lru_.end()));
  }
  bytes_ += shared->size();
  lru_.push_front(Entry{id, std::move(shared)});
  index_[id] = lru_.begin();
  return true;
}

bool SessionStore::erase(const std::string& id) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = index_.find(id);
  if (it == index_.end()) return false;
  erase_locked(it->second);
  return true;
}

void SessionStore::erase_locked(std::list<Entry>::iterator it) {
  bytes_ -= it->bytes->size();
  index_.erase(it->id);
  lru_.erase(it);
}

Json SessionStore::to_json() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Json list = Json::array();
  for (const Entry& e : lru_) {
    Json item = Json::object();
    item.set("id", e.id);
    item.set("bytes", static_cast<uint64_t>(e.bytes->size()));
    list.push_back(std::move(item));
  }
  Json j = Json::object();
  j.set("sessions", std::move(list));
  j.set("bytes", static_cast<uint64_t>(bytes_));
  j.set("max_sessions", static_cast<uint64_t>(max_sessions_));
  j.set("max_bytes", static_cast<uint64_t>(max_bytes_));
  return j;
}

size_t SessionStore::count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lru_.size();
}

size_t SessionStore::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bytes_;
}

}  // namespace edgellm
