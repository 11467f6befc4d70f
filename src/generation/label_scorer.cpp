#include "generation/label_scorer.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "engine/batch.h"
#include "engine/context.h"
#include "model/model.h"

namespace edgellm {

namespace {

// log sum_v exp(row[v]), in double: a 151k-token row summed in float loses ~1e-3 of a nat.
double log_sum_exp(const float* row, int32_t n) {
  float max = row[0];
  for (int32_t v = 1; v < n; ++v) max = std::max(max, row[v]);
  double sum = 0;
  for (int32_t v = 0; v < n; ++v) sum += std::exp(static_cast<double>(row[v]) - max);
  return static_cast<double>(max) + std::log(sum);
}

// Clears sequences [0, n) on scope exit, whatever happened in between.
struct SequencesCleared {
  Context& ctx;
  int32_t n;
  ~SequencesCleared() {
    for (int32_t s = 0; s < n; ++s) ctx.seq_clear(s);
  }
};

}  // namespace

int32_t label_scoring_blocks(int32_t block_tokens, int32_t n_prompt, const std::vector<std::vector<int32_t>>& labels) {
  const int64_t bt = std::max(block_tokens, 1);
  int64_t blocks = (n_prompt + bt - 1) / bt;
  for (const std::vector<int32_t>& label : labels) {
    // Positions [n_prompt, n_prompt + n - 1) are written; the first may land in the prompt's
    // shared partial block (copied on write): count from that block's start.
    const int64_t first = n_prompt / bt;
    const int64_t end = n_prompt + std::max<int64_t>(static_cast<int64_t>(label.size()) - 1, 0);
    if (end > n_prompt) blocks += (end + bt - 1) / bt - first;
  }
  return static_cast<int32_t>(std::min<int64_t>(blocks, INT32_MAX));
}

std::vector<LabelScore> score_labels(Context& ctx, const std::vector<int32_t>& prompt,
                                     const std::vector<std::vector<int32_t>>& labels) {
  require(!prompt.empty(), ErrorCode::kInvalidArgument, "score_labels: the prompt is empty");
  require(!labels.empty(), ErrorCode::kInvalidArgument, "score_labels: no label");
  const auto n_labels = static_cast<int32_t>(labels.size());
  require(ctx.params().n_seq_max >= n_labels + 1, ErrorCode::kInvalidArgument, [&] {
    return "score_labels: " + std::to_string(n_labels) + " labels need n_seq_max >= " + std::to_string(n_labels + 1) +
           ", the context has " + std::to_string(ctx.params().n_seq_max);
  });
  for (size_t i = 0; i < labels.size(); ++i) {
    require(!labels[i].empty(), ErrorCode::kInvalidArgument,
            [&] { return "score_labels: label " + std::to_string(i) + " has no token"; });
  }
  const int32_t n_vocab = ctx.model().hparams().n_vocab;
  const auto n_prompt = static_cast<int32_t>(prompt.size());

  for (int32_t s = 0; s <= n_labels; ++s) ctx.seq_clear(s);
  SequencesCleared cleared{ctx, n_labels + 1};

  // The prompt once; its last row predicts every label's first token.
  Batch batch;
  batch.add_sequence(0, prompt, 0, /*logits_last=*/true);
  ctx.decode(batch);
  std::vector<LabelScore> scores(labels.size());
  {
    const float* row = ctx.logits(0);
    const double lse = log_sum_exp(row, n_vocab);
    for (size_t i = 0; i < labels.size(); ++i) {
      scores[i].n_tokens = static_cast<int32_t>(labels[i].size());
      scores[i].logprob = static_cast<double>(row[labels[i][0]]) - lse;
    }
  }

  // Every label's tokens but its last, each in its own fork of the prompt, in one batch.
  batch.clear();
  for (int32_t i = 0; i < n_labels; ++i) {
    const std::vector<int32_t>& label = labels[static_cast<size_t>(i)];
    if (label.size() < 2) continue;
    ctx.seq_fork(0, i + 1);
    for (size_t j = 0; j + 1 < label.size(); ++j) {
      batch.add(i + 1, label[j], n_prompt + static_cast<int32_t>(j), /*want_logits=*/true);
    }
  }
  if (batch.empty()) return scores;
  ctx.decode(batch);
  int32_t out = 0;  // logit rows come in batch order
  for (const std::vector<int32_t>& label : labels) {
    if (label.size() < 2) continue;
    LabelScore& score = scores[static_cast<size_t>(&label - labels.data())];
    for (size_t j = 1; j < label.size(); ++j) {
      const float* row = ctx.logits(out++);
      score.logprob += static_cast<double>(row[label[j]]) - log_sum_exp(row, n_vocab);
    }
  }
  return scores;
}

}  // namespace edgellm
