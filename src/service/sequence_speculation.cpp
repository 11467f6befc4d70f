#include "service/sequence_speculation.h"

#include <algorithm>
#include <exception>
#include <string>

#include "core/error.h"
#include "engine/context.h"
#include "generation/sequence_generator.h"
#include "service/request.h"

namespace edgellm {

namespace {

NgramDrafterParams ngram_params(const SpeculationParams& sp) {
  NgramDrafterParams np;
  np.ngram_min = sp.ngram_min;
  np.ngram_max = sp.ngram_max;
  np.max_history = sp.ngram_history;
  return np;
}

}  // namespace

std::string check_speculation(const ServiceRequest& r, bool has_draft_model) {
  const SpeculationParams& sp = r.generation.speculation;
  if (sp.mode == SpeculationMode::kOff) return {};
  require(sp.mode != SpeculationMode::kDraft || has_draft_model, ErrorCode::kInvalidArgument,
          "request: speculation mode 'draft' needs a draft model and this runtime was opened without one (edgellm "
          "serve -md FILE, edgellm_runtime_params.draft_model, NAPI draftModel); use 'ngram' or 'off'");
  require(sp.draft_max >= 1 && sp.draft_max <= SpeculationParams::kMaxDraft, ErrorCode::kInvalidArgument, [&] {
    return "request: speculation draft_max " + std::to_string(sp.draft_max) + " is outside [1, " +
           std::to_string(SpeculationParams::kMaxDraft) + "]";
  });
  require(sp.draft_min >= 0 && sp.draft_min <= sp.draft_max, ErrorCode::kInvalidArgument, [&] {
    return "request: speculation draft_min " + std::to_string(sp.draft_min) + " is outside [0, draft_max " +
           std::to_string(sp.draft_max) + "]";
  });
  if (sp.mode == SpeculationMode::kNgram) {
    NgramDrafter check(ngram_params(sp));  // throws kInvalidArgument naming the n-gram field
  }
  // Drafts under a grammar would be exact too (the sampler applies the grammar to every row), but
  // a grammar's output is mostly forced structure the prompt does not quote: the wider forwards
  // would buy nothing. Off, and the request is told why.
  if (r.generation.grammar != nullptr || !r.grammar_gbnf.empty() || !r.json_schema.empty() || r.json_object) {
    return "a grammar constrains the output (grammar, json_schema or json_object)";
  }
  if (!r.tools.is_null()) return "tools are active (tool calls are parsed from the output)";
  return {};
}

SequenceSpeculation::SequenceSpeculation(const SpeculationParams& params, DraftModelDrafter* draft_model)
    : params_(params), schedule_(params.draft_max) {
  if (params.mode == SpeculationMode::kDraft) {
    require(draft_model != nullptr, ErrorCode::kInternal, "speculation: mode draft without the slot's drafter");
    draft_model->restart();  // its KV keeps what this request shares with the slot's last one
    drafter_ = draft_model;
  } else {
    ngram_.emplace(ngram_params(params));
    drafter_ = &*ngram_;
  }
}

int32_t SequenceSpeculation::draft(const SequenceGenerator& gen, const Context& ctx, int32_t seq, int32_t max_tokens,
                                   int32_t cap, int32_t blocks_free) {
  n_draft_ = 0;
  if (cap <= 0) return 0;
  const int32_t want = params_.adaptive ? schedule_.next() : params_.draft_max;
  const int32_t pos = gen.next_pos();
  int32_t k = std::min(want, cap);
  k = std::min(k, ctx.params().n_ctx - 1 - pos);
  if (max_tokens > 0) {
    k = static_cast<int32_t>(
        std::min<int64_t>(k, static_cast<int64_t>(max_tokens) - static_cast<int64_t>(gen.result().tokens.size()) - 1));
  }
  while (k > 0 && ctx.kv_blocks_needed(seq, k + 1) > blocks_free) --k;
  if (k <= 0) return 0;
  try {
    n_draft_ = std::clamp(drafter_->draft(k, draft_.data()), 0, k);
  } catch (const std::exception&) {
    // A drafter that fails (a draft-model forward out of memory, say) guesses nothing this
    // step: drafts only change the speed, so the request decodes on without them.
    n_draft_ = 0;
  }
  if (n_draft_ < params_.draft_min) n_draft_ = 0;  // too short to be worth a wider forward
  return n_draft_;
}

void SequenceSpeculation::verified(Context& ctx, int32_t seq, int32_t base, int32_t last_row, SpeculationStats& stats) {
  if (n_draft_ == 0) return;
  // Positions base .. base + last_row hold sampled tokens' KV; the rejected drafts' after them go.
  if (n_draft_ > last_row) ctx.seq_truncate(seq, base + 1 + last_row);
  stats.verify_forwards++;
  stats.drafted += n_draft_;
  stats.accepted += last_row;
  schedule_.verified(n_draft_, last_row);
  n_draft_ = 0;
}

}  // namespace edgellm
