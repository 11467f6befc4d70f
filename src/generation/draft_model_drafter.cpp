#include "generation/draft_model_drafter.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "engine/batch.h"
#include "engine/memory_plan.h"
#include "model/model.h"

namespace edgellm {

void check_same_vocabulary(const Model& draft, const Model& target) {
  const int32_t nd = draft.hparams().n_vocab;
  const int32_t nt = target.hparams().n_vocab;
  require(nd == nt, ErrorCode::kInvalidArgument, [&] {
    return "draft model: its vocabulary has " + std::to_string(nd) + " tokens, the target model's " +
           std::to_string(nt) + " (the draft model must use the same tokenizer)";
  });
  const auto dt = draft.gguf().get_string_array("tokenizer.ggml.tokens");
  const auto tt = target.gguf().get_string_array("tokenizer.ggml.tokens");
  require(dt.has_value() && tt.has_value(), ErrorCode::kInvalidArgument,
          std::string("draft model: ") + (dt ? "the target model" : "the draft model") +
              " has no token list (tokenizer.ggml.tokens) to check that the vocabularies match");
  require(dt->size() == tt->size(), ErrorCode::kInvalidArgument, [&] {
    return "draft model: its token list has " + std::to_string(dt->size()) + " tokens, the target model's " +
           std::to_string(tt->size()) + " (the draft model must use the same tokenizer)";
  });
  for (size_t i = 0; i < dt->size(); ++i) {
    require((*dt)[i] == (*tt)[i], ErrorCode::kInvalidArgument, [&] {
      return "draft model: token " + std::to_string(i) + " is '" + std::string((*dt)[i]) + "', the target model's '" +
             std::string((*tt)[i]) + "' (the draft model must use the same tokenizer)";
    });
  }
}

namespace {

// Argmax of one logit row; the lowest id on ties (as the greedy sampler picks).
int32_t greedy_draft(const float* logits, int32_t n) {
  int32_t best = 0;
  for (int32_t i = 1; i < n; ++i) {
    if (logits[i] > logits[best]) best = i;
  }
  return best;
}

}  // namespace

DraftModelDrafter::DraftModelDrafter(const Model& draft, const Context& target) {
  check_same_vocabulary(draft, target.model());
  ctx_ = std::make_unique<Context>(draft, draft_context_params(target.params()));  // engine/memory_plan.h
}

void DraftModelDrafter::append(std::span<const int32_t> tokens) {
  seq_.insert(seq_.end(), tokens.begin(), tokens.end());
}

void DraftModelDrafter::catch_up() {
  // Keep the longest common prefix of what the context holds and the sequence, but always
  // decode at least the last token (its logits are the first draft's).
  size_t keep = 0;
  const size_t limit = std::min(cached_.size(), seq_.size() - 1);
  while (keep < limit && cached_[keep] == seq_[keep]) ++keep;
  if (keep < cached_.size()) {
    ctx_->seq_truncate(0, static_cast<int32_t>(keep));
    cached_.resize(keep);
  }
  Batch batch;
  for (size_t i = keep; i < seq_.size(); ++i) {
    batch.add(0, seq_[i], static_cast<int32_t>(i), i + 1 == seq_.size());
  }
  ctx_->decode(batch);
  forwards_++;
  cached_.insert(cached_.end(), seq_.begin() + static_cast<std::ptrdiff_t>(keep), seq_.end());
}

int32_t DraftModelDrafter::draft(int32_t max, int32_t* out) {
  if (seq_.empty() || max <= 0) return 0;
  const int32_t n_ctx = ctx_->params().n_ctx;
  // Room for the sequence and max - 1 decoded drafts; past that keep the newer half (the
  // target's context shift does the same to its own sequence).
  if (static_cast<int64_t>(seq_.size()) + max > n_ctx) {
    const size_t keep = static_cast<size_t>(n_ctx / 2);
    if (seq_.size() > keep) seq_.erase(seq_.begin(), seq_.end() - static_cast<std::ptrdiff_t>(keep));
    ctx_->seq_clear(0);
    cached_.clear();
    max = std::min<int64_t>(max, n_ctx - static_cast<int64_t>(seq_.size()));
    if (max <= 0) return 0;
  }
  const int32_t n_vocab = ctx_->model().hparams().n_vocab;
  int32_t n = 0;
  try {
    catch_up();
    for (;;) {
      out[n] = greedy_draft(ctx_->logits(0), n_vocab);
      if (++n == max) break;
      Batch batch;
      batch.add(0, out[n - 1], static_cast<int32_t>(cached_.size()), true);
      ctx_->decode(batch);
      forwards_++;
      cached_.push_back(out[n - 1]);
    }
  } catch (const Error&) {
    // A draft forward failed (its KV ran out, say): no further guess this time, and nothing
    // assumed about what the context holds.
    ctx_->seq_clear(0);
    cached_.clear();
  }
  return n;
}

}  // namespace edgellm
