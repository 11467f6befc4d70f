// The InferenceService's scheduler thread (inference_service.h's overview): the loop that waits
// for work, does the housekeeping (cancellations, deadlines, trims, warm-ups) and then admits and
// steps; the KV gauges it publishes for metrics().
#include <algorithm>
#include <deque>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "core/log.h"
#include "engine/batch.h"
#include "kv/kv_cache.h"
#include "platform/memory_stats.h"
#include "service/inference_service.h"
#include "service/live_request.h"
#include "tokenizer/tokenizer.h"

namespace edgellm {

namespace {

constexpr int32_t kWarmupTokens = 8;  // BOS repeated: a forward that touches every weight

}  // namespace

Clock::time_point InferenceService::next_deadline_locked() const {
  Clock::time_point t = Clock::time_point::max();
  queue_.for_each([&](const Live& r) { t = std::min(t, r.deadline); });
  for (const auto& r : running_) t = std::min(t, r->deadline);
  if (blocked_) t = std::min(t, blocked_->deadline);
  return t;
}

bool InferenceService::has_work_locked(Clock::time_point now) const {
  if (stopping_ || !cancels_.empty() || !cancelled_queued_.empty() || !trims_.empty()) return true;
  if (next_deadline_locked() <= now) return true;
  if (paused_) return false;
  if (!running_.empty() || !warmups_.empty() || blocked_ != nullptr) return true;
  // A classify at the front runs in the scratch sequences: it needs no free request sequence.
  return !queue_.empty() && (!free_seqs_.empty() || queue_.front()->classify != nullptr);
}

void InferenceService::run() {
  thread_id_.store(std::this_thread::get_id());
  for (;;) {
    std::vector<RequestId> cancels;
    std::vector<std::unique_ptr<Live>> cancelled_queued;
    std::deque<std::unique_ptr<Live>> expired_queued;
    std::vector<std::function<void(size_t)>> trims;
    std::vector<std::function<void(bool, const std::string&)>> warmups;
    bool stop = false;
    bool paused = false;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      for (;;) {
        const Clock::time_point now = Clock::now();
        if (has_work_locked(now)) break;
        paused_idle_ = paused_;  // between steps with nothing to do: paused, nothing runs until resume()
        const Clock::time_point wake_at = next_deadline_locked();
        if (wake_at == Clock::time_point::max()) {
          wake_.wait(lock);
        } else {
          wake_.wait_until(lock, wake_at);
        }
      }
      // Everything that can interrupt a forward is consumed here, so the flag is re-armed only
      // by what arrives after this point.
      interrupt_.store(false, std::memory_order_relaxed);
      stop = stopping_;
      paused = paused_;
      paused_idle_ = paused;  // this pass does housekeeping only when paused: no step
      cancels.swap(cancels_);
      cancelled_queued.swap(cancelled_queued_);
      trims.swap(trims_);
      if (!paused || stop) warmups.swap(warmups_);
      const Clock::time_point now = Clock::now();
      expired_queued = queue_.remove_if([&](const Live& r) { return stop || r.deadline <= now; });
      for (auto& r : expired_queued) live_[r->id] = Where::kScheduler;
    }

    for (auto& r : cancelled_queued) finish(std::move(r), FinishReason::kCancelled);
    const Clock::time_point now = Clock::now();
    for (auto& r : expired_queued) {
      finish(std::move(r), stop ? FinishReason::kCancelled : FinishReason::kTimeout);
    }
    // Cancellations and deadlines of the requests the scheduler holds.
    auto cancelled = [&](RequestId id) { return std::find(cancels.begin(), cancels.end(), id) != cancels.end(); };
    if (blocked_ && (stop || cancelled(blocked_->id) || blocked_->deadline <= now)) {
      const FinishReason why = stop || cancelled(blocked_->id) ? FinishReason::kCancelled : FinishReason::kTimeout;
      finish(std::move(blocked_), why);
    }
    for (size_t i = running_.size(); i-- > 0;) {
      Live& r = *running_[i];
      if (stop || cancelled(r.id)) {
        finish_running(i, FinishReason::kCancelled);
      } else if (r.deadline <= now) {
        finish_running(i, FinishReason::kTimeout);
      }
    }
    for (auto& done : trims) {
      const size_t bytes = ctx_->trim();
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ++metrics_.trims;
        metrics_.trimmed_bytes += bytes;
      }
      log_message(LogLevel::kInfo, "service: trim released " + std::to_string(bytes >> 10) + " KiB");
      done(bytes);
    }
    if (stop) {
      for (auto& done : warmups) done(false, "the service is shutting down");
      publish_gauges();
      return;
    }
    run_warmups(warmups);
    if (paused) {
      publish_gauges();
      continue;
    }
    admit();
    publish_gauges();
    if (!running_.empty()) step();
  }
}

InferenceService::KvGauges InferenceService::kv_gauges() const {
  KvGauges g;
  const KvCache& kv = ctx_->kv_cache();
  g.used = kv.pool().n_in_use();
  g.cached = kv.pool().n_cached();
  g.evictions = kv.pool().evictions();
  int64_t slots = 0;
  int64_t held = 0;
  for (const auto& r : running_) {
    slots += static_cast<int64_t>(kv.block_table(r->seq).size()) * ctx_params_.kv_block_tokens;
    held += kv.seq_length(r->seq);
  }
  g.fragmentation = slots > 0 ? static_cast<double>(slots - held) / static_cast<double>(slots) : 0.0;
  return g;
}

void InferenceService::publish_gauges() {
  const KvGauges kv = kv_gauges();
  std::lock_guard<std::mutex> lock(mutex_);
  set_gauges_locked(kv);
}

void InferenceService::set_gauges_locked(const KvGauges& kv) {
  held_ = static_cast<int32_t>(running_.size()) + (blocked_ ? 1 : 0);
  blocked_count_ = blocked_ ? 1 : 0;
  kv_ = kv;
}

void InferenceService::run_warmups(std::vector<std::function<void(bool, const std::string&)>>& waiters) {
  if (waiters.empty()) return;
  bool ran = false;
  std::string why;
  const size_t available = available_memory_bytes();
  if (!running_.empty() || blocked_ || free_seqs_.empty()) {
    why = "requests are already running (the model is warm)";
  } else if (available != 0 && available < params_.warmup_min_free_bytes) {
    why = "only " + std::to_string(available >> 20) + " MiB of memory available, below the warm-up threshold of " +
          std::to_string(params_.warmup_min_free_bytes >> 20) + " MiB";
  } else {
    const int32_t seq = free_seqs_.back();
    const int32_t n = std::min<int32_t>(kWarmupTokens, ctx_params_.n_ctx);
    const int32_t token = tokenizer_->bos() >= 0 ? tokenizer_->bos() : 0;
    Batch batch;
    for (int32_t i = 0; i < n; ++i) batch.add(seq, token, i, i + 1 == n);
    step_deadline_ = Clock::time_point::max();
    try {
      ctx_->decode(batch);
      ran = true;
    } catch (const std::exception& e) {
      why = std::string("the warm-up forward failed: ") + e.what();
    }
    ctx_->seq_clear(seq);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    metrics_.warmups += ran ? waiters.size() : 0;
    metrics_.warmups_skipped += ran ? 0 : waiters.size();
  }
  log_message(ran ? LogLevel::kInfo : LogLevel::kWarn, ran ? "service: warm-up done" : "service: warm-up skipped: " + why);
  for (auto& done : waiters) done(ran, why);
}

}  // namespace edgellm
