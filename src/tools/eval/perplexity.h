// Perplexity exactly as llama.cpp's `perplexity` tool measures it, so numbers are comparable:
//   1. the whole text is tokenized once, with BOS when the vocab adds one (special-token text is
//      not parsed);
//   2. the tokens are cut into n_chunk = n_tokens / n_ctx chunks of n_ctx tokens (the tail that
//      does not fill a chunk is dropped); at least 2 * n_ctx tokens are required;
//   3. each chunk is evaluated from an empty KV cache; when the vocab adds BOS, the chunk's first
//      token is replaced by BOS;
//   4. only the second half is scored: with first = n_ctx / 2, the logits of positions
//      i in [first, n_ctx - 1) predict token i + 1, and nll_i = -log softmax(logits_i)[token_{i+1}];
//   5. PPL = exp(mean nll) and its error is PPL * sqrt((mean(nll^2) - mean(nll)^2) / (N - 1)),
//      the standard error of the mean propagated through exp (llama.cpp's "+/-").
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <functional>
#include <string_view>
#include <vector>

#include "kernels/tensor_type.h"

namespace edgellm {
class Model;
class Tokenizer;
}  // namespace edgellm

namespace edgellm::eval {

struct EvalParams {
  int32_t n_ctx = 512;       // tokens per chunk
  int32_t n_batch = 512;     // max tokens per forward call (a chunk is split when larger)
  int32_t n_threads = 0;     // 0 = the engine default
  TensorType kv_type = TensorType::F16;   // K cache type, and V's unless kv_type_v is set
  std::optional<TensorType> kv_type_v;
  int32_t max_chunks = -1;   // -1 = every chunk the text fills
  const std::atomic<bool>* cancel = nullptr;  // polled between chunks -> Error(kCancelled)
};

// How a token stream is cut into chunks (steps 2-4 above).
struct ChunkPlan {
  int32_t n_ctx = 0;
  int32_t n_chunk = 0;
  int32_t first = 0;          // first scored position of a chunk (n_ctx / 2)
  bool replace_bos = false;   // overwrite each chunk's first token with `bos`
  int32_t bos = -1;
  int32_t scored_per_chunk() const { return n_ctx - 1 - first; }
  int64_t n_scored() const { return static_cast<int64_t>(n_chunk) * scored_per_chunk(); }
};
// Throws Error(kInvalidArgument) when n_ctx < 4 or the text has fewer than 2 * n_ctx tokens
// (message gives both numbers).
ChunkPlan plan_chunks(size_t n_tokens, int32_t n_ctx, int32_t max_chunks, bool add_bos, int32_t bos);

// The text's tokens as the perplexity method needs them (step 1).
std::vector<int32_t> tokenize_for_perplexity(const Tokenizer& tokenizer, std::string_view text);

// Runs every chunk of `plan` through the model (step 3) and calls on_position for each scored
// position k in [0, plan.scored_per_chunk()) of chunk c with the logits of position first + k
// (n_vocab floats, valid during the call) and the token that follows it. on_chunk_done(c) runs
// after the last position of chunk c.
using ScoredPositionFn = std::function<void(int32_t chunk, int32_t k, const float* logits, int32_t next_token)>;
using ChunkDoneFn = std::function<void(int32_t chunk)>;
void evaluate_chunks(const Model& model, const std::vector<int32_t>& tokens, const ChunkPlan& plan,
                     const EvalParams& params, const ScoredPositionFn& on_position, const ChunkDoneFn& on_chunk_done);

// log softmax(logits)[token], computed in double precision.
double log_prob_of(const float* logits, int32_t n_vocab, int32_t token);
// out[v] = log softmax(logits)[v] for every v.
void log_softmax(const float* logits, int32_t n_vocab, float* out);

// Running mean of negative log-likelihoods with llama.cpp's error estimate (step 5).
class NllAccumulator {
 public:
  void add(double nll) {
    sum_ += nll;
    sum2_ += nll * nll;
    ++count_;
  }
  int64_t count() const { return count_; }
  double mean() const { return count_ > 0 ? sum_ / static_cast<double>(count_) : 0.0; }
  double ppl() const;
  double ppl_error() const;  // 0 when fewer than 2 values or zero variance

 private:
  double sum_ = 0;
  double sum2_ = 0;
  int64_t count_ = 0;
};

struct PerplexityResult {
  double ppl = 0;
  double ppl_error = 0;
  double mean_nll = 0;
  int64_t n_tokens = 0;        // tokens of the text (with BOS)
  int64_t n_scored = 0;        // predictions scored
  int32_t n_ctx = 0;
  int32_t n_chunk = 0;
  std::vector<double> running_ppl;  // after each chunk, as llama.cpp prints "[i]ppl"
  double seconds = 0;               // evaluation wall time
};

// Perplexity of `model` over `tokens` (already tokenized with tokenize_for_perplexity).
// on_scored, when set, sees every scored position as well (used to save base log-probs).
PerplexityResult compute_perplexity(const Model& model, const std::vector<int32_t>& tokens, const EvalParams& params,
                                    bool add_bos, int32_t bos, const ScoredPositionFn& on_scored = {},
                                    const std::function<void(int32_t chunk, double running_ppl)>& on_chunk = {});

}  // namespace edgellm::eval
