// KL divergence of a (quantized) model against reference log-probabilities saved by a perplexity
// run (eval/logprob_file.h), with the statistics llama.cpp's perplexity --kl-divergence reports:
//   - KLD(base || model) per scored position: sum_v p_base(v) * (log p_base(v) - log p_model(v));
//     mean +- standard error of the mean, and percentiles;
//   - delta p = p_model(next token) - p_base(next token): mean +- error, RMS, percentiles;
//   - "same top p": the fraction of positions where both argmaxes agree (+- binomial error);
//   - PPL of both and their ratio exp(mean(nll_model - nll_base)) +- ratio * stderr.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tools/eval/perplexity.h"

namespace edgellm::eval {

// Percentiles reported for KLD and delta p, in this order.
struct Percentiles {
  double max = 0, p99_9 = 0, p99 = 0, p95 = 0, p90 = 0, median = 0, p10 = 0, p5 = 0, p1 = 0, min = 0;
};
// Linear interpolation between order statistics (value at rank q * (n - 1)); `values` is sorted
// in place. All zeros for an empty vector.
Percentiles percentiles(std::vector<double>& values);

struct KlStats {
  int64_t n = 0;
  double ppl_base = 0, ppl_base_error = 0;
  double ppl = 0, ppl_error = 0;
  double ln_ratio_mean = 0, ln_ratio_error = 0;   // mean(nll - nll_base)
  double ppl_ratio = 0, ppl_ratio_error = 0;      // exp(ln_ratio_mean)
  double kld_mean = 0, kld_error = 0;
  Percentiles kld;
  double dp_mean = 0, dp_error = 0, dp_rms = 0;
  Percentiles dp;
  double same_top = 0, same_top_error = 0;        // fraction in [0, 1]
};

class KlAccumulator {
 public:
  // base_lp / model_lp: normalised log-probabilities (n_vocab floats); next: the actual token.
  void add(const float* base_lp, const float* model_lp, int32_t n_vocab, int32_t next);
  KlStats finish() const;

 private:
  NllAccumulator nll_base_, nll_model_;
  std::vector<double> kld_, dp_, ln_ratio_;
  int64_t same_top_ = 0;
};

struct KlResult {
  KlStats stats;
  int32_t n_ctx = 0;
  int32_t n_chunk = 0;
  double seconds = 0;
};

// Evaluates `model` on the tokens stored in `base_path` (chunking and scoring as recorded there)
// and compares with the stored log-probs. params.n_ctx / max_chunks: n_ctx is taken from the
// file (a different non-zero params.n_ctx is an Error(kInvalidArgument)); max_chunks limits the
// chunks compared. Errors when the model's vocabulary size differs from the file's.
KlResult compute_kl_divergence(const Model& model, const std::string& base_path, const EvalParams& params,
                               const std::function<void(int32_t chunk, const KlAccumulator& acc)>& on_chunk = {});

// Perplexity run that also writes the base file for a later compute_kl_divergence.
PerplexityResult compute_perplexity_and_save_base(
    const Model& model, const std::vector<int32_t>& tokens, const EvalParams& params, bool add_bos, int32_t bos,
    const std::string& base_path, const std::function<void(int32_t chunk, double running_ppl)>& on_chunk = {});

}  // namespace edgellm::eval
