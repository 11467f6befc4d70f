// The HTTP layer's own counters (the service's metrics cover the requests it accepted):
// rendered after the service's in GET /metrics. Lock-free; any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace edgellm::server {

struct ServerCounters {
  std::atomic<uint64_t> http_requests{0};        // every request head read (answered or refused)
  std::atomic<uint64_t> http_4xx{0};             // client errors (429 included)
  std::atomic<uint64_t> http_429{0};             // queue full
  std::atomic<uint64_t> http_5xx{0};
  std::atomic<uint64_t> client_disconnects{0};   // generation cancelled because the client left
  std::atomic<uint64_t> streams{0};              // SSE responses started
  // The transport (http_transport.h): connections accepted, refused over a connection limit,
  // head / body / write deadlines missed, requests refused 503 because no worker was free (or
  // the request-body budget was spent).
  std::atomic<uint64_t> connections{0};
  std::atomic<uint64_t> connections_refused{0};
  std::atomic<uint64_t> timeouts{0};
  std::atomic<uint64_t> overloaded{0};
  // The router's counters are the Runtime's (edgellm_routed_total, edgellm_route_*: runtime/router.h).

  // Prometheus text exposition (edgellm_http_* counters).
  std::string to_prometheus() const;
};

}  // namespace edgellm::server
