// Everything the HTTP endpoints ask of the model side, in one place, all of it through the one
// edgellm::Runtime (src/runtime/runtime.h) that the C ABI and NAPI sit on too: a request from
// `edgellm serve` takes the same path and the same checks (service/request_limits.h, applied at
// Runtime::submit) as one from an app.
//
//   requests   submit, cancel                       Runtime::submit / cancel
//   classify   classify (blocks the worker)         Runtime::classify
//   sessions   import, export, delete, size limits  the Runtime's SessionStore
//   the model  serving(): tokenizer, template, sizes   Runtime::service(), held while used
//   admin      swap, reload, pressure, degradation  ModelHost / DegradationController via the Runtime
//              pause, resume, trim                  Runtime::pause / resume / trim
//   router     routing(), router_params()           the Runtime's router (runtime/router.h)
//   metrics    the Runtime's Prometheus text        service + ladder + router + sessions + swaps
//
// Hot swap: the service behind serving() changes when a new model version switches in. Its
// tokenizer and chat template are references into that service, so an endpoint holds the
// shared_ptr for as long as it uses them (the retired service then lives on until it is let go);
// never keep a reference past the pointer.
//
// Thread-safety: as Runtime's (every call from any thread).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/json.h"
#include "generation/classify.h"
#include "runtime/degradation_ladder.h"
#include "runtime/router.h"
#include "service/request.h"
#include "service/service_metrics.h"

namespace edgellm {
class InferenceService;
class Runtime;
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
  explicit ServiceCalls(Runtime& runtime) : runtime_(runtime) {}

  struct Submitted {
    RequestId id = 0;
    std::string version;  // the model version that serves it
  };
  // Queues a generation (Runtime::submit): Error kBusy when the queue is full, kInvalidArgument
  // naming a bad field (or a bad session id), kDegraded when the ladder refuses new requests,
  // kCancelled after shutdown. ServiceRequest::session_id continues / keeps a session.
  Submitted submit(ServiceRequest request);
  bool cancel(RequestId id);
  // Runtime::classify: blocks for a prefill and one batched forward over the labels. Error
  // kInvalidArgument (request_limits.h's check_classify_request wording), kDegraded, kCancelled.
  ClassifyResult classify(ClassifyRequest request);

  // Sessions: Runtime::import_session checks the bytes against the serving model (kInvalidFile:
  // truncated or corrupted; kInvalidArgument: another model, KV type or shape, or too large)
  // and keeps them; returns the positions they hold.
  int32_t import_session(const std::string& id, std::string bytes);
  std::shared_ptr<const std::string> export_session(const std::string& id);  // nullptr: none
  bool delete_session(const std::string& id);
  size_t max_sessions() const;       // 0: sessions are off
  size_t max_session_bytes() const;  // the store's total (also the largest import)

  // The service serving new requests (hold it while using its tokenizer / template). Throws
  // Error(kCancelled) once the runtime has shut down.
  std::shared_ptr<InferenceService> serving() const;
  ServedParams params() const;
  // The Runtime itself, for a library feature that takes one (docqa_endpoints.h: DocQa::ask
  // writes its answers with the chat model).
  Runtime& runtime() const { return runtime_; }
  std::string model_version() const;

  // Admin (admin_endpoints.h). swap_model and reload block while the new model loads.
  void swap_model(const std::string& path, const std::string& version);
  std::string reload_from_registry();
  void set_pressure(const PressureSignals& signals);
  Json degradation_json() const;
  // Runtime::pause / resume (every live version; new requests queue, deadlines keep running)
  // and Runtime::trim (done(bytes) on the scheduler thread, between two steps, paused or not).
  void pause();
  void resume();
  bool paused() const;
  void trim(std::function<void(size_t)> done);
  // The serving version's queue and sequences (ServiceMetrics running / waiting / paused_idle).
  ServiceMetrics service_metrics() const;
  std::vector<std::string> live_versions() const;
  uint64_t swaps() const;

  // The Runtime's router: on when it may call a cloud (a transport) or refuses to (privacy
  // mode); chat requests then carry a route (routed_chat.h). Its parameters and counters.
  bool routing() const;
  RouterParams router_params() const;
  RouterCounters router_counters() const;

  // The runtime's Prometheus text (service, ladder, router, sessions, swaps).
  std::string metrics_prometheus() const;

 private:
  Runtime& runtime_;
};

}  // namespace edgellm::server
