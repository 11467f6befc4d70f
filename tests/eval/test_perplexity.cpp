// Perplexity and KL divergence: the chunking rules, the error formula against a naive
// computation, the established stories260K number (4.686 +- 0.103 at context 256 from another
// engine using llama.cpp's method), Q8_0 within 1% of F32, the log-prob base file, and KL of a
// model against itself.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "model/model.h"
#include "support/test_env.h"
#include "tokenizer/tokenizer.h"
#include "tools/eval/kl_divergence.h"
#include "tools/eval/logprob_file.h"
#include "tools/eval/perplexity.h"
#include "tools/quant/quantize_model.h"

namespace edgellm::eval {
namespace {

// The established value and the tolerance the project accepts for matching it.
constexpr double kStoriesPpl = 4.686;
constexpr double kStoriesPplErr = 0.103;
constexpr double kPplTolerance = 0.01;
constexpr double kErrTolerance = 0.002;  // the +- is printed with 3 decimals
// Q8_0 weights (and the engine's F16 KV) must stay within 1% of the F32 perplexity.
constexpr double kQ8RelativeTolerance = 0.01;
// tiny-zh-poems' perplexity with an F16 / Q8_0 KV cache against the F32 cache's (F32 weights, ctx
// 128), relative: measured 3.3-3.5e-6 (F16) and 8.1-8.2e-5 (Q8_0) on AVX-512 VNNI, AVX2 and
// scalar (AMD EPYC), the same to two digits on every path; bounds at 10x and 5x. (Was 1 % for
// both.) A Q8_0 cache whose codes are truncated instead of rounded measured 5.0e-4.
constexpr double kF16KvRelTol = 3.5e-5;
constexpr double kQ8KvRelTol = 4e-4;
// Self-KL: the base file stores log-probs as uint16 over a 40-nat range (step ~6e-4 nats); after
// renormalisation the residual KL is second order in that step, far below 1e-5.
constexpr double kSelfKlTolerance = 1e-5;

std::string stories() { return test::shared_model("stories260K.gguf"); }

std::string read_all(const std::string& path) { return test::read_file(path); }

struct Loaded {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tok;
  std::vector<int32_t> tokens;
};

Loaded load(const std::string& model_path, const std::string& text_rel) {
  Loaded l;
  l.model = Model::load(model_path);
  l.tok = Tokenizer::from_gguf(l.model->gguf());
  l.tokens = tokenize_for_perplexity(*l.tok, read_all(test::shared_testdata(text_rel)));
  return l;
}

EvalParams ctx_params(int32_t n_ctx, TensorType kv = TensorType::F32) {
  EvalParams p;
  p.n_ctx = n_ctx;
  p.n_batch = n_ctx;
  p.n_threads = 2;
  p.kv_type = kv;
  return p;
}

TEST(Perplexity, ChunkPlanFollowsLlamaCpp) {
  const ChunkPlan p = plan_chunks(1000, 256, -1, true, 1);
  EXPECT_EQ(p.n_chunk, 3);  // 1000 / 256, the tail is dropped
  EXPECT_EQ(p.first, 128);
  EXPECT_EQ(p.scored_per_chunk(), 127);  // positions [128, 255)
  EXPECT_EQ(p.n_scored(), 381);
  EXPECT_TRUE(p.replace_bos);
  EXPECT_EQ(plan_chunks(1000, 256, 2, false, 1).n_chunk, 2);
  EXPECT_FALSE(plan_chunks(1000, 256, -1, false, 1).replace_bos);
  try {
    plan_chunks(511, 256, -1, true, 1);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("512"), std::string::npos) << e.what();
  }
}

TEST(Perplexity, ErrorFormulaMatchesNaive) {
  const std::vector<double> nll = {1.2, 0.4, 2.5, 1.9, 0.7, 3.1};
  NllAccumulator acc;
  for (double v : nll) acc.add(v);
  double mean = 0;
  for (double v : nll) mean += v;
  mean /= static_cast<double>(nll.size());
  double var = 0;  // population variance, then / (N - 1): llama.cpp's formula
  for (double v : nll) var += (v - mean) * (v - mean);
  var /= static_cast<double>(nll.size());
  const double err = std::exp(mean) * std::sqrt(var / static_cast<double>(nll.size() - 1));
  EXPECT_NEAR(acc.ppl(), std::exp(mean), 1e-12);
  EXPECT_NEAR(acc.ppl_error(), err, 1e-12);
}

TEST(Perplexity, LogSoftmaxMatchesNaive) {
  const std::vector<float> logits = {1.0f, -2.0f, 0.5f, 3.0f, 3.0f};
  double z = 0;
  for (float l : logits) z += std::exp(static_cast<double>(l));
  std::vector<float> out(logits.size());
  log_softmax(logits.data(), 5, out.data());
  for (int v = 0; v < 5; ++v) {
    EXPECT_NEAR(out[static_cast<size_t>(v)], logits[static_cast<size_t>(v)] - std::log(z), 1e-6);
    EXPECT_NEAR(log_prob_of(logits.data(), 5, v), logits[static_cast<size_t>(v)] - std::log(z), 1e-9);
  }
}

TEST(Perplexity, Stories260KMatchesEstablishedValue) {
  const Loaded l = load(stories(), "text/stories-eval.txt");
  ASSERT_TRUE(l.tok->add_bos());
  EXPECT_EQ(l.tokens.front(), l.tok->bos());
  const PerplexityResult r = compute_perplexity(*l.model, l.tokens, ctx_params(256), true, l.tok->bos());
  std::printf("stories260K F32 ctx 256: %zu tokens, %d chunks, PPL %.4f +/- %.5f\n", l.tokens.size(), r.n_chunk,
              r.ppl, r.ppl_error);
  EXPECT_NEAR(r.ppl, kStoriesPpl, kPplTolerance);
  EXPECT_NEAR(r.ppl_error, kStoriesPplErr, kErrTolerance);
  EXPECT_EQ(r.n_scored, static_cast<int64_t>(r.n_chunk) * 127);
  ASSERT_EQ(r.running_ppl.size(), static_cast<size_t>(r.n_chunk));
  EXPECT_DOUBLE_EQ(r.running_ppl.back(), r.ppl);
}

TEST(Perplexity, Q8WithinOnePercentOfF32) {
  const std::string q8 = test::temp_dir() + "/stories-q8_0.gguf";
  quant::QuantizeParams qp;
  qp.ftype = quant::FileType::kMostlyQ8_0;
  quant::quantize_model(stories(), q8, qp);
  const Loaded f32 = load(stories(), "text/stories-eval.txt");
  const Loaded q = load(q8, "text/stories-eval.txt");
  ASSERT_EQ(f32.tokens, q.tokens);
  const double base = compute_perplexity(*f32.model, f32.tokens, ctx_params(256), true, f32.tok->bos()).ppl;
  const double ppl_q8 =
      compute_perplexity(*q.model, q.tokens, ctx_params(256, TensorType::F16), true, q.tok->bos()).ppl;
  std::printf("stories260K ctx 256: F32 %.4f, Q8_0 (F16 KV) %.4f\n", base, ppl_q8);
  EXPECT_NEAR(ppl_q8, base, base * kQ8RelativeTolerance);
}

TEST(Perplexity, TinyZhPoemsMatchesEstablishedValueAndKvTypes) {
  // Established: F32 10.565 +- 0.656 at context 128 on zh-eval.txt.
  constexpr double kZhPpl = 10.565;
  constexpr double kZhPplErr = 0.656;
  const Loaded l = load(test::shared_model("tiny-zh-poems.gguf"), "text/zh-eval.txt");
  const PerplexityResult r = compute_perplexity(*l.model, l.tokens, ctx_params(128), true, l.tok->bos());
  std::printf("tiny-zh-poems F32 ctx 128: PPL %.4f +/- %.5f\n", r.ppl, r.ppl_error);
  EXPECT_NEAR(r.ppl, kZhPpl, kPplTolerance);
  EXPECT_NEAR(r.ppl_error, kZhPplErr, kErrTolerance);
  // The KV cache type changes the numbers only slightly (head_dim 32 allows a Q8_0 cache;
  // stories260K's head_dim 8 does not): relative to the F32 cache's perplexity, bounded at about
  // 10x what was measured on every x86 path (kF16KvRelTol, kQ8KvRelTol).
  for (const auto& [kv, bound] : {std::pair{TensorType::F16, kF16KvRelTol}, std::pair{TensorType::Q8_0, kQ8KvRelTol}}) {
    const double p = compute_perplexity(*l.model, l.tokens, ctx_params(128, kv), true, l.tok->bos()).ppl;
    const double rel = std::fabs(p - r.ppl) / r.ppl;
    std::printf("tiny-zh-poems F32 weights, %s KV: PPL %.6f, relative to the F32 cache's %.2e (bound %.0e)\n",
                tensor_type_name(kv), p, rel, bound);
    EXPECT_LE(rel, bound) << tensor_type_name(kv);
  }
}

TEST(LogProbFile, RoundTripWithinQuantizationStep) {
  const std::string path = test::temp_dir() + "/lp_roundtrip.bin";
  LogProbHeader h{8, 50, 2, 4};  // 2 chunks of 8, positions [4, 7) scored -> 6 records
  std::vector<int32_t> tokens(16);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(i * 3 % 50);
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 4.0f);
  std::vector<std::vector<float>> logits(6, std::vector<float>(50));
  {
    LogProbWriter w(path, h, tokens);
    for (auto& row : logits) {
      for (auto& v : row) v = dist(rng);
      w.add_logits(row.data());
    }
    w.finish();
  }
  LogProbReader r(path);
  EXPECT_EQ(r.header().n_ctx, 8u);
  EXPECT_EQ(r.header().n_vocab, 50u);
  EXPECT_EQ(r.tokens(), tokens);
  std::vector<float> lp(50);
  for (const auto& row : logits) {
    r.next(lp.data());
    double z = 0;
    for (float v : row) z += std::exp(static_cast<double>(v));
    for (size_t v = 0; v < 50; ++v) {
      const double want = row[v] - std::log(z);
      if (want > -kLogProbRange + 1) {  // entries far below the top are clamped by design
        EXPECT_NEAR(lp[v], want, 2e-3) << v;
      }
    }
  }
  EXPECT_THROW(r.next(lp.data()), Error);  // all records read
  // A truncated file is rejected up front.
  const std::string bytes = test::read_file(path);
  const std::string cut = test::temp_dir() + "/lp_cut.bin";
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() - 10);
  try {
    LogProbReader bad(cut);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidFile);
  }
}

TEST(LogProbFile, HostileHeadersAreRejected) {
  const auto write_bytes = [](const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
  };
  const auto header = [](uint32_t n_ctx, uint32_t n_vocab, uint32_t n_chunk, uint32_t first) {
    std::string b = "EDGLPRB1";
    for (uint32_t v : {n_ctx, n_vocab, n_chunk, first}) b.append(reinterpret_cast<const char*>(&v), sizeof v);
    return b;
  };
  const std::string path = test::temp_dir() + "/lp_hostile.bin";
  const std::vector<std::string> cases = {
      "NOTMAGIC" + header(8, 50, 1, 4).substr(8),  // wrong magic
      header(8, 50, 1, 4).substr(0, 20),           // truncated header
      header(8, 0, 1, 4),                          // empty vocabulary
      header(8, 50, 1, 7),                         // nothing scored
      header(1u << 30, 1u << 30, 1u << 30, 4),     // sizes that would overflow
      header(8, 50, 1, 4),                          // header only: tokens and records missing
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    write_bytes(path, cases[i]);
    try {
      LogProbReader r(path);
      FAIL() << "case " << i << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidFile) << "case " << i << ": " << e.what();
    }
  }
}

TEST(KlDivergence, PercentilesMatchNaive) {
  std::vector<double> v = {5, 1, 4, 2, 3};
  const Percentiles p = percentiles(v);
  EXPECT_EQ(p.min, 1);
  EXPECT_EQ(p.max, 5);
  EXPECT_DOUBLE_EQ(p.median, 3);
  EXPECT_DOUBLE_EQ(p.p90, 4.6);  // rank 0.9 * 4 = 3.6 -> 4 + 0.6 * (5 - 4)
  EXPECT_DOUBLE_EQ(p.p10, 1.4);
}

TEST(KlDivergence, ModelAgainstItselfIsZero) {
  const Loaded l = load(stories(), "text/stories-eval.txt");
  const std::string base = test::temp_dir() + "/stories-f32.kld";
  EvalParams p = ctx_params(256);
  p.max_chunks = 8;  // enough positions for the statistics, keeps the test short
  const PerplexityResult pr = compute_perplexity_and_save_base(*l.model, l.tokens, p, true, l.tok->bos(), base);
  EXPECT_EQ(pr.n_chunk, 8);
  EvalParams kp = p;
  kp.n_ctx = 0;  // from the file
  const KlResult r = compute_kl_divergence(*l.model, base, kp);
  const KlStats& s = r.stats;
  EXPECT_EQ(s.n, 8 * 127);
  EXPECT_LT(std::fabs(s.kld_mean), kSelfKlTolerance);
  EXPECT_LT(s.kld.max, 10 * kSelfKlTolerance);
  EXPECT_DOUBLE_EQ(s.same_top, 1.0);
  // Same model, same logits; only the float (vs double) log-softmax of the KL path differs.
  EXPECT_NEAR(s.ppl, pr.ppl, pr.ppl * 1e-6);
  EXPECT_NEAR(s.ppl_base, pr.ppl, pr.ppl * 1e-3);  // from the stored uint16 log-probs
  EXPECT_NEAR(s.ppl_ratio, 1.0, 1e-3);
  EXPECT_LT(std::fabs(s.dp_mean), 1e-3);

  // A Q4_0 model differs measurably but stays close.
  const std::string q4 = test::temp_dir() + "/stories-q4_0.gguf";
  quant::QuantizeParams qp;
  qp.ftype = quant::FileType::kMostlyQ4_0;
  quant::quantize_model(stories(), q4, qp);
  auto m4 = Model::load(q4);
  const KlStats s4 = compute_kl_divergence(*m4, base, kp).stats;
  std::printf("stories260K Q4_0 vs F32 (8 chunks): KLD %.5f, same top %.2f%%, PPL ratio %.4f\n", s4.kld_mean,
              100 * s4.same_top, s4.ppl_ratio);
  EXPECT_GT(s4.kld_mean, 100 * kSelfKlTolerance);
  EXPECT_LT(s4.kld_mean, 0.5);
  EXPECT_LT(s4.same_top, 1.0);
  EXPECT_GT(s4.same_top, 0.7);

  // A mismatched context is an error that names both sizes.
  EvalParams wrong = kp;
  wrong.n_ctx = 128;
  try {
    compute_kl_divergence(*l.model, base, wrong);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("256"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace edgellm::eval
