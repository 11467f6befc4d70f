// The importance matrix the engine collects (tools/quant/imatrix_collector.h, through the forward
// pass's MatmulObserver) against the same statistics computed here by a naive forward pass in
// double: plain loops, no KV cache, causal attention recomputed per position, each matrix's input
// rows squared and summed per column. Random F32 llama models (untied and tied), chunks with BOS
// replacing their first token as llama-imatrix does.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "engine/batch.h"
#include "engine/context.h"
#include "engine/matmul_observer.h"
#include "kernels/kernels.h"
#include "model/model.h"
#include "support/synthetic_model.h"
#include "tools/quant/imatrix_collector.h"

namespace edgellm::quant {
namespace {

using Sums = std::map<std::string, std::vector<double>>;  // weight -> per-column sum of x^2

// The reference: a llama forward pass in double over one chunk, adding every matmul input's
// squares to `sums` (and counting rows in `counts`).
struct NaiveImatrix {
  const Model& m;
  bool process_output;
  Sums sums;
  std::map<std::string, int64_t> counts;

  std::vector<double> dense(const WeightView& w) const {
    const gguf::TensorInfo* t = m.gguf().find_tensor(std::string(w.name));
    std::vector<float> row(static_cast<size_t>(w.n_in));
    std::vector<double> out(static_cast<size_t>(w.n_in * w.n_out));
    for (int64_t r = 0; r < w.n_out; ++r) {
      kernels::dequantize_row(t->type, t->data + static_cast<size_t>(r) * t->row_bytes(), row.data(), w.n_in);
      std::copy(row.begin(), row.end(), out.begin() + r * w.n_in);
    }
    return out;
  }
  void record(const WeightView& w, const std::vector<double>& x) {
    auto& s = sums[std::string(w.name)];
    s.resize(x.size(), 0.0);
    for (size_t c = 0; c < x.size(); ++c) s[c] += x[c] * x[c];
    ++counts[std::string(w.name)];
  }
  std::vector<double> matvec(const WeightView& w, const std::vector<double>& x, bool observe = true) {
    if (observe) record(w, x);
    const std::vector<double> W = dense(w);
    std::vector<double> y(static_cast<size_t>(w.n_out), 0.0);
    for (int64_t r = 0; r < w.n_out; ++r) {
      for (int64_t c = 0; c < w.n_in; ++c)
        y[static_cast<size_t>(r)] += W[static_cast<size_t>(r * w.n_in + c)] * x[static_cast<size_t>(c)];
    }
    return y;
  }
  std::vector<double> rmsnorm(const std::vector<double>& x, const VectorView& g) const {
    double ss = 0;
    for (double v : x) ss += v * v;
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(x.size()) + m.hparams().rms_eps);
    std::vector<double> y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * inv * g.data[i];
    return y;
  }
  void rope(double* h, int pos) const {
    const HParams& hp = m.hparams();
    for (int i = 0; i < hp.n_rot / 2; ++i) {
      const double a = pos * std::pow(static_cast<double>(hp.rope_freq_base), -2.0 * i / hp.n_rot);
      const double x0 = h[2 * i], x1 = h[2 * i + 1];  // llama: adjacent pairs
      h[2 * i] = x0 * std::cos(a) - x1 * std::sin(a);
      h[2 * i + 1] = x0 * std::sin(a) + x1 * std::cos(a);
    }
  }
  void chunk(const std::vector<int32_t>& tokens) {
    const HParams& hp = m.hparams();
    const int64_t E = hp.n_embd, hd = hp.head_dim;
    const size_t T = tokens.size();
    const std::vector<double> emb = dense(m.token_embd());
    std::vector<std::vector<double>> x(T);
    for (size_t t = 0; t < T; ++t) x[t].assign(emb.begin() + tokens[t] * E, emb.begin() + (tokens[t] + 1) * E);
    for (int il = 0; il < hp.n_layer; ++il) {
      const LayerWeights& L = m.layer(il);
      std::vector<std::vector<double>> q(T), k(T), v(T);
      for (size_t t = 0; t < T; ++t) {
        const std::vector<double> xn = rmsnorm(x[t], L.attn_norm);
        q[t] = matvec(L.wq, xn);
        k[t] = matvec(L.wk, xn);
        v[t] = matvec(L.wv, xn);
        for (int h = 0; h < hp.n_head; ++h) rope(&q[t][static_cast<size_t>(h * hd)], static_cast<int>(t));
        for (int h = 0; h < hp.n_head_kv; ++h) rope(&k[t][static_cast<size_t>(h * hd)], static_cast<int>(t));
      }
      for (size_t t = 0; t < T; ++t) {
        std::vector<double> att(static_cast<size_t>(hp.n_embd_q()), 0.0);
        for (int h = 0; h < hp.n_head; ++h) {
          const int hk = h / (hp.n_head / hp.n_head_kv);
          std::vector<double> s(t + 1);
          double mx = -1e300, sum = 0;
          for (size_t p = 0; p <= t; ++p) {
            double d = 0;
            for (int64_t i = 0; i < hd; ++i)
              d += q[t][static_cast<size_t>(h * hd + i)] * k[p][static_cast<size_t>(hk * hd + i)];
            s[p] = d / std::sqrt(static_cast<double>(hd));
            mx = std::max(mx, s[p]);
          }
          for (double& e : s) sum += (e = std::exp(e - mx));
          for (size_t p = 0; p <= t; ++p) {
            for (int64_t i = 0; i < hd; ++i)
              att[static_cast<size_t>(h * hd + i)] += s[p] / sum * v[p][static_cast<size_t>(hk * hd + i)];
          }
        }
        const std::vector<double> o = matvec(L.wo, att);
        for (int64_t i = 0; i < E; ++i) x[t][static_cast<size_t>(i)] += o[static_cast<size_t>(i)];
        const std::vector<double> xn = rmsnorm(x[t], L.ffn_norm);
        const std::vector<double> g = matvec(L.ffn_gate, xn), u = matvec(L.ffn_up, xn);
        std::vector<double> a(g.size());
        for (size_t i = 0; i < g.size(); ++i) a[i] = g[i] / (1 + std::exp(-g[i])) * u[i];
        const std::vector<double> d = matvec(L.ffn_down, a);
        for (int64_t i = 0; i < E; ++i) x[t][static_cast<size_t>(i)] += d[static_cast<size_t>(i)];
      }
    }
    if (!process_output) return;
    for (size_t t = 0; t < T; ++t) record(m.output(), rmsnorm(x[t], m.output_norm()));
  }
};

// Largest |engine - naive| / naive over every column of every weight, and the names compared.
double worst_relative(const Imatrix& got, const NaiveImatrix& ref, std::string* worst_at) {
  double worst = 0;
  for (const auto& [name, s] : ref.sums) {
    const auto it = got.entries.find(name);
    if (it == got.entries.end()) {
      ADD_FAILURE() << "no entry for " << name;
      continue;
    }
    EXPECT_EQ(it->second.counts, std::vector<int64_t>{ref.counts.at(name)}) << name;
    EXPECT_EQ(it->second.sums.size(), s.size()) << name;
    for (size_t c = 0; c < std::min(s.size(), it->second.sums.size()); ++c) {
      const double e = std::fabs(it->second.sums[c] - s[c]) / s[c];
      if (e > worst) worst = e, *worst_at = name + " column " + std::to_string(c);
    }
  }
  return worst;
}

// Engine (F32 weights, F32 KV, float activations) vs the double reference: measured worst 1.06e-6
// relative per column sum (untied and tied, 3 chunks of 24; AVX-512 and scalar alike).
constexpr double kSumTolerance = 1e-5;

void check_model(const test::SyntheticModelSpec& spec, bool process_output) {
  auto model = Model::from_gguf(test::synthetic_model(spec));
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> tok(3, spec.n_vocab - 1);
  constexpr int32_t kCtx = 24, kChunks = 3, kBos = 1;
  std::vector<int32_t> tokens(kCtx * kChunks + 5);  // a tail that fills no chunk: dropped
  for (auto& t : tokens) t = tok(rng);

  ImatrixParams p;
  p.n_ctx = kCtx;
  p.n_batch = 10;  // chunks split over several forward calls
  p.n_threads = 2;
  p.process_output = process_output;
  p.dataset = "random tokens";
  const ImatrixRun run = compute_imatrix(*model, tokens, /*add_bos=*/true, kBos, p);
  EXPECT_EQ(run.n_chunk, kChunks);
  EXPECT_EQ(run.imatrix.chunk_count, kChunks);
  EXPECT_EQ(run.imatrix.chunk_size, kCtx);
  EXPECT_EQ(run.imatrix.datasets, std::vector<std::string>{"random tokens"});

  NaiveImatrix ref{*model, process_output, {}, {}};
  for (int32_t c = 0; c < kChunks; ++c) {
    std::vector<int32_t> chunk(tokens.begin() + c * kCtx, tokens.begin() + (c + 1) * kCtx);
    chunk[0] = kBos;
    ref.chunk(chunk);
  }
  // Layers' 7 matrices each, plus the head when asked; the head under its tensor's name.
  EXPECT_EQ(run.imatrix.entries.size(), static_cast<size_t>(7 * spec.n_layer + (process_output ? 1 : 0)));
  EXPECT_EQ(ref.sums.size(), run.imatrix.entries.size());
  if (process_output) {
    EXPECT_EQ(run.imatrix.entries.count(spec.tied ? "token_embd.weight" : "output.weight"), 1u);
  }
  std::string at;
  const double worst = worst_relative(run.imatrix, ref, &at);
  std::printf("  %s%s: worst relative error of a column sum %.2e (%s)\n", spec.tied ? "tied" : "untied",
              process_output ? ", with the output head" : "", worst, at.c_str());
  EXPECT_LE(worst, kSumTolerance) << at;
}

test::SyntheticModelSpec small_llama(bool tied) {
  test::SyntheticModelSpec s;
  s.n_vocab = 96;
  s.n_embd = 64;
  s.n_layer = 2;
  s.n_ff = 160;  // FFN inputs of another width than the attention's
  s.n_head = 4;
  s.n_head_kv = 2;
  s.tied = tied;
  s.seed = tied ? 11 : 3;
  return s;
}

TEST(Imatrix, ColumnSumsEqualANaiveForward) {
  check_model(small_llama(false), false);
}
TEST(Imatrix, OutputHeadWhenAskedTiedOrNot) {
  check_model(small_llama(false), true);
  check_model(small_llama(true), true);
}

// The FFN runs in slices of tokens (forward.h: ffn_slice_tokens): a chunk longer than a slice
// must still be counted once per token.
TEST(Imatrix, LongChunksAcrossFfnSlices) {
  auto model = Model::from_gguf(test::synthetic_model(small_llama(false)));
  std::vector<int32_t> tokens(2 * 300);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(3 + (i * 37) % 90);
  ImatrixParams p;
  p.n_ctx = 300;
  p.n_batch = 300;
  const ImatrixRun run = compute_imatrix(*model, tokens, true, 1, p);
  for (const auto& [name, e] : run.imatrix.entries) EXPECT_EQ(e.counts, std::vector<int64_t>{600}) << name;
}

// An observer that throws aborts the decode like any error of the pass; without one nothing is
// observed (the same Context keeps working).
TEST(Imatrix, ObserverErrorsPropagate) {
  struct Thrower : MatmulObserver {
    void on_matmul_input(std::string_view, const float*, int64_t, int64_t) override {
      throw Error(ErrorCode::kInvalidArgument, "observer says no");
    }
  } thrower;
  auto model = Model::from_gguf(test::synthetic_model(small_llama(false)));
  ContextParams cp;
  cp.n_ctx = 16;
  Context ctx(*model, cp);
  Batch b;
  b.add(0, 5, 0, true);
  ctx.set_matmul_observer(&thrower);
  EXPECT_THROW(ctx.decode(b), Error);
  ctx.set_matmul_observer(nullptr);
  EXPECT_NO_THROW(ctx.decode(b));
}

TEST(Imatrix, TooShortATextIsRefused) {
  auto model = Model::from_gguf(test::synthetic_model(small_llama(false)));
  ImatrixParams p;
  p.n_ctx = 64;
  try {
    compute_imatrix(*model, std::vector<int32_t>(100, 5), true, 1, p);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("128"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace edgellm::quant
