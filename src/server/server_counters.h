// The HTTP layer's own counters (the service's metrics cover the requests it accepted):
// rendered after the service's in GET /metrics. Lock-free; any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace edgellm::server {

struct ServerCounters {
  std::atomic<uint64_t> http_requests{0};        // every request httplib routed or refused
  std::atomic<uint64_t> http_4xx{0};             // client errors (429 included)
  std::atomic<uint64_t> http_429{0};             // queue full
  std::atomic<uint64_t> http_5xx{0};
  std::atomic<uint64_t> client_disconnects{0};   // generation cancelled because the client left
  std::atomic<uint64_t> streams{0};              // SSE responses started

  // Prometheus text exposition (edgellm_http_* counters).
  std::string to_prometheus() const;
};

}  // namespace edgellm::server
