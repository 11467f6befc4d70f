// Scores fixed continuations ("labels") of one prompt by the model's log-probability, sharing the
// prompt's KV: the prompt is prefilled once in sequence 0, each label's sequence forks it
// (copy-on-write blocks, kv/kv_cache.h), and one batched forward runs every label's tokens.
//
//   log P(label | prompt) = sum_j log softmax(logits after prompt + label[0..j))[label[j]]
//
// Label token j is predicted by the logits of the entry before it: the prompt's last token for
// j = 0, label token j - 1 after that. So a label's last token is never run through the model
// (nothing is predicted from it) and a one-token label costs no forward beyond the prompt.
// Shapes: prompt P tokens, L labels of n_i tokens: forwards = 1 (P entries, 1 logit row) + 1
// (sum(n_i - 1) entries, as many logit rows, split into n_batch chunks by Context::decode).
#pragma once

#include <cstdint>
#include <vector>

namespace edgellm {

class Context;

struct LabelScore {
  double logprob = 0;    // sum over the label's tokens of log P(token | everything before it)
  int32_t n_tokens = 0;  // the label's tokens (length normalisation divides by this)
};

// KV blocks score_labels takes in a pool of `block_tokens`-token blocks: the prompt's blocks
// (shared) plus, per label, the copy of the prompt's partial last block and its own tokens.
int32_t label_scoring_blocks(int32_t block_tokens, int32_t n_prompt, const std::vector<std::vector<int32_t>>& labels);

// Peak KV blocks score_labels_in takes when the labels are scored `per_forward` at a time (each
// chunk's forks are cleared before the next): the prompt's blocks plus the largest chunk's.
int32_t label_scoring_peak_blocks(int32_t block_tokens, int32_t n_prompt,
                                  const std::vector<std::vector<int32_t>>& labels, int32_t per_forward);

// Scores every label after `prompt` on `ctx` (sequences 0 .. labels.size(): n_seq_max must be at
// least labels.size() + 1; they are cleared before and after). Throws Error(kInvalidArgument)
// for an empty prompt or label or too few sequences, what Context::decode throws (kContextFull
// when prompt + a label exceeds n_ctx or the pool, kCancelled from the abort check); the
// sequences are cleared on every path. The calling thread runs the forwards (Context's rules).
std::vector<LabelScore> score_labels(Context& ctx, const std::vector<int32_t>& prompt,
                                     const std::vector<std::vector<int32_t>>& labels);

// The same on given sequences, the service's way (service/inference_classify.cpp): `prompt_seq`
// already holds prompt[0, n_held) (e.g. mapped from the prefix cache, n_held < prompt.size())
// and is prefilled from there; labels are scored label_seqs.size() at a time, each in a fork of
// prompt_seq, one batched forward per chunk (the forks are cleared after each chunk and on every
// path). prompt_seq is left holding the whole prompt (the caller clears it, its full blocks
// stay in the prefix cache). Same errors as score_labels; the same logits for the same rows.
std::vector<LabelScore> score_labels_in(Context& ctx, int32_t prompt_seq, const std::vector<int32_t>& label_seqs,
                                        const std::vector<int32_t>& prompt, int32_t n_held,
                                        const std::vector<std::vector<int32_t>>& labels);

}  // namespace edgellm
