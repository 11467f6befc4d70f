// InferenceService::step(): one step of the scheduler (inference_service.h's overview): the
// batch assembly (decode tokens, speculative drafts, prompt chunks within the step's budget), the
// forward pass, and sampling each sequence's rows (a speculating sequence's rows in order while
// its drafts are what the sampler picks, sequence_speculation.h), streaming to the callbacks.
#include <algorithm>
#include <exception>
#include <string>
#include <vector>

#include "core/log.h"
#include "engine/batch.h"
#include "service/inference_service.h"
#include "service/live_request.h"

namespace edgellm {

bool InferenceService::deliver(Live& r, const StepOutput& out) {
  bool keep_going = true;
  try {
    const double decode_ms = r.gen ? r.gen->result().timings.decode_seconds * 1e3 : 0.0;
    if (out.token >= 0 && r.req.on_token) {
      const TokenEvent ev{r.id, out.token, out.text, r.events++, out.probability, decode_ms};
      keep_going = r.req.on_token(ev);
    }
    if (!out.tail.empty() && r.req.on_token) {
      const TokenEvent ev{r.id, -1, out.tail, r.events++, -1.0f, decode_ms};
      (void)r.req.on_token(ev);
    }
  } catch (const std::exception& e) {
    log_message(LogLevel::kError, std::string("service: a token callback threw: ") + e.what());
    keep_going = false;
  } catch (...) {
    log_message(LogLevel::kError, "service: a token callback threw");
    keep_going = false;
  }
  return keep_going;
}

void InferenceService::step() {
  // Batch: every decoding sequence's next token (and a speculating sequence's drafts right after
  // it), then prompt chunks up to the step's token budget.
  struct Part {
    Live* r;
    int32_t prefill;  // prompt tokens in this batch (0: a decode entry)
    bool logits;
    int32_t drafts = 0;  // a decode entry's drafts (entries after it, each with logits)
    int32_t base = 0;    // a decode entry's position
  };
  std::vector<Part> parts;
  Batch batch;
  Clock::time_point deadline = Clock::time_point::max();
  for (size_t i = running_.size(); i-- > 0;) {
    // A full sequence with context_shift drops the older half of its window first. Its blocks
    // never exceed the n_ctx positions its admission reserved (copies of shared blocks replace
    // references to them), so a shift fails only on an internal error; that request ends.
    Live& r = *running_[i];
    if (!r.gen->prefill_done() || !r.gen->needs_shift()) continue;
    const ShiftPlan plan = r.gen->shift_plan();
    try {
      ctx_->seq_shift(r.seq, plan.n_keep, plan.n_discard);
      r.gen->shifted(plan);
    } catch (const Error& e) {
      log_message(LogLevel::kError, std::string("service: context shift failed: ") + e.what());
      finish_running(i, FinishReason::kError, e.code(), e.what());
    }
  }
  // Speculation's batch-size back-off: drafts join only a step without prompt chunks, and only
  // while the step's decode entries stay within spec_max_batch_tokens. A step that prefills is
  // already wide (and its chunks' attention runs by query blocks, while a verify batch must keep
  // the decode arithmetic: Batch::set_stepwise); past spec_max_batch_tokens entries a forward's
  // time grows with its width (docs/speculative-decoding.md "In the service", measured), so a
  // draft there costs what it saves. Drafts are what plain decoding would not need, so they also
  // take only KV blocks that are free now (each sequence's drafts stay inside its reservation:
  // draft() stops before max_tokens and n_ctx).
  const auto n_decoding = static_cast<int32_t>(
      std::count_if(running_.begin(), running_.end(), [](const auto& rp) { return rp->gen->prefill_done(); }));
  const bool prefills = n_decoding < static_cast<int32_t>(running_.size());
  int32_t spec_room = prefills ? 0 : params_.spec_max_batch_tokens - n_decoding;
  int32_t blocks_free = ctx_->kv_blocks_free();
  bool any_drafts = false;
  for (auto& rp : running_) {
    Live& r = *rp;
    if (!r.gen->prefill_done()) continue;
    Part part{&r, 0, true, 0, r.gen->next_pos()};
    batch.add(r.seq, r.gen->next_token(), part.base, true);
    if (r.spec) {
      part.drafts =
          r.spec->draft(*r.gen, *ctx_, r.seq, r.req.generation.max_tokens, std::max(0, spec_room), blocks_free);
      for (int32_t i = 0; i < part.drafts; ++i)
        batch.add(r.seq, r.spec->drafts()[static_cast<size_t>(i)], part.base + 1 + i, true);
      spec_room -= part.drafts;
      any_drafts = any_drafts || part.drafts > 0;
    }
    blocks_free -= ctx_->kv_blocks_needed(r.seq, 1 + part.drafts);
    parts.push_back(part);
    deadline = std::min(deadline, r.deadline);
  }
  // A verify forward's rows must equal one-token decodes bit for bit (greedy output identical to
  // plain decoding): attention entry by entry, as a batch of single decode tokens runs anyway.
  batch.set_stepwise(any_drafts);
  // Prompts in order of (priority, tokens left): a short prompt that arrives while a long one is
  // being prefilled is prefilled in the next step, not after the long one (shortest remaining
  // first minimises the mean time to first token); the long one takes the rest of the budget.
  std::vector<Live*> prefilling;
  for (auto& rp : running_) {
    if (!rp->gen->prefill_done()) prefilling.push_back(rp.get());
  }
  std::stable_sort(prefilling.begin(), prefilling.end(), [](const Live* a, const Live* b) {
    if (a->req.priority != b->req.priority) return a->req.priority < b->req.priority;
    return a->gen->prompt_remaining() < b->gen->prompt_remaining();
  });
  int32_t budget = params_.step_tokens - static_cast<int32_t>(batch.size());
  for (Live* rp : prefilling) {
    Live& r = *rp;
    if (budget <= 0) break;
    const int32_t n = std::min(budget, r.gen->prompt_remaining());
    const bool completes = n == r.gen->prompt_remaining();
    for (int32_t i = 0; i < n; ++i) {
      batch.add(r.seq, r.gen->pending_prompt()[i], r.gen->prefill_pos() + i, completes && i + 1 == n);
    }
    parts.push_back({&r, n, completes});
    budget -= n;
    deadline = std::min(deadline, r.deadline);
  }
  if (batch.empty()) return;

  step_deadline_ = deadline;
  const Clock::time_point t0 = Clock::now();
  try {
    ctx_->decode(batch);
  } catch (const Error& e) {
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (e.code() == ErrorCode::kCancelled) {  // abandoned between layers: housekeeping decides
      std::lock_guard<std::mutex> lock(mutex_);
      ++metrics_.aborted_steps;
      metrics_.forward_seconds += seconds;
      return;
    }
    log_message(LogLevel::kError, std::string("service: forward pass failed: ") + e.what());
    for (size_t i = running_.size(); i-- > 0;) {
      const Live* r = running_[i].get();
      if (std::any_of(parts.begin(), parts.end(), [&](const Part& p) { return p.r == r; })) {
        finish_running(i, FinishReason::kError, e.code(), e.what());
      }
    }
    return;
  } catch (const std::exception& e) {
    log_message(LogLevel::kError, std::string("service: forward pass failed: ") + e.what());
    for (size_t i = running_.size(); i-- > 0;) finish_running(i, FinishReason::kError, ErrorCode::kInternal, e.what());
    return;
  }
  const auto decoded =
      static_cast<int32_t>(std::count_if(parts.begin(), parts.end(), [](const Part& p) { return p.prefill == 0; }));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++metrics_.steps;
    metrics_.step_tokens += batch.size();
    metrics_.max_decode_batch = std::max(metrics_.max_decode_batch, decoded);
    metrics_.forward_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
  }

  int32_t out_row = 0;
  for (const Part& part : parts) {
    Live& r = *part.r;
    if (part.prefill > 0) r.gen->prefill_advanced(part.prefill);
    if (!part.logits) continue;
    const int32_t first_row = out_row;
    out_row += 1 + part.drafts;
    if (r.gen->finished()) continue;  // max_tokens 0: prefill only
    if (r.first_token == Clock::time_point{}) r.first_token = Clock::now();
    const bool decode = part.prefill == 0;
    if (decode) r.spec_stats.forwards++;
    // Row by row while the drafts are what the sampler picks: row i + 1's logits are valid
    // exactly when draft i is the token sampled from row i (the forward then saw the tokens plain
    // decoding would have fed it); every row goes through the same step() as plain decoding.
    int32_t row = 0;
    for (;; ++row) {
      StepOutput out;
      try {
        out = r.gen->step(ctx_->logits(first_row + row));
      } catch (const Error& e) {
        // This request alone ends (e.g. its grammar allows no token of the vocabulary here).
        r.error_code = e.code();
        r.error_message = e.what();
        out = r.gen->finish(FinishReason::kError, e.what());
      }
      if (decode) r.spec_stats.forward_tokens++;
      if (r.spec && out.token >= 0) r.spec->append({&out.token, 1});
      if (!deliver(r, out) && !r.gen->finished()) r.gen->finish(FinishReason::kCancelled);
      if (r.gen->finished() || !r.spec || !r.spec->keeps(row, r.gen->next_token())) break;
    }
    if (decode && r.spec) r.spec->verified(*ctx_, r.seq, part.base, row, r.spec_stats);
  }
  for (size_t i = running_.size(); i-- > 0;) {
    Live& r = *running_[i];
    if (r.gen->finished()) finish_running(i, r.gen->result().finish_reason, r.error_code, r.error_message);
  }
}

}  // namespace edgellm
