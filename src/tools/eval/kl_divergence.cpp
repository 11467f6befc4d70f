#include "tools/eval/kl_divergence.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "tools/eval/logprob_file.h"
#include "model/model.h"

namespace edgellm::eval {
namespace {

struct MeanError {
  double mean = 0;
  double error = 0;
};

// Mean and standard error of the mean (sample variance, n - 1).
MeanError mean_error(const std::vector<double>& v) {
  MeanError r;
  if (v.empty()) return r;
  double sum = 0, sum2 = 0;
  for (double x : v) {
    sum += x;
    sum2 += x * x;
  }
  const double n = static_cast<double>(v.size());
  r.mean = sum / n;
  if (v.size() > 1) {
    const double var = std::max(0.0, (sum2 / n - r.mean * r.mean) * n / (n - 1));
    r.error = std::sqrt(var / n);
  }
  return r;
}

int32_t argmax(const float* x, int32_t n) { return static_cast<int32_t>(std::max_element(x, x + n) - x); }

}  // namespace

Percentiles percentiles(std::vector<double>& values) {
  Percentiles p;
  if (values.empty()) return p;
  std::sort(values.begin(), values.end());
  const auto at = [&](double q) {
    const double rank = q * static_cast<double>(values.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(rank));
    const size_t hi = std::min(values.size() - 1, lo + 1);
    const double frac = rank - static_cast<double>(lo);
    return values[lo] + (values[hi] - values[lo]) * frac;
  };
  p.max = values.back();
  p.p99_9 = at(0.999);
  p.p99 = at(0.99);
  p.p95 = at(0.95);
  p.p90 = at(0.90);
  p.median = at(0.5);
  p.p10 = at(0.10);
  p.p5 = at(0.05);
  p.p1 = at(0.01);
  p.min = values.front();
  return p;
}

void KlAccumulator::add(const float* base_lp, const float* model_lp, int32_t n_vocab, int32_t next) {
  double kld = 0;
  for (int32_t v = 0; v < n_vocab; ++v) {
    const double lb = base_lp[v];
    kld += std::exp(lb) * (lb - static_cast<double>(model_lp[v]));
  }
  kld_.push_back(kld);
  const double nb = -static_cast<double>(base_lp[next]);
  const double nm = -static_cast<double>(model_lp[next]);
  nll_base_.add(nb);
  nll_model_.add(nm);
  ln_ratio_.push_back(nm - nb);
  dp_.push_back(std::exp(-nm) - std::exp(-nb));
  if (argmax(base_lp, n_vocab) == argmax(model_lp, n_vocab)) ++same_top_;
}

KlStats KlAccumulator::finish() const {
  KlStats s;
  s.n = static_cast<int64_t>(kld_.size());
  s.ppl_base = nll_base_.ppl();
  s.ppl_base_error = nll_base_.ppl_error();
  s.ppl = nll_model_.ppl();
  s.ppl_error = nll_model_.ppl_error();
  const MeanError lr = mean_error(ln_ratio_);
  s.ln_ratio_mean = lr.mean;
  s.ln_ratio_error = lr.error;
  s.ppl_ratio = std::exp(lr.mean);
  s.ppl_ratio_error = s.ppl_ratio * lr.error;
  const MeanError k = mean_error(kld_);
  s.kld_mean = k.mean;
  s.kld_error = k.error;
  const MeanError d = mean_error(dp_);
  s.dp_mean = d.mean;
  s.dp_error = d.error;
  double sq = 0;
  for (double x : dp_) sq += x * x;
  s.dp_rms = dp_.empty() ? 0 : std::sqrt(sq / static_cast<double>(dp_.size()));
  std::vector<double> kv = kld_, dv = dp_;
  s.kld = percentiles(kv);
  s.dp = percentiles(dv);
  if (s.n > 0) {
    const double n = static_cast<double>(s.n);
    s.same_top = static_cast<double>(same_top_) / n;
    s.same_top_error = s.n > 1 ? std::sqrt(s.same_top * (1 - s.same_top) / (n - 1)) : 0;
  }
  return s;
}

KlResult compute_kl_divergence(const Model& model, const std::string& base_path, const EvalParams& params,
                               const std::function<void(int32_t, const KlAccumulator&)>& on_chunk) {
  LogProbReader base(base_path);
  const LogProbHeader& h = base.header();
  const int32_t n_vocab = model.hparams().n_vocab;
  require(static_cast<uint32_t>(n_vocab) == h.n_vocab, ErrorCode::kInvalidArgument,
          "'" + base_path + "' was written for a vocabulary of " + std::to_string(h.n_vocab) + " tokens; the model has " +
              std::to_string(n_vocab));
  require(params.n_ctx <= 0 || static_cast<uint32_t>(params.n_ctx) == h.n_ctx, ErrorCode::kInvalidArgument,
          "'" + base_path + "' was written with context " + std::to_string(h.n_ctx) + ", not " +
              std::to_string(params.n_ctx) + " (omit -c to use the file's)");
  ChunkPlan plan;
  plan.n_ctx = static_cast<int32_t>(h.n_ctx);
  plan.n_chunk = static_cast<int32_t>(params.max_chunks < 0 ? h.n_chunk
                                                            : std::min<uint32_t>(h.n_chunk, static_cast<uint32_t>(params.max_chunks)));
  require(plan.n_chunk > 0, ErrorCode::kInvalidArgument, "--chunks must be at least 1");
  plan.first = static_cast<int32_t>(h.first);
  plan.replace_bos = false;  // the stored tokens are exactly what the base model evaluated

  KlAccumulator acc;
  std::vector<float> base_lp(h.n_vocab), model_lp(h.n_vocab);
  const auto t0 = std::chrono::steady_clock::now();
  evaluate_chunks(
      model, base.tokens(), plan, params,
      [&](int32_t, int32_t, const float* logits, int32_t next) {
        base.next(base_lp.data());
        log_softmax(logits, n_vocab, model_lp.data());
        acc.add(base_lp.data(), model_lp.data(), n_vocab, next);
      },
      [&](int32_t c) {
        if (on_chunk) on_chunk(c, acc);
      });
  KlResult r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.stats = acc.finish();
  r.n_ctx = plan.n_ctx;
  r.n_chunk = plan.n_chunk;
  return r;
}

PerplexityResult compute_perplexity_and_save_base(const Model& model, const std::vector<int32_t>& tokens,
                                                  const EvalParams& params, bool add_bos, int32_t bos,
                                                  const std::string& base_path,
                                                  const std::function<void(int32_t, double)>& on_chunk) {
  const ChunkPlan plan = plan_chunks(tokens.size(), params.n_ctx, params.max_chunks, add_bos, bos);
  // Store the tokens as evaluated: chunked, with each chunk's BOS substitution applied.
  // The whole stream is kept (plan_chunks checks the text length), the file gets the chunks used.
  std::vector<int32_t> evaluated = tokens;
  if (plan.replace_bos) {
    for (int32_t c = 0; c < plan.n_chunk; ++c) evaluated[static_cast<size_t>(c) * static_cast<size_t>(plan.n_ctx)] = bos;
  }
  const std::vector<int32_t> stored(evaluated.begin(),
                                    evaluated.begin() + static_cast<std::ptrdiff_t>(plan.n_chunk) * plan.n_ctx);
  LogProbHeader h;
  h.n_ctx = static_cast<uint32_t>(plan.n_ctx);
  h.n_vocab = static_cast<uint32_t>(model.hparams().n_vocab);
  h.n_chunk = static_cast<uint32_t>(plan.n_chunk);
  h.first = static_cast<uint32_t>(plan.first);
  try {
    LogProbWriter writer(base_path, h, stored);
    EvalParams p = params;
    p.max_chunks = plan.n_chunk;
    PerplexityResult r = compute_perplexity(
        model, evaluated, p, /*add_bos=*/false, bos,
        [&](int32_t, int32_t, const float* logits, int32_t) { writer.add_logits(logits); }, on_chunk);
    writer.finish();
    r.n_tokens = static_cast<int64_t>(tokens.size());
    return r;
  } catch (...) {
    std::remove(base_path.c_str());  // never leave a half-written base file behind
    throw;
  }
}

}  // namespace edgellm::eval
