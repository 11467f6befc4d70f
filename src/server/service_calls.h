// Everything the HTTP endpoints ask of the model side, in one place: the seven calls below and
// nothing else. Today they go to one InferenceService; issue 37's Runtime (src/runtime/) takes
// its place by implementing the same seven, so moving `edgellm serve` onto it changes this file
// and no endpoint.
//
// Thread-safety: as InferenceService's (every call from any thread; the references returned are
// immutable for the service's lifetime).
#pragma once

#include <cstdint>
#include <string_view>

#include "service/request.h"
#include "service/service_metrics.h"

namespace edgellm {
class ChatTemplate;
class InferenceService;
class Tokenizer;
}  // namespace edgellm

namespace edgellm::server {

// The sizes the endpoints report (/v1/models) and derive their limits from (worker threads).
struct ServedParams {
  int32_t n_ctx = 0;       // context positions (shared by the sequences)
  int32_t n_parallel = 0;  // requests decoded at once
  int32_t max_queued = 0;  // requests that may wait for a sequence
};

class ServiceCalls {
 public:
  explicit ServiceCalls(InferenceService& service) : service_(service) {}

  // Queues a generation (InferenceService::submit): Error kBusy when the queue is full,
  // kInvalidArgument naming a bad field, kCancelled after shutdown.
  RequestId submit(ServiceRequest request);
  bool cancel(RequestId id);
  // Checks uploaded session bytes against the served model and KV layout; returns the positions
  // they hold. Error kInvalidFile / kInvalidArgument otherwise.
  int32_t check_session(std::string_view bytes) const;

  const Tokenizer& tokenizer() const;
  const ChatTemplate& chat_template() const;
  ServiceMetrics metrics() const;
  ServedParams params() const;

 private:
  InferenceService& service_;
};

}  // namespace edgellm::server
