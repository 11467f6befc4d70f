// Everything `edgellm serve` configures on the HTTP side (the model side is ServiceParams).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "server/router.h"

namespace edgellm::server {

struct ServerOptions {
  std::string host = "127.0.0.1";  // loopback unless told otherwise (then api_key is required)
  int port = 8080;                 // 0: any free port (HttpServer::port() tells which)
  std::string api_key;             // empty: no authentication (loopback only)
  std::string cors_origin;         // empty: no CORS headers, preflights refused
  bool log_prompts = false;        // log request text (off: ids, sizes and timings only)
  std::string model_name;          // the id /v1/models lists; empty: the model file's name
  size_t max_body_bytes = size_t{1} << 20;  // larger bodies: 413
  int max_json_depth = 64;         // deeper nesting: 400
  int64_t deadline_ms = 120000;    // per request, queue wait included (service deadline)
  int read_timeout_s = 5;          // a client that sends nothing this long is disconnected
  int http_threads = 0;            // 0: running + queued requests + 16 (room to answer 429s)
  int retry_after_s = 1;           // Retry-After of a 429
  size_t max_sessions = 16;        // sessions kept in memory (session_store.h); 0: sessions off
  size_t max_session_bytes = size_t{256} << 20;  // their total; also the largest import body
  RouterOptions router;            // edge-cloud routing of non-streamed chat (router.h)
};

}  // namespace edgellm::server
