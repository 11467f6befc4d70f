#include "generation/generate.h"

#include <algorithm>
#include <array>
#include <exception>
#include <memory>
#include <string>

#include "core/error.h"
#include "engine/batch.h"
#include "engine/context.h"
#include "generation/draft_model_drafter.h"
#include "generation/draft_schedule.h"
#include "generation/ngram_drafter.h"
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

// Drafts worth verifying in the next forward after the token at `pos`: at most `want`, and
// no more than can be used: positions left in n_ctx, tokens left to max_tokens (a verify forward
// samples up to drafts + 1), one chunk (n_batch) and the KV blocks free now (a draft must never
// make the step fail where plain decoding would not).
int32_t draft_room(const Context& ctx, const SequenceGenerator& gen, const GenerationParams& params, int32_t pos,
                   int32_t want) {
  int32_t k = want;
  k = std::min(k, ctx.params().n_ctx - 1 - pos);
  k = std::min(k, std::max<int32_t>(1, ctx.params().n_batch) - 1);
  if (params.max_tokens > 0) {
    k = std::min<int64_t>(k, static_cast<int64_t>(params.max_tokens) - static_cast<int64_t>(gen.result().tokens.size()) - 1);
  }
  while (k > 0 && ctx.kv_blocks_needed(params.seq_id, k + 1) > ctx.kv_blocks_free()) --k;
  return std::max(k, 0);
}

}  // namespace

std::unique_ptr<Drafter> make_drafter(const SpeculationParams& sp, const Context& ctx) {
  if (sp.mode == SpeculationMode::kOff) return nullptr;
  if (sp.mode == SpeculationMode::kDraft) {
    require(sp.draft_model != nullptr, ErrorCode::kInvalidArgument,
            "generate: speculation mode 'draft' needs a draft model (SpeculationParams::draft_model)");
    return std::make_unique<DraftModelDrafter>(*sp.draft_model, ctx);
  }
  NgramDrafterParams np;
  np.ngram_min = sp.ngram_min;
  np.ngram_max = sp.ngram_max;
  np.max_history = sp.ngram_history;
  return std::make_unique<NgramDrafter>(np);
}

const char* speculation_mode_name(SpeculationMode mode) {
  switch (mode) {
    case SpeculationMode::kOff: return "off";
    case SpeculationMode::kNgram: return "ngram";
    case SpeculationMode::kDraft: return "draft";
  }
  return "off";
}

SpeculationMode speculation_mode_from_name(const std::string& name) {
  for (SpeculationMode m : {SpeculationMode::kOff, SpeculationMode::kNgram, SpeculationMode::kDraft}) {
    if (name == speculation_mode_name(m)) return m;
  }
  throw Error(ErrorCode::kInvalidArgument, "unknown speculation mode '" + name + "' (expected off, ngram or draft)");
}

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
  const SpeculationParams& sp = params.speculation;
  std::unique_ptr<Drafter> own_drafter;
  Drafter* drafter = callbacks.drafter;
  if (drafter != nullptr || sp.mode != SpeculationMode::kOff) {
    require(sp.draft_max >= 1 && sp.draft_max <= SpeculationParams::kMaxDraft, ErrorCode::kInvalidArgument,
            [&] {
              return "generate: speculation draft_max " + std::to_string(sp.draft_max) + " outside [1, " +
                     std::to_string(SpeculationParams::kMaxDraft) + "]";
            });
    require(sp.draft_min >= 0 && sp.draft_min <= sp.draft_max, ErrorCode::kInvalidArgument, [&] {
      return "generate: speculation draft_min " + std::to_string(sp.draft_min) + " outside [0, draft_max]";
    });
    if (drafter == nullptr) {
      own_drafter = make_drafter(sp, ctx);
      drafter = own_drafter.get();
    }
  }
  SequenceGenerator gen(sampler, tokenizer, ctx.model().hparams().n_vocab, ctx.params().n_ctx,
                        ctx.seq_length(seq), prompt, params);
  const int32_t n_vocab = ctx.model().hparams().n_vocab;
  SpeculationStats stats;
  const auto finish_with_stats = [&] {
    GenerationResult r = gen.take_result();
    r.speculation = stats;
    return r;
  };
  try {
    // Prefill, chunked here as well (Context::decode would split the same way) so that a
    // cancellation is noticed between chunks of a long prompt.
    const int32_t n_batch = std::max<int32_t>(1, ctx.params().n_batch);
    Batch batch;
    while (!gen.prefill_done()) {
      if (cancel_requested(callbacks)) {
        gen.finish(FinishReason::kCancelled);
        return finish_with_stats();
      }
      const int32_t n = std::min(n_batch, gen.prompt_remaining());
      batch.clear();
      for (int32_t i = 0; i < n; ++i) {
        batch.add(seq, gen.pending_prompt()[i], gen.prefill_pos() + i, i + 1 == gen.prompt_remaining());
      }
      ctx.decode(batch);
      gen.prefill_advanced(n);
    }
    if (gen.finished()) return finish_with_stats();  // max_tokens == 0
    if (drafter != nullptr) drafter->append(gen.prompt());

    // The last forward's logit rows: row i follows the forward's i-th entry. A verify forward's
    // entries are the token sampled last (at position `base`) and its n_draft drafts.
    std::array<int32_t, SpeculationParams::kMaxDraft> draft{};
    DraftSchedule schedule(sp.draft_max);
    int32_t n_draft = 0;
    int32_t base = 0;
    bool decode_phase = false;  // the logits come from a decode-phase forward (not the prefill)
    for (;;) {
      // Sample row by row while the drafts are what the sampler picks: row i + 1's logits are
      // valid exactly when draft[i] is the token sampled from row i (the forward then ran on the
      // same tokens plain decoding would have fed it).
      int32_t row = 0;
      bool done = false;
      for (;; ++row) {
        const float* logits = ctx.logits(row);
        if (callbacks.on_logits) callbacks.on_logits(logits, n_vocab);
        const StepOutput out = gen.step(logits);
        if (decode_phase) stats.forward_tokens++;
        if (drafter != nullptr && out.token >= 0) drafter->append({&out.token, 1});
        if (!deliver(out, callbacks)) {
          gen.finish(FinishReason::kCancelled);
          done = true;
          break;
        }
        if (out.finished) {
          done = true;
          break;
        }
        if (row >= n_draft || gen.next_token() != draft[static_cast<size_t>(row)]) break;
        stats.accepted++;
      }
      // Rows 0..row were used: positions base .. base + row hold the KV of sampled tokens; the
      // rejected drafts' positions after them go (whole blocks back to the pool, a partial last
      // block kept in place: no accepted row is copied).
      if (n_draft > row) ctx.seq_truncate(seq, base + 1 + row);
      if (done) break;
      if (n_draft > 0) schedule.verified(n_draft, row);
      if (cancel_requested(callbacks)) {
        gen.finish(FinishReason::kCancelled);
        break;
      }
      if (gen.needs_shift()) {
        const ShiftPlan plan = gen.shift_plan();
        ctx.seq_shift(seq, plan.n_keep, plan.n_discard);
        gen.shifted(plan);
      }
      base = gen.next_pos();
      n_draft = 0;
      if (drafter != nullptr) {
        const int32_t want = sp.adaptive ? schedule.next() : sp.draft_max;
        const int32_t room = want > 0 ? draft_room(ctx, gen, params, base, want) : 0;
        if (room > 0) n_draft = std::clamp(drafter->draft(room, draft.data()), 0, room);
        if (n_draft < sp.draft_min) n_draft = 0;  // too short to be worth a wider forward
        // A caller's drafter may guess anything: the draft ends before an id outside the vocabulary.
        for (int32_t i = 0; i < n_draft; ++i) {
          if (draft[static_cast<size_t>(i)] < 0 || draft[static_cast<size_t>(i)] >= n_vocab) n_draft = i;
        }
      }
      batch.clear();
      batch.add(seq, gen.next_token(), base, true);
      for (int32_t i = 0; i < n_draft; ++i) batch.add(seq, draft[static_cast<size_t>(i)], base + 1 + i, true);
      batch.set_stepwise(n_draft > 0);
      try {
        ctx.decode(batch);
      } catch (const Error& e) {
        if (e.code() != ErrorCode::kContextFull) throw;
        deliver(gen.finish(FinishReason::kLength), callbacks);  // KV blocks ran out before n_ctx
        break;
      }
      decode_phase = true;
      stats.forwards++;
      if (n_draft > 0) {
        stats.verify_forwards++;
        stats.drafted += n_draft;
      }
    }
  } catch (const Error& e) {
    gen.finish(e.code() == ErrorCode::kCancelled ? FinishReason::kCancelled : FinishReason::kError, e.what());
    GenerationResult r = finish_with_stats();
    r.error = e.what();
    return r;
  } catch (const std::exception& e) {
    gen.finish(FinishReason::kError, e.what());
  }
  return finish_with_stats();
}

}  // namespace edgellm
