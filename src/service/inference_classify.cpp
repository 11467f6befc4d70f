// A classify job on the scheduler thread (classify_job.h, inference_service.h's overview): the
// prompt's prefix mapped from the prefix cache into the first scratch sequence, the rest
// prefilled, the labels scored in forks of it (generation/label_scorer.h: the same math as
// every other classify path), all between two steps; and its end (on_finish, metrics).
#include <exception>
#include <numeric>
#include <string>
#include <vector>

#include "core/log.h"
#include "generation/label_scorer.h"
#include "kv/kv_cache.h"
#include "platform/elapsed_ms.h"
#include "service/inference_service.h"
#include "service/live_request.h"

namespace edgellm {

bool InferenceService::run_classify(std::unique_ptr<Live>& r) {
  ClassifyJob& job = *r->classify;
  const int32_t total = ctx_->kv_blocks_total();
  if (job.peak_blocks > total) {
    finish(std::move(r), FinishReason::kError, ErrorCode::kOutOfMemory,
           "out of KV memory: the classify needs " + std::to_string(job.peak_blocks) +
               " KV blocks (the prompt and its label forks); the whole pool has " + std::to_string(total) +
               " (shorten the text or raise the KV budget)");
    return true;
  }
  // Scratch sequences: the prompt's first, the label forks after it (beyond the requests' ones).
  const int32_t prompt_seq = ctx_params_.n_seq_max;
  std::vector<int32_t> label_seqs(kClassifyLabelSeqs);
  std::iota(label_seqs.begin(), label_seqs.end(), prompt_seq + 1);
  const std::vector<int32_t>& prompt = job.tokens.prompt;
  const auto n_prompt = static_cast<int32_t>(prompt.size());

  // The prefix first (no block allocated: cached blocks get a reference, so the allocations
  // below cannot evict them); then what the job may still allocate must be free or cached now.
  // The job ends before the next step, so the running requests' reservations are untouched.
  // At most whole blocks (the last prompt token is always computed, for the first label's
  // logits): a prefix ending inside a mapped block would hold one block more than cached / T,
  // and the check below would then ask for a block too many (on an idle service: forever).
  const int32_t T = ctx_params_.kv_block_tokens;
  const int32_t cached = ctx_->seq_reuse_prefix(prompt_seq, prompt, (n_prompt - 1) / T * T);
  if (ctx_->kv_blocks_free() < job.peak_blocks - cached / T) {
    ctx_->seq_clear(prompt_seq);  // the mapped blocks go back to the cache
    if (running_.empty()) {
      // Nothing will release blocks: waiting would spin the scheduler with the queue stuck.
      finish(std::move(r), FinishReason::kError, ErrorCode::kOutOfMemory,
             "out of KV memory: the classify needs " + std::to_string(job.peak_blocks) +
                 " KV blocks and only " + std::to_string(ctx_->kv_blocks_free()) +
                 " are free with no request running (shorten the text or raise the KV budget)");
      return true;
    }
    blocked_ = std::move(r);  // waits for running requests to release their blocks
    return false;
  }
  if (r->admitted == Clock::time_point{}) r->admitted = Clock::now();
  r->cached_tokens = cached;
  step_deadline_ = r->deadline;  // the abort check: this job's deadline, cancel, pause, shutdown
  const Clock::time_point t0 = Clock::now();
  std::vector<LabelScore> scores;
  try {
    scores = score_labels_in(*ctx_, prompt_seq, label_seqs, prompt, cached, job.tokens.labels);
  } catch (const Error& e) {
    ctx_->seq_clear(prompt_seq);
    if (e.code() == ErrorCode::kCancelled) {
      // Abandoned between layers: housekeeping ends it (cancel, deadline, shutdown) or it runs
      // again (pause, another request's cancel), its prompt's full blocks cached by then.
      std::lock_guard<std::mutex> lock(mutex_);
      ++metrics_.aborted_steps;
      metrics_.forward_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
      blocked_ = std::move(r);
      return false;
    }
    log_message(LogLevel::kWarn, "service: classify " + std::to_string(r->id) + " failed: " + e.what());
    finish(std::move(r), FinishReason::kError, e.code(), e.what());
    return true;
  } catch (const std::exception& e) {
    ctx_->seq_clear(prompt_seq);
    log_message(LogLevel::kError, "service: classify " + std::to_string(r->id) + " failed: " + e.what());
    finish(std::move(r), FinishReason::kError, ErrorCode::kInternal, e.what());
    return true;
  }
  ctx_->seq_clear(prompt_seq);  // its full blocks stay in the prefix cache
  // The label forward's logit rows (one per label token but the last, up to 8 labels at once)
  // go back: the service's steps need one row per sequence, not a classify's thousands.
  ctx_->release_logits();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    metrics_.forward_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
  }
  job.result = classify_result(scores, job.tokens, job.request);
  job.result.cached_tokens = cached;
  finish(std::move(r), FinishReason::kStop);
  return true;
}

void InferenceService::finish_classify(std::unique_ptr<Live> r, FinishReason reason, ErrorCode code,
                                       const std::string& error) {
  const Clock::time_point now = Clock::now();
  ClassifyJob& job = *r->classify;
  ClassifyOutcome out;
  out.id = r->id;
  if (reason == FinishReason::kStop) {
    out.result = std::move(job.result);
  } else {
    out.result.index = -1;  // nothing chosen
    out.result.cached_tokens = 0;
  }
  out.result.finish_reason = reason;
  out.result.prompt_tokens = static_cast<int32_t>(job.tokens.prompt.size());
  out.result.total_ms = ms_between(r->submitted, now);
  if (reason == FinishReason::kError) {
    out.error_code = code;
    out.error = error.empty() ? std::string("error") : error;
  }
  out.queue_ms = r->admitted != Clock::time_point{} ? ms_between(r->submitted, r->admitted) : out.result.total_ms;
  // Counted with the requests (finish reasons, prompt and cached tokens, queue time).
  RequestResult counted;
  counted.finish_reason = reason;
  counted.stats.prompt_tokens = out.result.prompt_tokens;
  counted.stats.cached_tokens = out.result.cached_tokens;
  counted.stats.queue_ms = out.queue_ms;
  ++finished_requests_;  // its blocks are back: a blocked request may fit now
  const KvGauges kv = kv_gauges();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    live_.erase(r->id);
    metrics_.add_finished(counted);
    set_gauges_locked(kv);
  }
  if (job.on_finish) {
    try {
      job.on_finish(out);
    } catch (const std::exception& e) {
      log_message(LogLevel::kError, std::string("service: a classify callback threw: ") + e.what());
    } catch (...) {
      log_message(LogLevel::kError, "service: a classify callback threw");
    }
  }
}

}  // namespace edgellm
