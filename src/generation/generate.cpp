#include "generation/generate.h"

#include <algorithm>
#include <exception>

#include "core/error.h"
#include "engine/batch.h"
#include "engine/context.h"
#include "generation/sequence_generator.h"
#include "model/model.h"

namespace edgellm {

namespace {

bool cancel_requested(const GenerationCallbacks& cb) {
  return cb.cancel != nullptr && cb.cancel->load(std::memory_order_relaxed);
}

// Streams one step's output; returns false when the caller asked to cancel.
bool deliver(const StepOutput& out, const GenerationCallbacks& cb) {
  if (!cb.on_token) return true;
  if (out.token >= 0 && !cb.on_token(out.token, out.text) && !out.finished) return false;
  if (!out.tail.empty()) (void)cb.on_token(-1, out.tail);
  return true;
}

}  // namespace

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kTimeout: return "timeout";
    case FinishReason::kError: return "error";
  }
  return "error";
}

GenerationResult generate(Context& ctx, Sampler& sampler, const Tokenizer* tokenizer,
                          const std::vector<int32_t>& prompt, const GenerationParams& params,
                          const GenerationCallbacks& callbacks) {
  const int32_t seq = params.seq_id;
  SequenceGenerator gen(sampler, tokenizer, ctx.model().hparams().n_vocab, ctx.params().n_ctx,
                        ctx.seq_length(seq), prompt, params);
  const int32_t n_vocab = ctx.model().hparams().n_vocab;
  try {
    // Prefill, chunked here as well (Context::decode would split the same way) so that a
    // cancellation is noticed between chunks of a long prompt.
    const int32_t n_batch = std::max<int32_t>(1, ctx.params().n_batch);
    Batch batch;
    while (!gen.prefill_done()) {
      if (cancel_requested(callbacks)) {
        gen.finish(FinishReason::kCancelled);
        return gen.take_result();
      }
      const int32_t n = std::min(n_batch, gen.prompt_remaining());
      batch.clear();
      for (int32_t i = 0; i < n; ++i) {
        batch.add(seq, gen.pending_prompt()[i], gen.prefill_pos() + i, i + 1 == gen.prompt_remaining());
      }
      ctx.decode(batch);
      gen.prefill_advanced(n);
    }
    if (gen.finished()) return gen.take_result();  // max_tokens == 0

    for (;;) {
      const float* logits = ctx.logits(0);
      if (callbacks.on_logits) callbacks.on_logits(logits, n_vocab);
      const StepOutput out = gen.step(logits);
      if (!deliver(out, callbacks)) {
        gen.finish(FinishReason::kCancelled);
        break;
      }
      if (out.finished) break;
      if (cancel_requested(callbacks)) {
        gen.finish(FinishReason::kCancelled);
        break;
      }
      if (gen.needs_shift()) {
        const ShiftPlan plan = gen.shift_plan();
        ctx.seq_shift(seq, plan.n_keep, plan.n_discard);
        gen.shifted(plan);
      }
      batch.clear();
      batch.add(seq, gen.next_token(), gen.next_pos(), true);
      try {
        ctx.decode(batch);
      } catch (const Error& e) {
        if (e.code() != ErrorCode::kContextFull) throw;
        deliver(gen.finish(FinishReason::kLength), callbacks);  // KV blocks ran out before n_ctx
        break;
      }
    }
  } catch (const Error& e) {
    gen.finish(e.code() == ErrorCode::kCancelled ? FinishReason::kCancelled : FinishReason::kError, e.what());
    GenerationResult r = gen.take_result();
    r.error = e.what();
    return r;
  } catch (const std::exception& e) {
    gen.finish(FinishReason::kError, e.what());
  }
  return gen.take_result();
}

}  // namespace edgellm
