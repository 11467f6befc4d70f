// The edge-cloud router of the Runtime (docs/router.md): local first, the cloud where the policy
// allows it. Decisions are router_policy.h's; this class runs them as a request's life:
//
//   kAuto   local answer (with token probabilities) -> confidence -> local / low-confidence /
//           summary of older turns (a local request) -> cloud call -> the cloud's answer
//   kLocal  local answer streamed as it comes; only a local failure goes to the cloud
//   kCloud  summary -> cloud call; the local model when the cloud cannot answer
//   any     a local run that fails with OUT_OF_MEMORY, DEGRADED or CONTEXT_FULL (also a refusal
//           at submit under the degradation ladder) goes to the cloud when cloud_on_failure
//           allows it ("large" tier for a full context when there is one)
//
// A cloud call that fails or times out falls back: small tier -> large tier (when configured)
// -> the local answer (run then if there was none) with the reason. Privacy mode, or no
// transport, never calls the cloud. Requests that continue a session are answered locally (the
// cloud holds none of their KV; kAuto acts as kLocal) unless the local run fails: then the cloud
// may take them as any other (the failed run stored nothing; the request carries the whole
// conversation).
//
// Threads: one router thread handles every step after submit (local results, cloud replies,
// timeouts) and delivers kAuto / kCloud answers and every routed on_finish; kLocal's tokens
// stream from the scheduler thread as usual. No router lock is held while it calls the local
// runtime, the transport or a callback. Every public function may be called from any thread,
// including a callback (not the destructor).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/json.h"
#include "runtime/cloud_transport.h"
#include "runtime/router_policy.h"
#include "service/request.h"

namespace edgellm {

struct RouterParams {
  double local_threshold = 0.85;
  double cloud_threshold = 0.60;
  bool privacy = false;             // never call the cloud (answers stay on the device)
  int32_t verbatim_turns = 3;       // user turns sent verbatim; older ones as a local summary
  int32_t cloud_timeout_ms = 30000; // a call not answered by then counts as failed
  bool cloud_on_failure = true;     // a failed local run (memory, degraded, context) goes to the cloud
  std::string cloud_model;          // model name the "small" tier is asked for
  std::string cloud_model_large;    // the "large" tier's; empty: no second tier
  int32_t summary_max_tokens = 128;
  std::shared_ptr<CloudTransport> transport;  // null: no cloud

  bool cloud_allowed() const { return transport != nullptr && !privacy; }
};

// Router counters (metrics): by final route, cloud calls that failed, cloud routes privacy
// mode refused, local failures sent to the cloud, and the sums behind mean score and latency.
struct RouterCounters {
  uint64_t local = 0, low_confidence = 0, cloud = 0;
  uint64_t cloud_failures = 0, privacy_blocks = 0, failure_fallbacks = 0;
  uint64_t scored = 0;
  double score_sum = 0, latency_ms_sum = 0;
};

class Router {
 public:
  // How routed requests reach the local model: the runtime's own, unrouted path.
  struct Local {
    std::function<uint64_t(ServiceRequest)> submit;  // throws as Runtime::submit does
    std::function<bool(uint64_t)> cancel;
    std::function<uint64_t()> new_id;                // an id no other request of the runtime has
    std::function<void(ServiceRequest&)> validate;  // the request checks (and input policy), without submitting
  };
  Router(Local local, RouterParams params);
  // shutdown()
  ~Router();
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  void set_params(RouterParams params);
  RouterParams params() const;

  // Routes one request (its route is not kOff). Returns its id; throws what the local path
  // throws when the request is refused at once (INVALID_ARGUMENT, BUSY, SHUT_DOWN; DEGRADED only
  // when the cloud is not allowed to take it). on_finish follows exactly once.
  uint64_t submit(ServiceRequest request);
  // True when `id` is a routed request still in flight (it then ends cancelled).
  bool cancel(uint64_t id);
  // Ends every request in flight (cancelled) and stops the thread. Idempotent.
  void shutdown();

  // True on the router thread (a routed request's callback).
  bool on_router_thread() const { return std::this_thread::get_id() == thread_id_.load(); }

  RouterCounters counters() const;
  Json metrics_json() const;
  std::string metrics_prometheus() const;

 private:
  struct Op;
  struct Event;
  struct Shared;
  using Clock = std::chrono::steady_clock;

  void run();  // the router thread
  void post(Event e);
  static void post_to(const std::shared_ptr<Shared>& shared, Event e);
  void handle(Event& e);
  void start_local(const std::shared_ptr<Op>& op, bool stream);
  void after_local(const std::shared_ptr<Op>& op, RequestResult result, std::vector<float> probs, int32_t streamed);
  void go_cloud(const std::shared_ptr<Op>& op, const std::string& tier);
  void call_cloud(const std::shared_ptr<Op>& op);
  void after_cloud(const std::shared_ptr<Op>& op, const CloudReply& reply);
  void cloud_failed(const std::shared_ptr<Op>& op, const std::string& why);
  void deliver_local(const std::shared_ptr<Op>& op);
  void deliver(const std::shared_ptr<Op>& op, RequestResult result, bool text_event);
  void finish_cancelled(const std::shared_ptr<Op>& op);

  // The lock, the wake-up and the event queue, shared with the callbacks given to the local
  // runtime and the transport: a reply that arrives after the router is gone lands in a queue
  // nobody reads instead of a destroyed object.

  Local local_;
  std::shared_ptr<Shared> shared_;
  std::mutex& mutex_;
  std::condition_variable& wake_;
  std::deque<Event>& events_;
  RouterParams params_;
  std::unordered_map<uint64_t, std::shared_ptr<Op>> ops_;
  RouterCounters counters_;
  bool stopping_ = false;
  std::atomic<std::thread::id> thread_id_{};
  std::thread thread_;
  std::mutex shutdown_mutex_;
};

}  // namespace edgellm
