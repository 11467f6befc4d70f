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

// Clears the given sequences on scope exit, whatever happened in between.
struct SequencesCleared {
  Context& ctx;
  const std::vector<int32_t>& seqs;
  ~SequencesCleared() {
    for (const int32_t s : seqs) ctx.seq_clear(s);
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

int32_t label_scoring_peak_blocks(int32_t block_tokens, int32_t n_prompt,
                                  const std::vector<std::vector<int32_t>>& labels, int32_t per_forward) {
  const int64_t bt = std::max(block_tokens, 1);
  const int64_t prompt_blocks = (n_prompt + bt - 1) / bt;
  const size_t chunk = static_cast<size_t>(std::max(per_forward, 1));
  int64_t peak = prompt_blocks;
  for (size_t first = 0; first < labels.size(); first += chunk) {
    const std::vector<std::vector<int32_t>> part(labels.begin() + static_cast<std::ptrdiff_t>(first),
                                                 labels.begin() + static_cast<std::ptrdiff_t>(std::min(labels.size(), first + chunk)));
    peak = std::max<int64_t>(peak, label_scoring_blocks(block_tokens, n_prompt, part));
  }
  return static_cast<int32_t>(std::min<int64_t>(peak, INT32_MAX));
}

std::vector<LabelScore> score_labels(Context& ctx, const std::vector<int32_t>& prompt,
                                     const std::vector<std::vector<int32_t>>& labels) {
  require(!labels.empty(), ErrorCode::kInvalidArgument, "score_labels: no label");
  const auto n_labels = static_cast<int32_t>(labels.size());
  require(ctx.params().n_seq_max >= n_labels + 1, ErrorCode::kInvalidArgument, [&] {
    return "score_labels: " + std::to_string(n_labels) + " labels need n_seq_max >= " + std::to_string(n_labels + 1) +
           ", the context has " + std::to_string(ctx.params().n_seq_max);
  });
  std::vector<int32_t> label_seqs(labels.size());
  for (int32_t i = 0; i < n_labels; ++i) label_seqs[static_cast<size_t>(i)] = i + 1;
  const std::vector<int32_t> prompt_seq{0};
  for (int32_t s = 0; s <= n_labels; ++s) ctx.seq_clear(s);
  SequencesCleared cleared{ctx, prompt_seq};
  return score_labels_in(ctx, 0, label_seqs, prompt, 0, labels);
}

std::vector<LabelScore> score_labels_in(Context& ctx, int32_t prompt_seq, const std::vector<int32_t>& label_seqs,
                                        const std::vector<int32_t>& prompt, int32_t n_held,
                                        const std::vector<std::vector<int32_t>>& labels) {
  require(!prompt.empty(), ErrorCode::kInvalidArgument, "score_labels: the prompt is empty");
  require(!labels.empty(), ErrorCode::kInvalidArgument, "score_labels: no label");
  require(!label_seqs.empty(), ErrorCode::kInvalidArgument, "score_labels: no sequence for the labels");
  for (size_t i = 0; i < labels.size(); ++i) {
    require(!labels[i].empty(), ErrorCode::kInvalidArgument,
            [&] { return "score_labels: label " + std::to_string(i) + " has no token"; });
  }
  const auto n_prompt = static_cast<int32_t>(prompt.size());
  require(n_held >= 0 && n_held < n_prompt && ctx.seq_length(prompt_seq) == n_held, ErrorCode::kInvalidArgument, [&] {
    return "score_labels: the prompt's sequence holds " + std::to_string(ctx.seq_length(prompt_seq)) +
           " positions, expected " + std::to_string(n_held) + " (fewer than the prompt's " + std::to_string(n_prompt) +
           ")";
  });
  const int32_t n_vocab = ctx.model().hparams().n_vocab;
  SequencesCleared cleared{ctx, label_seqs};

  // The rest of the prompt once; its last row predicts every label's first token.
  Batch batch;
  batch.add_sequence(prompt_seq, std::vector<int32_t>(prompt.begin() + n_held, prompt.end()), n_held,
                     /*logits_last=*/true);
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

  // Every label's tokens but its last, each in its own fork of the prompt, in one batch per
  // chunk of label_seqs.size() labels.
  const size_t per_forward = label_seqs.size();
  for (size_t first = 0; first < labels.size(); first += per_forward) {
    const size_t end = std::min(labels.size(), first + per_forward);
    for (const int32_t s : label_seqs) ctx.seq_clear(s);
    batch.clear();
    for (size_t i = first; i < end; ++i) {
      const std::vector<int32_t>& label = labels[i];
      if (label.size() < 2) continue;
      const int32_t seq = label_seqs[i - first];
      ctx.seq_fork(prompt_seq, seq);
      for (size_t j = 0; j + 1 < label.size(); ++j) {
        batch.add(seq, label[j], n_prompt + static_cast<int32_t>(j), /*want_logits=*/true);
      }
    }
    if (batch.empty()) continue;
    ctx.decode(batch);
    int32_t out = 0;  // logit rows come in batch order
    for (size_t i = first; i < end; ++i) {
      const std::vector<int32_t>& label = labels[i];
      for (size_t j = 1; j < label.size(); ++j) {
        const float* row = ctx.logits(out++);
        scores[i].logprob += static_cast<double>(row[label[j]]) - log_sum_exp(row, n_vocab);
      }
    }
  }
  return scores;
}

}  // namespace edgellm
