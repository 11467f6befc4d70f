#include "tools/eval/perplexity.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "core/error.h"
#include "engine/batch.h"
#include "engine/context.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace edgellm::eval {

ChunkPlan plan_chunks(size_t n_tokens, int32_t n_ctx, int32_t max_chunks, bool add_bos, int32_t bos) {
  // n_ctx >= 4 keeps at least one scored position per chunk (first = n_ctx/2 < n_ctx - 1).
  require(n_ctx >= 4, ErrorCode::kInvalidArgument, "context size " + std::to_string(n_ctx) + " is too small (min 4)");
  require(n_tokens >= 2 * static_cast<size_t>(n_ctx), ErrorCode::kInvalidArgument,
          "the text has " + std::to_string(n_tokens) + " tokens; at least " + std::to_string(2 * n_ctx) +
              " (2 x context " + std::to_string(n_ctx) + ") are needed to evaluate perplexity");
  ChunkPlan plan;
  plan.n_ctx = n_ctx;
  const int64_t n_max = static_cast<int64_t>(n_tokens / static_cast<size_t>(n_ctx));
  plan.n_chunk = static_cast<int32_t>(max_chunks < 0 ? n_max : std::min<int64_t>(max_chunks, n_max));
  require(plan.n_chunk > 0, ErrorCode::kInvalidArgument, "--chunks must be at least 1");
  plan.first = n_ctx / 2;
  plan.replace_bos = add_bos && bos >= 0;
  plan.bos = bos;
  return plan;
}

std::vector<int32_t> tokenize_for_perplexity(const Tokenizer& tokenizer, std::string_view text) {
  return tokenizer.encode(text, /*add_special=*/true, /*parse_special=*/false);
}

double log_prob_of(const float* logits, int32_t n_vocab, int32_t token) {
  float max_logit = logits[0];
  for (int32_t v = 1; v < n_vocab; ++v) max_logit = std::max(max_logit, logits[v]);
  double sum = 0;
  for (int32_t v = 0; v < n_vocab; ++v) sum += std::exp(static_cast<double>(logits[v]) - max_logit);
  return static_cast<double>(logits[token]) - max_logit - std::log(sum);
}

void log_softmax(const float* logits, int32_t n_vocab, float* out) {
  float max_logit = logits[0];
  for (int32_t v = 1; v < n_vocab; ++v) max_logit = std::max(max_logit, logits[v]);
  double sum = 0;
  for (int32_t v = 0; v < n_vocab; ++v) sum += std::exp(static_cast<double>(logits[v]) - max_logit);
  const double log_z = max_logit + std::log(sum);
  for (int32_t v = 0; v < n_vocab; ++v) out[v] = static_cast<float>(static_cast<double>(logits[v]) - log_z);
}

double NllAccumulator::ppl() const { return std::exp(mean()); }

double NllAccumulator::ppl_error() const {
  if (count_ < 2) return 0;
  const double m = mean();
  const double var = sum2_ / static_cast<double>(count_) - m * m;
  if (!(var > 0)) return 0;
  return ppl() * std::sqrt(var / static_cast<double>(count_ - 1));
}

void evaluate_chunks(const Model& model, const std::vector<int32_t>& tokens, const ChunkPlan& plan,
                     const EvalParams& params, const ScoredPositionFn& on_position, const ChunkDoneFn& on_chunk_done) {
  require(static_cast<int64_t>(tokens.size()) >= static_cast<int64_t>(plan.n_chunk) * plan.n_ctx,
          ErrorCode::kInvalidArgument,
          "evaluate_chunks: " + std::to_string(tokens.size()) + " tokens do not fill " + std::to_string(plan.n_chunk) +
              " chunks of " + std::to_string(plan.n_ctx));
  const int32_t n_vocab = model.hparams().n_vocab;
  for (int32_t t : tokens) {
    require(t >= 0 && t < n_vocab, ErrorCode::kInvalidArgument,
            "token id " + std::to_string(t) + " is outside the model's vocabulary of " + std::to_string(n_vocab));
  }
  ContextParams cp;
  cp.n_ctx = plan.n_ctx;
  cp.n_batch = std::max<int32_t>(1, std::min(params.n_batch, plan.n_ctx));
  cp.n_seq_max = 1;
  cp.n_threads = params.n_threads;
  cp.kv_type = params.kv_type;
  cp.kv_type_v = params.kv_type_v;
  Context ctx(model, cp);

  Batch batch;
  for (int32_t c = 0; c < plan.n_chunk; ++c) {
    if (params.cancel != nullptr && params.cancel->load(std::memory_order_relaxed)) {
      throw Error(ErrorCode::kCancelled, "perplexity interrupted at chunk " + std::to_string(c + 1) + " of " +
                                             std::to_string(plan.n_chunk));
    }
    ctx.clear();  // every chunk starts from an empty KV cache
    batch.clear();
    const size_t start = static_cast<size_t>(c) * static_cast<size_t>(plan.n_ctx);
    for (int32_t i = 0; i < plan.n_ctx; ++i) {
      const int32_t tok = (i == 0 && plan.replace_bos) ? plan.bos : tokens[start + static_cast<size_t>(i)];
      // Logits only where they are scored: positions [first, n_ctx - 1).
      batch.add(0, tok, i, i >= plan.first && i < plan.n_ctx - 1);
    }
    ctx.decode(batch);
    for (int32_t k = 0; k < plan.scored_per_chunk(); ++k) {
      const size_t next = start + static_cast<size_t>(plan.first + k + 1);
      on_position(c, k, ctx.logits(k), tokens[next]);
    }
    if (on_chunk_done) on_chunk_done(c);
  }
}

PerplexityResult compute_perplexity(const Model& model, const std::vector<int32_t>& tokens, const EvalParams& params,
                                    bool add_bos, int32_t bos, const ScoredPositionFn& on_scored,
                                    const std::function<void(int32_t, double)>& on_chunk) {
  const ChunkPlan plan = plan_chunks(tokens.size(), params.n_ctx, params.max_chunks, add_bos, bos);
  const int32_t n_vocab = model.hparams().n_vocab;
  NllAccumulator acc;
  PerplexityResult r;
  const auto t0 = std::chrono::steady_clock::now();
  evaluate_chunks(
      model, tokens, plan, params,
      [&](int32_t c, int32_t k, const float* logits, int32_t next) {
        acc.add(-log_prob_of(logits, n_vocab, next));
        if (on_scored) on_scored(c, k, logits, next);
      },
      [&](int32_t c) {
        r.running_ppl.push_back(acc.ppl());
        if (on_chunk) on_chunk(c, acc.ppl());
      });
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.ppl = acc.ppl();
  r.ppl_error = acc.ppl_error();
  r.mean_nll = acc.mean();
  r.n_tokens = static_cast<int64_t>(tokens.size());
  r.n_scored = acc.count();
  r.n_ctx = plan.n_ctx;
  r.n_chunk = plan.n_chunk;
  return r;
}

}  // namespace edgellm::eval
