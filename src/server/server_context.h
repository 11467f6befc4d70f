// What the endpoints of one HttpServer share: the service calls, the options, the counters,
// the sessions, the stopping flag. Owned by HttpServer; every endpoint gets a reference.
//
// Thread-safety: the members are thread-safe themselves (ServiceCalls and SessionStore lock,
// the counters and flags are atomic); `options` is immutable once serving.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "server/server_counters.h"
#include "server/server_options.h"
#include "server/service_calls.h"
#include "runtime/session_store.h"

namespace edgellm::server {

struct ServerContext {
  ServerContext(InferenceService& s, ServerOptions o)
      : service(s), options(std::move(o)), sessions(options.max_sessions, options.max_session_bytes) {}

  // "chatcmpl-7", "cmpl-8": unique per server run.
  std::string next_id(const char* prefix) { return prefix + std::to_string(next_response_id.fetch_add(1)); }

  ServiceCalls service;
  ServerOptions options;
  ServerCounters counters;
  SessionStore sessions;
  std::atomic<bool> stopping{false};  // stop() was called: generations are cancelled
  std::atomic<uint64_t> next_response_id{1};
};

}  // namespace edgellm::server
