// Everything `edgellm serve` configures on the HTTP side. The model side (ServiceParams, the
// sessions kept and their bytes, the ladder, the registry, the router and its cloud transport)
// is the Runtime's: RuntimeParams.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace edgellm::server {

struct ServerOptions {
  std::string host = "127.0.0.1";  // loopback unless told otherwise (then api_key is required)
  int port = 8080;                 // 0: any free port (HttpServer::port() tells which)
  std::string api_key;             // empty: no authentication (loopback only)
  std::string cors_origin;         // empty: no CORS headers, preflights refused; "*": any origin
  // Host names a keyless server answers besides localhost, 127.0.0.1, [::1] and `host`
  // (DNS-rebinding defence, request_policy.h); "*": any. Ignored with an api_key.
  std::vector<std::string> allowed_hosts;
  bool log_prompts = false;        // log request text (off: ids, sizes and timings only)
  std::string model_name;          // the id /v1/models lists; empty: the model file's name
  size_t max_body_bytes = size_t{1} << 20;  // larger bodies: 413
  int max_json_depth = 64;         // deeper nesting: 400
  int64_t deadline_ms = 120000;    // per request, queue wait included (service deadline)
  // Speculative decoding for requests that do not choose (`edgellm serve --spec`, --draft-max):
  // "off", "ngram" or "draft" (with -md: ServiceParams::draft_model_path); a request's
  // x_edgellm_speculation / speculative.n_max overrides them.
  std::string speculation = "off";
  int32_t draft_max = 8;
  // Deadlines: a request's head must arrive within read_timeout_s of when the server waits for
  // it (an idle keep-alive connection closes then), its body within read_timeout_s + 1 s per
  // MiB; a write that makes no progress for write_timeout_s ends the connection.
  int read_timeout_s = 10;
  int write_timeout_s = 10;
  size_t max_connections = 512;        // open connections in all (503 + close above)
  size_t max_client_connections = 64;  // from one client address
  // Workers (0: running + queued requests + helper_slots + 5) and the requests that may wait
  // for one (0: 4 per worker); one more is answered 503 at once.
  int http_threads = 0;
  int http_waiting = 0;
  int retry_after_s = 1;           // Retry-After of a 429 / 503
  // /tokenize, /detokenize, /apply-template running at once (429 above): each may hold a
  // working set of ~20x its body (the token ids and the answer).
  size_t helper_slots = 2;
  // Bytes of request bodies held in memory at once (503 above, before the body is read);
  // 0: 16 x max_body_bytes. Session imports are counted apart: one at a time.
  size_t max_body_bytes_in_flight = 0;
};

}  // namespace edgellm::server
