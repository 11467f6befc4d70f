#include "runtime/degradation_controller.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "core/log.h"
#include "device/device_profile.h"
#include "device/power_mode.h"
#include "engine/memory_plan.h"
#include "model/model.h"

namespace edgellm {
namespace {

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

DegradationController::DegradationController(ModelHost& host, DegradationConfig config)
    : host_(host), config_(std::move(config)), base_(host.current_params()), ladder_(config_.recover_ms) {
  // The context in force (0 in the parameters means the model's): rung 2 halves it.
  if (base_.context.n_ctx == 0) base_.context.n_ctx = host_.current_service()->context_params().n_ctx;
  base_head_dim_ = host_.current_service()->model().hparams().head_dim;
  efficiency_decode_ = plan_threads(detect_this_device(), PowerMode::kEfficiency).decode_placement;
  if (!config_.smaller_models.empty()) {
    // Mapped, not repacked: only the hyper-parameters are read. A file that does not load is
    // reported when rung 4 tries it (apply_failures), not here.
    try {
      ModelLoadParams lp;
      lp.repack = RepackMode::kOff;
      small_head_dim_ = Model::load(config_.smaller_models.front().first, lp)->hparams().head_dim;
    } catch (const Error& e) {
      log_message(LogLevel::kWarn, std::string("degradation: smaller model unreadable: ") + e.what());
    }
  }
  thread_ = std::thread([this] { run(); });
}

DegradationController::~DegradationController() { stop(); }

void DegradationController::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::string DegradationController::base_version() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return config_.base_version;
}

void DegradationController::swap_base_model(const std::string& path, const std::string& version) {
  std::lock_guard<std::mutex> serial(apply_mutex_);
  // The new model's shape decides whether the int8-KV rung applies to it.
  ModelLoadParams lp;
  lp.repack = RepackMode::kOff;
  const int32_t head_dim = Model::load(path, lp)->hparams().head_dim;  // throws: nothing changed
  ServiceParams p;
  bool load_now = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    load_now = !(static_cast<int>(applied_) >= static_cast<int>(Rung::kSmallerModel) && !config_.smaller_models.empty());
    const int32_t old_head_dim = base_head_dim_;
    base_head_dim_ = head_dim;
    p = params_for_locked(applied_);
    base_head_dim_ = old_head_dim;
  }
  if (load_now) host_.swap_model(path, version, p);  // throws: the current model keeps serving
  std::lock_guard<std::mutex> lock(mutex_);
  config_.base_model_path = path;
  config_.base_version = version;
  base_head_dim_ = head_dim;
}

void DegradationController::set_signals(const PressureSignals& signals) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    host_signals_ = signals;
    dirty_ = true;
  }
  wake_.notify_all();
}

void DegradationController::set_smaller_models(std::vector<std::pair<std::string, std::string>> models) {
  int32_t head_dim = 0;
  if (!models.empty()) {
    ModelLoadParams lp;
    lp.repack = RepackMode::kOff;
    head_dim = Model::load(models.front().first, lp)->hparams().head_dim;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  config_.smaller_models = std::move(models);
  small_head_dim_ = head_dim;
}

ServiceParams DegradationController::params_for(Rung r) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return params_for_locked(r);
}

ServiceParams DegradationController::params_for_locked(Rung r) const {
  ServiceParams p = base_;
  const int rung = static_cast<int>(r);
  if (rung >= 1) {
    const int decode = p.context.n_threads > 0 ? p.context.n_threads : 2;
    const int prefill = p.context.n_threads_batch > 0 ? p.context.n_threads_batch : decode;
    p.context.n_threads = std::max(1, decode / 2);
    p.context.n_threads_batch = std::max(1, prefill / 2);
    // Decode moves to the efficiency cores at a lower priority (its own pool: Context); prefill
    // keeps its placement. Lowering a priority is always permitted.
    p.context.placement = efficiency_decode_;
  }
  if (rung >= 2 && p.context.n_ctx > 0) p.context.n_ctx = std::max(64, p.context.n_ctx / 2);
  const bool small = rung >= static_cast<int>(Rung::kSmallerModel) && !config_.smaller_models.empty();
  const int32_t head_dim = small ? small_head_dim_ : base_head_dim_;
  if (rung >= 3 && head_dim > 0 && head_dim % 32 == 0) {
    // int8 K and V, never widening a type that is already smaller (a Q4_0 K or V stays Q4_0).
    const auto narrowed = [](TensorType t) {
      return t == TensorType::F32 || t == TensorType::F16 ? TensorType::Q8_0 : t;
    };
    const TensorType v = narrowed(p.context.kv_v());
    p.context.kv_type = narrowed(p.context.kv_type);
    p.context.kv_type_v = v != p.context.kv_type ? std::optional<TensorType>(v) : std::nullopt;
  }
  // The draft model drafts for the base model's vocabulary: the smaller model runs without it
  // (requests in speculation mode draft are then refused as on a runtime without one).
  if (small) p.draft_model_path.clear();
  return p;
}

ModelHost::Submitted DegradationController::submit(ServiceRequest request) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (static_cast<int>(applied_) >= static_cast<int>(Rung::kRefuseNew)) {
      ++refused_;
      throw Error(ErrorCode::kDegraded, "degraded: " + refuse_reason_ + "; new requests are refused until it eases");
    }
  }
  // on_finish may run before host_.submit() returns (the host's id is in the result): whichever
  // of the two comes second cleans up, through `tracking` under its lock. The wrapper holds
  // only `tracking`, so it stays valid if the host outlives this controller.
  request.on_finish = [tracking = tracking_, user = std::move(request.on_finish)](RequestResult& r) {
    std::string reason;
    {
      std::lock_guard<std::mutex> lock(tracking->mutex);
      if (tracking->live.erase(r.id) == 0) tracking->finished_early.insert(r.id);
      if (auto it = tracking->ended.find(r.id); it != tracking->ended.end()) {
        reason = std::move(it->second);
        tracking->ended.erase(it);
      }
    }
    if (!user) return;
    if (!reason.empty() && r.finish_reason == FinishReason::kCancelled) {
      // The text so far stays; the reason says why it ended.
      r.finish_reason = FinishReason::kError;
      r.error_code = ErrorCode::kDegraded;
      r.error = "degraded: " + reason + "; the request was ended to free memory";
    }
    user(r);
  };
  const ModelHost::Submitted s = host_.submit(std::move(request));
  std::lock_guard<std::mutex> lock(tracking_->mutex);
  if (tracking_->finished_early.erase(s.id) == 0) tracking_->live.insert(s.id);
  return s;
}

Rung DegradationController::rung() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return applied_;
}

bool DegradationController::wait_settled(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mutex_);
  return wake_.wait_for(lock, timeout, [&] { return !ladder_.pending() && !dirty_ && applied_ == ladder_.rung(); });
}

void DegradationController::run() {
  LinuxPressure before = config_.read_linux_signals ? read_linux_pressure() : LinuxPressure{};
  int64_t last_linux = now_ms();
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, std::chrono::milliseconds(config_.tick_ms), [&] { return stopping_ || dirty_; });
    if (stopping_) break;
    dirty_ = false;
    PressureSignals s = host_signals_;
    if (config_.read_linux_signals && now_ms() - last_linux >= 1000) {
      lock.unlock();
      const LinuxPressure now = read_linux_pressure();
      lock.lock();
      const PressureSignals linux_signals = signals_from_linux(now, before);
      before = now;
      last_linux = now_ms();
      s.memory_level = std::max(s.memory_level, linux_signals.memory_level);
      s.thermal_level = std::max(s.thermal_level, linux_signals.thermal_level);
    }
    // Take every step that is due now, one at a time, each applied before the next.
    for (;;) {
      const auto steps = ladder_.update(s, now_ms());
      if (steps.empty()) break;
      lock.unlock();
      apply(steps.front());
      if (config_.on_step) {  // set at construction only: no lock needed
        try {
          config_.on_step(steps.front());
        } catch (const std::exception& e) {
          log_message(LogLevel::kError, std::string("degradation: the on_step hook threw: ") + e.what());
        }
      }
      lock.lock();
      if (stopping_) break;
    }
    wake_.notify_all();  // wait_settled
  }
}

void DegradationController::apply(const DegradationLadder::Step& step) {
  std::lock_guard<std::mutex> serial(apply_mutex_);
  const int to = static_cast<int>(step.to);
  log_message(LogLevel::kInfo, std::string("degradation: ") + rung_name(step.from) + " -> " + rung_name(step.to) +
                                   " (" + step.reason + ")");
  try {
    if (step.to == Rung::kEndRunning) {
      std::vector<uint64_t> ids;
      {
        std::lock_guard<std::mutex> lock(tracking_->mutex);
        for (uint64_t id : tracking_->live) tracking_->ended[id] = step.reason;
        ids.assign(tracking_->live.begin(), tracking_->live.end());
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ended_count_ += ids.size();
      }
      for (uint64_t id : ids) host_.cancel(id);
    } else if (to <= static_cast<int>(Rung::kSmallerModel)) {
      // Rungs 1-4 are configurations: rebuild for the new rung (down or up).
      ServiceParams p;
      std::string version, path;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        p = params_for_locked(step.to);
        const bool want_small = to >= static_cast<int>(Rung::kSmallerModel) && !config_.smaller_models.empty();
        version = want_small ? config_.smaller_models.front().second : config_.base_version;
        path = want_small ? config_.smaller_models.front().first : config_.base_model_path;
      }
      if (version != host_.current_version()) {
        host_.swap_model(path, version, p);
      } else if (step.from != Rung::kRefuseNew || step.to != Rung::kSmallerModel) {
        host_.reconfigure(p);
      }
    }
  } catch (const Error& e) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++apply_failures_;
    last_apply_error_ = std::string(rung_name(step.to)) + ": " + e.what();
    log_message(LogLevel::kWarn, "degradation: could not apply " + last_apply_error_);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  applied_ = step.to;
  if (to >= static_cast<int>(Rung::kRefuseNew)) refuse_reason_ = step.reason;
}

Json DegradationController::metrics_json() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Json j = ladder_.metrics_json();
  j.set("applied_rung", rung_name(applied_));
  j.set("model_version", host_.current_version());  // the host knows; no copy kept here
  const ServiceParams p = params_for_locked(applied_);
  // What the configuration in force costs by the memory formula (engine/memory_plan.h), so a
  // host can see what each rung bought.
  if (auto svc = host_.current_service()) {
    j.set("planned_bytes", static_cast<uint64_t>(plan_memory(svc->model(), svc->context_params(), RepackMode::kAuto, svc->draft_model().get()).total()));
  }
  j.set("n_ctx", p.context.n_ctx);
  j.set("n_threads", p.context.n_threads);
  j.set("n_threads_batch", p.context.n_threads_batch);
  j.set("decode_placement", p.context.placement.to_string());
  j.set("kv_type", tensor_type_name(p.context.kv_k()));
  j.set("kv_type_v", tensor_type_name(p.context.kv_v()));
  j.set("refused_requests", refused_);
  j.set("ended_requests", ended_count_);
  j.set("apply_failures", apply_failures_);
  if (!last_apply_error_.empty()) j.set("last_apply_error", last_apply_error_);
  j.set("signals", host_signals_.describe());
  return j;
}

}  // namespace edgellm
