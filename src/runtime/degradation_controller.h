// The degradation ladder applied to a ModelHost: the signals (host-fed, and Linux's when
// enabled) go into a DegradationLadder on a small thread of its own (every tick_ms, and at
// once when the host feeds a signal), and each rung the ladder takes becomes a configuration:
//
//   rung >= 1  threads halved (decode and prefill), decode on the efficiency cores at
//              efficiency mode's nice (device/power_mode.h)  -> ModelHost::reconfigure
//   rung >= 2  context halved for new requests          -> reconfigure
//   rung >= 3  Q8_0 KV for new requests                 -> reconfigure
//   rung >= 4  the next smaller model of the config     -> ModelHost::swap_model
//   rung >= 5  submit() refuses: Error(kDegraded, "degraded: <reason>")
//   rung  = 6  running requests end: their result is ERROR / kDegraded with the reason and the
//              text so far
// Configurations are a function of the rung, so stepping back up restores each in reverse
// order. Requests admitted before a reconfigure finish on the service that admitted them
// (ModelHost): no step but the last touches them. Every step is counted with its reason
// (metrics_json).
//
// Thread safety: every public function may be called from any thread (not the destructor from
// a callback). Steps run on the controller's thread, never under a lock a callback may need.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/json.h"
#include "platform/thread_placement.h"
#include "runtime/degradation_ladder.h"
#include "runtime/model_host.h"
#include "runtime/pressure_signals.h"

namespace edgellm {

struct DegradationConfig {
  std::string base_model_path;  // what the host serves at rung < 4
  std::string base_version;
  // Rung 4: smaller models to use instead, best first (path, version). Empty: rung 4 changes
  // nothing but is still taken (and counted) on the way to rung 5.
  std::vector<std::pair<std::string, std::string>> smaller_models;
  int64_t recover_ms = 10000;   // hysteresis before each step back up
  int64_t tick_ms = 250;        // how often the ladder is re-evaluated
  bool read_linux_signals = false;  // also read /proc/pressure, memory.events, thermal zones
  // Called on the controller's thread after each step is applied (the host's current service is
  // that rung's), with no lock held: it may call the host and this controller (not its
  // destructor), and the ladder takes no further step until it returns (an exception it throws
  // is logged). For a host that reports degradation (UI, logs) and for tests that look at each
  // rung's live service.
  std::function<void(const DegradationLadder::Step& step)> on_step;
};

class DegradationController {
 public:
  // The host's current parameters become the base (rung 0) configuration.
  DegradationController(ModelHost& host, DegradationConfig config);
  ~DegradationController();
  DegradationController(const DegradationController&) = delete;
  DegradationController& operator=(const DegradationController&) = delete;

  // Host-fed signals (replace the previous ones); the ladder is re-evaluated at once.
  void set_signals(const PressureSignals& signals);
  // Replaces the models rung 4 may switch to (path, version), best first. Reads the first one's
  // hyper-parameters (Error from Model::load when it does not load; nothing changed then).
  void set_smaller_models(std::vector<std::pair<std::string, std::string>> models);

  // A new base model (an update, Runtime::swap_model): loaded with the configuration of the
  // rung in force and switched in, unless the ladder serves the smaller model now (rung >= 4):
  // then it is only remembered and loaded when the ladder steps back up. Serialised with the
  // ladder's own steps. Throws what ModelHost::swap_model throws (nothing changed then).
  void swap_base_model(const std::string& path, const std::string& version);
  std::string base_version() const;
  // Stops the ladder's thread (no step after it returns); submit() keeps working. Idempotent.
  void stop();

  // ModelHost::submit, refused at rung >= 5; tracks the request for rung 6.
  ModelHost::Submitted submit(ServiceRequest request);

  Rung rung() const;
  // Blocks until the ladder has no step due (target reached) or timeout; true when settled.
  bool wait_settled(std::chrono::milliseconds timeout) const;
  // Ladder counters and reasons, the configuration in force, refusals and ended requests.
  Json metrics_json() const;
  // The parameters for a rung (for tests and the docs), for the model serving at that rung
  // (Q8_0 KV only where its head_dim allows it: a multiple of 32).
  ServiceParams params_for(Rung r) const;

 private:
  void run();
  void apply(const DegradationLadder::Step& step);  // controller thread, no lock held
  ServiceParams params_for_locked(Rung r) const;     // mutex_ held

  ModelHost& host_;
  DegradationConfig config_;
  ServiceParams base_;
  int32_t base_head_dim_ = 0, small_head_dim_ = 0;  // read once: which models take Q8_0 KV
  ThreadPlacement efficiency_decode_;  // this device's efficiency-mode decode placement, read once

  std::mutex apply_mutex_;  // one configuration change at a time (a ladder step or a new base model)
  mutable std::mutex mutex_;
  mutable std::condition_variable wake_;
  PressureSignals host_signals_;
  DegradationLadder ladder_;
  Rung applied_ = Rung::kNormal;  // the configuration in force (lags the ladder while applying)
  std::string refuse_reason_;
  // The requests in flight, shared with their on_finish wrappers (which may run after this
  // controller is gone, when the host outlives it): its own lock, never held with mutex_.
  struct Tracking {
    std::mutex mutex;
    std::set<uint64_t> live;                          // submitted, no on_finish yet
    std::set<uint64_t> finished_early;                // on_finish ran before submit returned
    std::unordered_map<uint64_t, std::string> ended;  // ended by rung 6, with the reason
  };
  std::shared_ptr<Tracking> tracking_ = std::make_shared<Tracking>();
  uint64_t refused_ = 0, ended_count_ = 0, apply_failures_ = 0;
  std::string last_apply_error_;
  bool stopping_ = false;
  bool dirty_ = false;        // signals changed since the last evaluation
  std::thread thread_;
};

}  // namespace edgellm
