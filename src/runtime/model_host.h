// Hot swap: the one object an app keeps when its model can change while it serves. One
// "current" InferenceService takes new requests; swap_model() (a new, verified model file: an
// update) or reconfigure() (new parameters over the same mapped model: the degradation
// ladder's actuator) builds the next service first — a failure leaves the current one serving
// — then switches in one step under the host's lock. A request is served to its end by the
// service it was submitted to: the old service keeps decoding what it admitted, and a reaper
// thread shuts it down (joins its scheduler, unmaps its model when no other service shares it)
// once its last request has finished.
//
//   submit ----> current generation (version "2") ----> on_finish
//                retired generation (version "1") ----> draining, then shut down
//
// Thread safety: every public function may be called from any thread, including the
// services' callbacks (except the destructor). No lock of the host is held while a service
// runs a callback.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "service/inference_service.h"

namespace edgellm {

class ModelHost {
 public:
  // Loads `path` as `version` and starts its service. Throws what InferenceService::open throws.
  ModelHost(const std::string& path, std::string version, const ServiceParams& params);
  // shutdown().
  ~ModelHost();
  // Shuts every service down (each request gets its on_finish, cancelled) and joins the reaper;
  // submit() then throws kCancelled. Idempotent. Not from a service's callback.
  void shutdown();
  ModelHost(const ModelHost&) = delete;
  ModelHost& operator=(const ModelHost&) = delete;

  struct Submitted {
    uint64_t id = 0;       // host-wide id: the id of every TokenEvent / RequestResult it gets
    std::string version;   // the model version that serves this request, start to end
  };
  // Submits to the current service (what InferenceService::submit throws: kBusy, kInvalidArgument,
  // kCancelled after shutdown). The request's callbacks see the host id (not the service's).
  Submitted submit(ServiceRequest request);
  // False when the id is unknown or the request has finished. Works from the request's own
  // callbacks, also before submit() has returned.
  bool cancel(uint64_t id);
  // Submits a classify request to the current service (InferenceService::submit_classify and
  // what it throws), counted as one of that version's requests until on_finish ran, so a swap
  // drains it like the others. The outcome's id is the service's (a classify is not cancelled
  // through the host: shutdown ends it).
  void submit_classify(ClassifyRequest request, std::function<void(ClassifyOutcome&)> on_finish);
  // An id no request of this host will get (the Runtime's router numbers its requests from
  // the same sequence, so ids are unique across both).
  uint64_t reserve_id();

  // Loads a new model file and switches new requests to it. Throws (and changes nothing) when
  // the file cannot be loaded. Returns once the switch is made (the old version may still be
  // finishing its requests).
  void swap_model(const std::string& path, const std::string& version, const ServiceParams& params);
  // A new service over the current model with other parameters (threads, context, KV type).
  void reconfigure(const ServiceParams& params);

  // Pause / resume every live service (current and draining); a service switched in while
  // paused starts paused.
  void pause();
  void resume();
  // True on the scheduler thread of any live service (a callback): destroying the host from
  // there would wait for itself.
  bool on_scheduler_thread() const;

  std::string current_version() const;
  ServiceParams current_params() const;
  // The current service (for metrics, tokenize, pause...). Valid until the next swap; hold the
  // shared_ptr to keep using it.
  std::shared_ptr<InferenceService> current_service() const;
  // Versions with a live service (current first, then those still draining).
  std::vector<std::string> live_versions() const;
  // Blocks until every retired service has been shut down, or timeout; true when none is left.
  bool wait_drained(std::chrono::milliseconds timeout) const;
  uint64_t swaps() const { return swaps_.load(); }

 private:
  struct Generation {
    std::string version;
    ServiceParams params;
    std::shared_ptr<const Model> model;
    std::shared_ptr<InferenceService> service;
    std::shared_ptr<std::atomic<int64_t>> outstanding = std::make_shared<std::atomic<int64_t>>(0);
  };
  // Where a host id is served: its generation and the service's id (0 until submit() knows
  // it; a cancel() before that is remembered and done when it is known).
  struct Route {
    std::shared_ptr<Generation> generation;
    RequestId inner = 0;
    bool cancel_requested = false;
  };
  void install(std::shared_ptr<Generation> next);  // the switch
  void reap();                                       // the reaper thread

  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::shared_ptr<Generation> current_;
  std::vector<std::shared_ptr<Generation>> retired_;
  std::unordered_map<uint64_t, Route> routes_;  // live requests by host id
  uint64_t next_id_ = 1;
  int reaping_ = 0;  // generations taken out of retired_ and being shut down by the reaper
  bool stopping_ = false;
  bool paused_ = false;
  std::atomic<uint64_t> swaps_{0};
  std::thread reaper_;
  std::mutex shutdown_mutex_;  // one shutdown() at a time
};

}  // namespace edgellm
