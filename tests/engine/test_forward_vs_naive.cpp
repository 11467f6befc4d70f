// The engine's logits against a naive forward pass written here: plain loops in double, no KV
// cache, causal attention recomputed over the whole sequence, weights dequantized with
// kernels::dequantize_row (tested on its own by the kernel tests). Where the engine rounds a
// value by design, the reference rounds it the same way, written here from the format's
// definition: matmul inputs through Q8_0 / Q8_K (quantized weights), K / V rows through the
// cache's type (F16, Q8_0, Q4_0), decode queries and Q4_0 V weights through int8 where the ISA
// uses those. Random seeded models of every supported architecture and several weight types;
// prefill in chunks, step-by-step decode, several sequences per batch, positions crossing KV
// block boundaries (block size 16).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/fp16.h"
#include "engine/context.h"
#include "kernels/attention.h"
#include "kernels/kernels.h"
#include "model/model.h"
#include "support/sanitizer.h"
#include "support/synthetic_model.h"

namespace edgellm {
namespace {

// ---------------------------------------------------------------- the naive reference
using Mat = std::vector<double>;  // row-major

// The value of largest magnitude of x[0 .. 32) (the first of equals).
double max_signed32(const double* x) {
  double m = 0;
  for (int i = 0; i < 32; ++i) {
    if (std::abs(x[i]) > std::abs(m)) m = x[i];
  }
  return m;
}

// The reference's own Q4_0 round trip of one cache row (ggml's block layout, written here from
// its definition): per 32 values, d = (the value of largest magnitude) / -8 rounded to F16,
// code = min(15, trunc(x / d + 8.5)), value = (code - 8) * d.
void round_trip_q4_0(double* x, int64_t n) {
  for (int64_t b = 0; b < n; b += 32) {
    const double d_exact = max_signed32(x + b) / -8;
    const double d = fp16_to_fp32(fp32_to_fp16(static_cast<float>(d_exact)));
    for (int64_t i = b; i < b + 32; ++i) {
      const int code = d_exact != 0 ? std::min(15, static_cast<int>(x[i] / d_exact + 8.5)) : 8;
      x[i] = (code - 8) * d;
    }
  }
}

// The F16 scales of a row's Q4_0 blocks, as round_trip_q4_0 makes them.
std::vector<double> q4_0_scales(const double* x, int64_t n) {
  std::vector<double> d;
  for (int64_t b = 0; b < n; b += 32) d.push_back(fp16_to_fp32(fp32_to_fp16(static_cast<float>(max_signed32(x + b) / -8))));
  return d;
}

// The reference's own rounding of a cache row stored as F16 (each value to the nearest half).
void round_trip_f16(double* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = fp16_to_fp32(fp32_to_fp16(static_cast<float>(x[i])));
}

// The reference's own rounding of a matmul input, where the engine quantizes it (written here from
// ggml's definitions of the activation formats, not from the kernels): weights of Q4_0 / Q5_0 /
// Q8_0 (and their repacked forms) multiply Q8_0 activations, K-quant weights Q8_K ones, float
// weights the F32 input itself.
//   Q8_0, per 32 values: d = max|x| / 127 (stored as F16), code = round-half-away(x / d), value = code * F16(d).
//   Q8_K, per 256 values: m = the value of largest magnitude (the first of equals), s = -127 / m,
//   code = clamp(round-half-even(s * x), -127, 127), value = code * float(1 / s).
void round_trip_q8_0(double* x, int64_t n) {
  for (int64_t b = 0; b < n; b += 32) {
    double amax = 0;
    for (int64_t i = b; i < b + 32; ++i) amax = std::max(amax, std::abs(x[i]));
    const double d_exact = amax / 127;
    const double d = fp16_to_fp32(fp32_to_fp16(static_cast<float>(d_exact)));
    for (int64_t i = b; i < b + 32; ++i) x[i] = d_exact > 0 ? std::round(x[i] / d_exact) * d : 0.0;
  }
}

void round_trip_q8_k(double* x, int64_t n) {
  for (int64_t b = 0; b < n; b += 256) {
    double m = 0;
    for (int64_t i = b; i < b + 256; ++i) {
      if (std::abs(x[i]) > std::abs(m)) m = x[i];
    }
    if (m == 0) continue;  // all zero
    const double s = -127 / m;
    const double d = static_cast<float>(1 / s);
    for (int64_t i = b; i < b + 256; ++i) x[i] = std::clamp(std::nearbyint(s * x[i]), -127.0, 127.0) * d;
  }
}

// How the engine rounds the input of a matmul with weights of file type `t` (nullptr: not at all).
void (*activation_round_trip(TensorType t))(double*, int64_t) {
  switch (t) {
    case TensorType::Q4_0:
    case TensorType::Q5_0:
    case TensorType::Q8_0: return round_trip_q8_0;
    case TensorType::Q4_K:
    case TensorType::Q5_K:
    case TensorType::Q6_K: return round_trip_q8_k;
    case TensorType::F32:
    case TensorType::F16:
    case TensorType::BF16: return nullptr;
    default: break;
  }
  ADD_FAILURE() << "no activation rounding written for " << tensor_type_name(t);
  return nullptr;
}

// The reference's own rounding of a query head as decode's integer scores use it for Q8_0 / Q4_0
// K (kernels/attention.h, written here from that definition): per 32 values, codes =
// round-half-even(x * 127 / max|x|), value = code * max|x| / 127.
void round_trip_query_int8(double* x, int64_t n) {
  for (int64_t b = 0; b < n; b += 32) {
    double amax = 0;
    for (int64_t i = b; i < b + 32; ++i) amax = std::max(amax, std::abs(x[i]));
    for (int64_t i = b; i < b + 32; ++i) x[i] = amax > 0 ? std::nearbyint(x[i] * 127 / amax) * amax / 127 : 0.0;
  }
}

struct NaiveModel {
  const Model& m;
  // Round trips of the K and V rows (one head, after RoPE) through the cache's storage type,
  // as the engine's cache stores them; null: kept exact (an F32 cache).
  void (*round_k)(double*, int64_t) = nullptr;
  void (*round_v)(double*, int64_t) = nullptr;
  // Rounding of each query head (after RoPE) before its scores, at positions >= round_q_from
  // (the ones the engine computes by decode steps); null: exact.
  void (*round_q)(double*, int64_t) = nullptr;
  size_t round_q_from = 0;
  // Q4_0 V summed with int8 weights (kernels/attention.h, where the ISA has it), at the same
  // positions: x = float(p) * d (d the F16 scale of the value's block, V rows rounded by
  // round_trip_q4_0) is rounded to q * S, S = m / 127 and q = round(x * 127 / m), m the largest
  // |x| of its group of kValueWeightGroupRows (64) positions, times the code (value / d).
  bool int8_value_weights = false;
  // Matmul inputs rounded as the engine's activation formats round them (round_trip_q8_0 /
  // round_trip_q8_k by the weights' type); false only to measure what that rounding is worth.
  bool round_activations = true;
  // A matrix [rows, n_in] as doubles, read from the GGUF tensor itself (the engine may have
  // repacked its view of the weights, kernels/repack.h; the reference must not depend on that),
  // and the rounding its input gets in the engine (by the file's weight type).
  struct Dense {
    Mat w;
    void (*round_input)(double*, int64_t) = nullptr;
  };
  // Dequantized once per model and shared by the copies of this NaiveModel (a test runs the
  // reference over several token lists).
  std::shared_ptr<std::map<std::string, Dense>> dense_cache = std::make_shared<std::map<std::string, Dense>>();
  const Dense& dense(const WeightView& w) const {
    const std::string name(w.name);
    if (const auto it = dense_cache->find(name); it != dense_cache->end()) return it->second;
    Dense& out = (*dense_cache)[name];
    const gguf::TensorInfo* t = m.gguf().find_tensor(name);
    EXPECT_NE(t, nullptr) << w.name;
    if (t == nullptr) return out;
    const size_t row_bytes = t->row_bytes();
    std::vector<float> row(static_cast<size_t>(w.n_in));
    out.w.resize(static_cast<size_t>(w.n_in * w.n_out));
    for (int64_t r = 0; r < w.n_out; ++r) {
      kernels::dequantize_row(t->type, t->data + static_cast<size_t>(r) * row_bytes, row.data(), w.n_in);
      for (int64_t c = 0; c < w.n_in; ++c) out.w[static_cast<size_t>(r * w.n_in + c)] = row[static_cast<size_t>(c)];
    }
    if (round_activations) out.round_input = activation_round_trip(t->type);
    return out;
  }
  static std::vector<double> vec(const VectorView& v) { return std::vector<double>(v.data, v.data + v.n); }

  static void matvec(const Dense& w, int64_t n_in, const std::vector<double>& x, std::vector<double>& y,
                     int64_t n_out) {
    std::vector<double> rounded;
    const double* in = x.data();
    if (w.round_input != nullptr) {
      rounded = x;
      w.round_input(rounded.data(), n_in);
      in = rounded.data();
    }
    y.assign(static_cast<size_t>(n_out), 0.0);
    for (int64_t r = 0; r < n_out; ++r) {
      double s = 0;
      for (int64_t c = 0; c < n_in; ++c) s += w.w[static_cast<size_t>(r * n_in + c)] * in[c];
      y[static_cast<size_t>(r)] = s;
    }
  }
  static void rmsnorm(const double* x, const std::vector<double>& w, double* y, int64_t n, double eps) {
    double ss = 0;
    for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * inv * w[static_cast<size_t>(i)];
  }
  // Rotates one head in place, computing each angle directly from its definition.
  void rope(double* h, int pos) const {
    const HParams& hp = m.hparams();
    const int half = hp.n_rot / 2;
    for (int i = 0; i < half; ++i) {
      double freq = std::pow(static_cast<double>(hp.rope_freq_base), -2.0 * i / hp.n_rot);
      if (m.rope_freqs().present()) freq /= m.rope_freqs().data[i];
      const double a = pos * freq * hp.rope_freq_scale;
      const int i0 = hp.rope_style == RopeStyle::kNormal ? 2 * i : i;
      const int i1 = hp.rope_style == RopeStyle::kNormal ? 2 * i + 1 : i + half;
      const double x0 = h[i0], x1 = h[i1];
      h[i0] = x0 * std::cos(a) - x1 * std::sin(a);
      h[i1] = x0 * std::sin(a) + x1 * std::cos(a);
    }
  }

  // Logits [T, n_vocab] for every position of `tokens`, or only at the positions where `wanted`
  // is true (the others empty): the last layer's attention, FFN and head then run only there
  // (a position's last-layer output feeds nothing but its own logits), which makes the O(T^2)
  // attention of a 4k-position reference a few percent of its cost and changes no value.
  std::vector<std::vector<double>> forward(const std::vector<int32_t>& tokens,
                                           const std::vector<bool>* wanted = nullptr) const {
    const HParams& hp = m.hparams();
    const int64_t E = hp.n_embd, hd = hp.head_dim, NQ = hp.n_embd_q(), NKV = hp.n_embd_kv(), F = hp.n_ff;
    const size_t T = tokens.size();
    const Mat& emb = dense(m.token_embd()).w;
    std::vector<std::vector<double>> x(T);
    for (size_t t = 0; t < T; ++t) {
      x[t].assign(emb.begin() + tokens[t] * E, emb.begin() + (tokens[t] + 1) * E);
    }
    for (int il = 0; il < hp.n_layer; ++il) {
      const LayerWeights& L = m.layer(il);
      const Dense &wq = dense(L.wq), &wk = dense(L.wk), &wv = dense(L.wv), &wo = dense(L.wo);
      const Dense &wg = dense(L.ffn_gate), &wu = dense(L.ffn_up), &wd = dense(L.ffn_down);
      std::vector<std::vector<double>> q(T), k(T), v(T), v_scale(T);  // v_scale: [n_head_kv * hd / 32]
      std::vector<double> xn(static_cast<size_t>(E));
      for (size_t t = 0; t < T; ++t) {
        rmsnorm(x[t].data(), vec(L.attn_norm), xn.data(), E, hp.rms_eps);
        matvec(wq, E, xn, q[t], NQ);
        matvec(wk, E, xn, k[t], NKV);
        matvec(wv, E, xn, v[t], NKV);
        if (L.bq.present()) {
          for (int64_t i = 0; i < NQ; ++i) q[t][static_cast<size_t>(i)] += L.bq.data[i];
          for (int64_t i = 0; i < NKV; ++i) k[t][static_cast<size_t>(i)] += L.bk.data[i];
          for (int64_t i = 0; i < NKV; ++i) v[t][static_cast<size_t>(i)] += L.bv.data[i];
        }
        for (int h = 0; h < hp.n_head; ++h) {
          if (L.q_norm.present()) rmsnorm(&q[t][static_cast<size_t>(h * hd)], vec(L.q_norm), &q[t][static_cast<size_t>(h * hd)], hd, hp.rms_eps);
          rope(&q[t][static_cast<size_t>(h * hd)], static_cast<int>(t));
          if (round_q != nullptr && t >= round_q_from) round_q(&q[t][static_cast<size_t>(h * hd)], hd);
        }
        for (int h = 0; h < hp.n_head_kv; ++h) {
          if (L.k_norm.present()) rmsnorm(&k[t][static_cast<size_t>(h * hd)], vec(L.k_norm), &k[t][static_cast<size_t>(h * hd)], hd, hp.rms_eps);
          rope(&k[t][static_cast<size_t>(h * hd)], static_cast<int>(t));
          if (round_k != nullptr) round_k(&k[t][static_cast<size_t>(h * hd)], hd);
          if (int8_value_weights) {
            const auto d = q4_0_scales(&v[t][static_cast<size_t>(h * hd)], hd);
            v_scale[t].insert(v_scale[t].end(), d.begin(), d.end());
          }
          if (round_v != nullptr) round_v(&v[t][static_cast<size_t>(h * hd)], hd);
        }
      }
      for (size_t t = 0; t < T; ++t) {
        if (wanted != nullptr && il == hp.n_layer - 1 && !(*wanted)[t]) continue;
        std::vector<double> att(static_cast<size_t>(NQ), 0.0);
        for (int h = 0; h < hp.n_head; ++h) {
          const int hk = h / (hp.n_head / hp.n_head_kv);
          std::vector<double> s(t + 1);
          double mx = -1e300;
          for (size_t p = 0; p <= t; ++p) {
            double d = 0;
            for (int64_t i = 0; i < hd; ++i) d += q[t][static_cast<size_t>(h * hd + i)] * k[p][static_cast<size_t>(hk * hd + i)];
            s[p] = d / std::sqrt(static_cast<double>(hd));
            mx = std::max(mx, s[p]);
          }
          double sum = 0;
          for (auto& e : s) sum += (e = std::exp(e - mx));
          const bool int8_weights = int8_value_weights && t >= round_q_from;
          if (int8_weights) {
            for (int64_t i = 0; i < hd; ++i) {
              const int64_t blk = (hk * hd + i) / 32;
              constexpr size_t kGroup = static_cast<size_t>(kernels::kValueWeightGroupRows);
              for (size_t g0 = 0; g0 <= t; g0 += kGroup) {
                const size_t g1 = std::min(t + 1, g0 + kGroup);
                float m = 0.0f;
                for (size_t p = g0; p < g1; ++p) {
                  const float x = static_cast<float>(s[p] / sum) * static_cast<float>(v_scale[p][static_cast<size_t>(blk)]);
                  m = std::max(m, std::fabs(x));
                }
                if (m < kernels::kValueWeightMinMax) continue;
                const float inv = 127.0f / m, S = m / 127.0f;
                for (size_t p = g0; p < g1; ++p) {
                  const double d = v_scale[p][static_cast<size_t>(blk)];
                  const float x = static_cast<float>(s[p] / sum) * static_cast<float>(d);
                  const double w = static_cast<double>(std::nearbyint(x * inv)) * S;
                  att[static_cast<size_t>(h * hd + i)] += d != 0 ? w * (v[p][static_cast<size_t>(hk * hd + i)] / d) : 0.0;
                }
              }
            }
            continue;
          }
          for (size_t p = 0; p <= t; ++p) {
            for (int64_t i = 0; i < hd; ++i) {
              att[static_cast<size_t>(h * hd + i)] += s[p] / sum * v[p][static_cast<size_t>(hk * hd + i)];
            }
          }
        }
        std::vector<double> o;
        matvec(wo, NQ, att, o, E);
        for (int64_t i = 0; i < E; ++i) x[t][static_cast<size_t>(i)] += o[static_cast<size_t>(i)];
        rmsnorm(x[t].data(), vec(L.ffn_norm), xn.data(), E, hp.rms_eps);
        std::vector<double> g, u, dn;
        matvec(wg, E, xn, g, F);
        matvec(wu, E, xn, u, F);
        for (int64_t i = 0; i < F; ++i) {
          const double gi = g[static_cast<size_t>(i)];
          g[static_cast<size_t>(i)] = gi / (1.0 + std::exp(-gi)) * u[static_cast<size_t>(i)];
        }
        matvec(wd, F, g, dn, E);
        for (int64_t i = 0; i < E; ++i) x[t][static_cast<size_t>(i)] += dn[static_cast<size_t>(i)];
      }
    }
    const Dense& out = dense(m.output());
    std::vector<std::vector<double>> logits(T);
    std::vector<double> xn(static_cast<size_t>(E));
    for (size_t t = 0; t < T; ++t) {
      if (wanted != nullptr && !(*wanted)[t]) continue;
      rmsnorm(x[t].data(), vec(m.output_norm()), xn.data(), E, hp.rms_eps);
      matvec(out, E, xn, logits[t], hp.n_vocab);
    }
    return logits;
  }
};

// ---------------------------------------------------------------- comparison
// Error metric: max |engine - reference| over the vocabulary, relative to the largest
// reference logit magnitude at that position (logits of these models are O(1..10)).
// The worst, lower-quartile and median error over the positions compared.
struct ErrorStats {
  double worst = 0, quartile = 0, median = 0;
  static ErrorStats of(std::vector<double> e) {
    std::sort(e.begin(), e.end());
    return {e.back(), e[e.size() / 4], e[e.size() / 2]};
  }
};

double rel_error(const float* got, const std::vector<double>& ref) {
  double max_ref = 1e-6, max_diff = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    max_ref = std::max(max_ref, std::abs(ref[i]));
    max_diff = std::max(max_diff, std::abs(static_cast<double>(got[i]) - ref[i]));
  }
  return max_diff / max_ref;
}

// Tolerances sit within ~10x of the worst error measured on every x86 path (best ISA = AVX-512
// VNNI, EDGELLM_ISA=avx2, EDGELLM_ISA=scalar; `make test` runs all three, label e2e), so a
// regression of an order of magnitude fails. Measured 2026-12-02 with this file's printout.
//
// F32 weights: the engine multiplies in float with F32 activations; only summation order and
// float rounding differ from the double reference. Measured worst 3.6e-6 (long prompts, scalar;
// 2.2e-6 for the short cases).
constexpr double kTolF32 = 3e-5;
// The same at 4160 positions (softmax over 4k keys, RoPE angles up to 4160 rad in float):
// measured worst 1.34e-5 (scalar; 1.32e-5 AVX-512, 1.31e-5 AVX2).
constexpr double kTolF32Long = 1e-4;
// Q4_0 V at 4160 positions against the reference that rounds V (and decode weights) alike:
// measured worst 9.3e-6 (prefill), 5.0e-4 (decode, AVX-512 int8 weights in 64-position groups:
// the engine's F32 softmax and the reference's double one now and then round a weight to
// neighbouring int8 codes). Without the reference's weight rounding decode measured 8.6e-3, so
// the bound sits between the two.
constexpr double kTolQ4VLong = 1.5e-3;
// F16 / BF16 weights: halves are widened to F32 and multiplied with F32 activations on every
// path (x86 and NEON), so the error is that of F32: measured worst 2.1e-6 (scalar), 1.1e-6 (AVX2
// and AVX-512). Was 1e-2, which a wrong F16 conversion of a few elements would have passed.
constexpr double kTolF16 = 2e-5;
// Quantized weights: every matmul input is rounded to 8 bits per value (Q8_0 / Q8_K, a step of up
// to 1/127 of a block's largest value), by the engine and by the reference alike
// (activation_round_trip). Most positions then differ by float summation order only: the lower
// quartile over the positions compared is at most 1.7e-7 (K-quants; 1.0e-7 the 32-element
// types) on AVX-512, AVX2 and scalar, bounded at 2e-6. But the engine rounds its float
// activations and the reference its double ones, so now and then a value within float rounding
// of a code boundary lands one code apart, and every later position of that sequence sees it
// (through its keys and values): the worst position measured 4.1e-2 (Q6_K, scalar; 1.7-2.6e-2
// the other types), the median up to 7.9e-3 where a sequence took such a step early (Q8_0, Q5_0:
// more than half of its positions). kTolQuant bounds that (a wrong head mapping or rope gives >
// 100%); the quartile is what tells a kernel bug apart: one Q4_0 block per 16 rows with a 2%
// wrong scale (repack.cpp, every matrix) measured 3.2e-2 worst, under kTolQuant, but 1.7e-2 at
// the lower quartile. Without the reference's rounding the quartile was 1.5e-2 to 2.5e-2, and the
// worst 5.9e-2 (Q6_K), 5.0e-2 (Q4_K), 3.3-3.7e-2 (Q4_0, Q5_0, Q8_0).
constexpr double kTolQuant = 8e-2;
constexpr double kTolQuantQuartile = 2e-6;
// Q8_0 KV (F32 weights) against the reference that rounds K and V through Q8_0 and, where the ISA
// scores with an int8 query, its decode queries too: as with quantized weights, a quartile of
// 8.2e-7 (scalar; 4e-7 AVX-512 and AVX2) and a worst of 6.4e-3 (qwen3, AVX-512) where a value
// landed one code apart (median up to 7.4e-4). Before the reference rounded K / V the worst was
// 2.4e-2 under a bound of 8e-2.
constexpr double kTolQ8KvWorst = 6e-2;
constexpr double kTolQ8KvQuartile = 8e-6;
// F16 KV cache on top, against the reference that rounds its K / V rows to F16 as well
// (round_trip_f16): measured worst 1.95e-4 (short cases, AVX2), 1.1e-4 (long prompts, scalar),
// a value within float rounding of an F16 midpoint landing one half-ulp apart. Before the
// reference rounded them the worst was 9.2e-4 under a bound of 5e-3.
constexpr double kExtraF16Kv = 2e-3;

// Q4_0 KV against the reference that rounds K and V through Q4_0 itself (F32 weights), and, at
// decode positions where the ISA scores Q4_0 K against an int8 query, its queries as well
// (round_trip_query_int8). Most positions differ by float summation order only. But the engine
// rounds its float K/V/queries and the reference its double ones, so a value on a rounding
// boundary now and then lands one code apart, and every later position of that sequence sees
// it. Measured (median / worst): scalar 5.0e-6 / 2.2e-2, AVX-512 3.4e-7 / 1.1e-3, AVX2 (F32
// queries) 4.1e-7 / 8.8e-7. Without the reference's rounding of K/V (an engine that stored K/V
// exactly, or decoded nibbles or scales wrongly) the error is 7e-2 to 3e-1 at every position,
// and without its rounding of the queries the median is 1.1e-2: the median bound is what tells
// them apart; the worst bound keeps a flip to one code.
// Decode steps also sum Q4_0 V with int8 weights where the ISA has that kernel (AVX-512 VBMI,
// scalar); the reference rounds its weights the same way (int8_value_weights). Measured with
// it on AVX-512 (stop 33, a Xeon, 64-position groups): median 3.1e-7 to 4.3e-7, worst 8.2e-7 to
// 4.9e-3 over the Q4_0 V cases; without the reference's weight rounding the median is 1.1e-2 to
// 1.5e-2.
constexpr double kTolQ4KvMedian = 5e-5;
constexpr double kTolQ4KvWorst = 1e-1;

double tolerance(TensorType t) {
  if (t == TensorType::F32) return kTolF32;
  if (t == TensorType::F16 || t == TensorType::BF16) return kTolF16;
  return kTolQuant;
}

struct Variant {
  const char* name;
  test::SyntheticModelSpec spec;
};

std::vector<Variant> variants() {
  std::vector<Variant> v;
  test::SyntheticModelSpec llama;  // n_embd 256, 4 heads of 64, 2 KV heads, n_ff 512, vocab 300
  v.push_back({"llama", llama});
  test::SyntheticModelSpec llama3 = llama;
  llama3.rope_freqs = true;
  llama3.tied = true;
  llama3.rope_base = 500000.0f;
  v.push_back({"llama_rope_freqs_tied", llama3});
  test::SyntheticModelSpec partial = llama;
  partial.n_rot = 32;  // RoPE on half of each 64-wide head, the rest passes through
  partial.rope_scaling = "linear";
  partial.rope_scaling_factor = 4.0f;
  v.push_back({"llama_partial_rope_linear_x4", partial});
  test::SyntheticModelSpec qwen2 = llama;
  qwen2.arch = "qwen2";
  qwen2.tied = true;
  qwen2.n_head_kv = 1;
  v.push_back({"qwen2_bias_tied", qwen2});
  test::SyntheticModelSpec qwen3 = llama;
  qwen3.arch = "qwen3";
  qwen3.head_dim = 32;  // != n_embd / n_head = 64: wq is [256 -> 128], wo [128 -> 256] (q8_0 fallback for K-quants)
  qwen3.rope_base = 1000000.0f;
  v.push_back({"qwen3_qk_norm_head_dim_32", qwen3});
  return v;
}

// The variants a threading case runs: all of them, or under TSan the first (llama), since the
// architectures differ in shapes and weights, not in the forward pass's parallel_for partitions
// or threads (CMakeLists.txt, EDGELLM_TSAN_FILTER_engine_test_forward_vs_naive, picks the cases).
std::vector<Variant> threading_variants() {
  std::vector<Variant> v = variants();
  if (test::kThreadSanitized) v.resize(1);
  return v;
}

// The variants a case runs beside the F32-weight one: all of them, or under a sanitizer llama
// and qwen3 (head_dim 32, not n_embd / n_head: the one shape whose Q/K/V rows and attention
// tiles differ in size; the other variants change RoPE, biases and tying, which the F32 case
// runs whole under ASan). The plain build runs every variant at every ISA (label e2e); ASan's
// point is the buffers, and these two reach each buffer shape (45.8 s -> ~20 s under ASan).
std::vector<Variant> breadth_variants() {
  std::vector<Variant> v = threading_variants();
  if (test::kSanitized && !test::kThreadSanitized) {
    std::erase_if(v, [](const Variant& x) {
      return std::string_view(x.name) != "llama" && std::string_view(x.name) != "qwen3_qk_norm_head_dim_32";
    });
  }
  return v;
}

std::vector<int32_t> tokens_for(int seed, int n, int n_vocab) {
  std::vector<int32_t> t;
  uint32_t s = static_cast<uint32_t>(seed) * 2654435761u + 12345u;
  for (int i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    t.push_back(static_cast<int32_t>((s >> 8) % static_cast<uint32_t>(n_vocab)));
  }
  return t;
}

class ForwardVsNaive : public ::testing::TestWithParam<TensorType> {};

// Sequence A: 41 tokens prefilled in chunks of 16 with logits at every position.
// Sequence B: 9 tokens prefilled, then 36 decode steps, each batched with a step of sequence C
// (started one position later) — multi-sequence decode across block boundaries at 16 and 32.
// kv_type_v: the V cache type when it differs from kv_type. A Q4_0 cache is matched by a
// reference that rounds its K / V rows through Q4_0 itself (round_trip_q4_0).
void check_variant(const Variant& var, TensorType wt, TensorType kv_type, double tol,
                   std::optional<TensorType> kv_type_v = std::nullopt, double median_tol = 0, double quartile_tol = 0) {
  test::SyntheticModelSpec spec = var.spec;
  spec.weight_type = wt;
  spec.seed = 7 + static_cast<uint64_t>(wt);
  auto model = Model::from_gguf(test::synthetic_model(spec));
  const int32_t V = model->hparams().n_vocab;
  NaiveModel naive{*model};
  if (kv_type == TensorType::Q4_0) naive.round_k = round_trip_q4_0;
  if (kv_type_v.value_or(kv_type) == TensorType::Q4_0) naive.round_v = round_trip_q4_0;
  if (kv_type == TensorType::Q8_0) naive.round_k = round_trip_q8_0;
  if (kv_type_v.value_or(kv_type) == TensorType::Q8_0) naive.round_v = round_trip_q8_0;
  if (kv_type == TensorType::F16) naive.round_k = round_trip_f16;
  if (kv_type_v.value_or(kv_type) == TensorType::F16) naive.round_v = round_trip_f16;
  // Decode steps score Q8_0 / Q4_0 K against an int8 query where the ISA has integer scores;
  // prompt chunks (query blocks) keep F32 queries. So decode positions are matched by a
  // reference that rounds its queries the same way.
  NaiveModel naive_decode = naive;
  const bool int8_scores = (kv_type == TensorType::Q8_0 || kv_type == TensorType::Q4_0) &&
                           kernels::attention_kernels(kv_type, model->hparams().head_dim).scores_q8 != nullptr;
  if (int8_scores) naive_decode.round_q = round_trip_query_int8;
  // Decode steps sum Q4_0 V with int8 weights where the ISA has that kernel (and the KV blocks
  // hold whole 16-row tiles: cp.kv_block_tokens below is 16).
  const bool int8_weights = kv_type_v.value_or(kv_type) == TensorType::Q4_0 &&
                            kernels::attention_kernels(TensorType::Q4_0, model->hparams().head_dim).accumulate_weighted != nullptr;
  naive_decode.int8_value_weights = int8_weights;
  SCOPED_TRACE(std::string(var.name) + " weights " + tensor_type_name(wt) + " kv " + tensor_type_name(kv_type) + "/" +
               tensor_type_name(kv_type_v.value_or(kv_type)));

  ContextParams cp;
  cp.n_ctx = 64;
  cp.n_batch = 16;
  cp.n_seq_max = 3;
  cp.kv_type = kv_type;
  cp.kv_type_v = kv_type_v;
  cp.kv_block_tokens = 16;
  cp.n_threads = 2;
  Context ctx(*model, cp);
  std::vector<double> errors;  // every compared position
  const auto rel_error = [&errors](const float* got, const std::vector<double>& ref) {
    errors.push_back(edgellm::rel_error(got, ref));
    return errors.back();
  };

  // A: prefill, all logits.
  const auto ta = tokens_for(1, 41, V);
  const auto ref_a = naive.forward(ta);
  Batch b;
  for (size_t i = 0; i < ta.size(); ++i) b.add(0, ta[i], static_cast<int32_t>(i), true);
  ctx.decode(b);
  ASSERT_EQ(ctx.n_outputs(), 41);
  double worst = 0;
  for (int i = 0; i < 41; ++i) worst = std::max(worst, rel_error(ctx.logits(i), ref_a[static_cast<size_t>(i)]));
  EXPECT_LE(worst, tol) << "prefill of 41 tokens in chunks of 16";
  double overall = worst;

  // B and C: short prefills, then one step each per decode() call.
  const auto tb = tokens_for(2, 45, V);
  const auto tc = tokens_for(3, 44, V);
  const auto ref_b = naive.forward(tb);
  const auto ref_c = naive.forward(tc);
  // Decode from position 9 of B, 10 of C, and (after the truncation below) 20 of A.
  const auto decode_ref = [&](const std::vector<int32_t>& t, size_t from, const std::vector<std::vector<double>>& ref) {
    if (!int8_scores && !int8_weights) return ref;
    naive_decode.round_q_from = from;
    return naive_decode.forward(t);
  };
  const auto dec_b = decode_ref(tb, 9, ref_b);
  const auto dec_c = decode_ref(tc, 10, ref_c);
  const auto dec_a = decode_ref(ta, 20, ref_a);
  b.clear();
  b.add_sequence(1, std::vector<int32_t>(tb.begin(), tb.begin() + 9), 0);
  b.add_sequence(2, std::vector<int32_t>(tc.begin(), tc.begin() + 10), 0);
  ctx.decode(b);
  worst = std::max(rel_error(ctx.logits(0), ref_b[8]), rel_error(ctx.logits(1), ref_c[9]));
  EXPECT_LE(worst, tol) << "two-sequence prefill";
  overall = std::max(overall, worst);
  worst = 0;
  for (int step = 0; step < 34; ++step) {
    b.clear();
    b.add(2, tc[static_cast<size_t>(10 + step)], 10 + step, true);  // order inside a batch is free
    b.add(1, tb[static_cast<size_t>(9 + step)], 9 + step, true);
    ctx.decode(b);
    worst = std::max(worst, rel_error(ctx.logits(0), dec_c[static_cast<size_t>(10 + step)]));
    worst = std::max(worst, rel_error(ctx.logits(1), dec_b[static_cast<size_t>(9 + step)]));
  }
  EXPECT_LE(worst, tol) << "batched decode steps of two sequences";
  overall = std::max(overall, worst);
  EXPECT_EQ(ctx.seq_length(1), 43);
  EXPECT_EQ(ctx.seq_length(2), 44);

  // Truncate A and regenerate its tail with single-token steps: rewritten positions must match.
  ctx.seq_truncate(0, 20);
  worst = 0;
  for (int i = 20; i < 41; ++i) {
    b.clear();
    b.add(0, ta[static_cast<size_t>(i)], i, true);
    ctx.decode(b);
    worst = std::max(worst, rel_error(ctx.logits(0), dec_a[static_cast<size_t>(i)]));
  }
  EXPECT_LE(worst, tol) << "decode after truncation";
  overall = std::max(overall, worst);
  const ErrorStats stats = ErrorStats::of(errors);
  const double median = stats.median;
  if (median_tol > 0) {
    EXPECT_LE(median, median_tol) << "median over " << errors.size() << " positions";
  }
  if (quartile_tol > 0) {
    EXPECT_LE(stats.quartile, quartile_tol) << "lower quartile over " << errors.size() << " positions";
  }
  std::printf(
      "  %-28s weights %-5s kv %-5s/%-5s worst relative logit error %.2e (tolerance %.1e), quartile %.1e, "
      "median %.1e\n",
      var.name, tensor_type_name(wt), tensor_type_name(kv_type), tensor_type_name(kv_type_v.value_or(kv_type)), overall,
      tol, stats.quartile, median);
}

TEST_P(ForwardVsNaive, EveryArchitectureF32Kv) {
  const bool quantized = tensor_type_traits(GetParam()).is_quantized;
  for (const auto& v : GetParam() == TensorType::F32 ? threading_variants() : breadth_variants()) {
    check_variant(v, GetParam(), TensorType::F32, tolerance(GetParam()), std::nullopt, 0,
                  quantized ? kTolQuantQuartile : 0);
  }
}

INSTANTIATE_TEST_SUITE_P(WeightTypes, ForwardVsNaive,
                         ::testing::Values(TensorType::F32, TensorType::F16, TensorType::Q8_0, TensorType::Q4_0,
                                           TensorType::Q5_0, TensorType::Q4_K, TensorType::Q6_K),
                         [](const auto& info) { return std::string(tensor_type_name(info.param)); });

// Prompt attention by query blocks (engine/forward_attention.cpp) over several K/V tiles of 64
// positions: two sequences of 150 and 97 tokens, added 20 tokens of one then 20 of the other
// (chunks of 40 hold runs of both: blocks per sequence, up to 16 tokens; or one chunk of 256,
// whose FFN runs in slices), all logits, with KV blocks of 16 and of 24 (blocks that straddle
// the tile boundaries), against the naive pass. Then 5 decode steps of the first sequence.
void check_long_prompts(const Variant& var, TensorType kv_type, int32_t kv_block_tokens, int32_t n_batch, double tol) {
  auto model = Model::from_gguf(test::synthetic_model(var.spec));
  const int32_t V = model->hparams().n_vocab;
  NaiveModel naive{*model};
  if (kv_type == TensorType::F16) naive.round_k = naive.round_v = round_trip_f16;
  SCOPED_TRACE(std::string(var.name) + " kv " + tensor_type_name(kv_type) + " block " +
               std::to_string(kv_block_tokens) + " n_batch " + std::to_string(n_batch));
  ContextParams cp;
  cp.n_ctx = 192;
  cp.n_batch = n_batch;
  cp.n_seq_max = 2;
  cp.kv_type = kv_type;
  cp.kv_block_tokens = kv_block_tokens;
  cp.n_threads = 2;
  Context ctx(*model, cp);
  const auto ta = tokens_for(11, 155, V);
  const auto tb = tokens_for(12, 97, V);
  const auto ref_a = naive.forward(ta);
  const auto ref_b = naive.forward(tb);
  Batch b;
  std::vector<const std::vector<double>*> want;  // reference logits of each output, in order
  for (int i0 = 0; i0 < 150; i0 += 20) {
    for (int i = i0; i < i0 + 20 && i < 150; ++i) {
      b.add(0, ta[static_cast<size_t>(i)], i, true);
      want.push_back(&ref_a[static_cast<size_t>(i)]);
    }
    for (int i = i0; i < i0 + 20 && i < 97; ++i) {
      b.add(1, tb[static_cast<size_t>(i)], i, true);
      want.push_back(&ref_b[static_cast<size_t>(i)]);
    }
  }
  ctx.decode(b);
  ASSERT_EQ(ctx.n_outputs(), 150 + 97);
  double worst = 0;
  for (size_t o = 0; o < want.size(); ++o) {
    worst = std::max(worst, rel_error(ctx.logits(static_cast<int32_t>(o)), *want[o]));
  }
  EXPECT_LE(worst, tol) << "interleaved prompts of 150 and 97 tokens";
  for (int i = 150; i < 155; ++i) {
    b.clear();
    b.add(0, ta[static_cast<size_t>(i)], i, true);
    ctx.decode(b);
    worst = std::max(worst, rel_error(ctx.logits(0), ref_a[static_cast<size_t>(i)]));
  }
  EXPECT_LE(worst, tol) << "decode steps after the long prompt";
  std::printf("  %-28s kv %-5s block %2d long prompts: worst relative logit error %.2e (tolerance %.1e)\n", var.name,
              tensor_type_name(kv_type), kv_block_tokens, worst, tol);
}

TEST(ForwardVsNaiveLong, PromptBlocksAcrossKvTiles) {
  for (const auto& v : breadth_variants()) {
    check_long_prompts(v, TensorType::F32, 16, 40, kTolF32);
    // One chunk of all 247 tokens: the FFN runs in two slices (ForwardPass::kFfnTokens = 128).
    check_long_prompts(v, TensorType::F16, 24, 256, kTolF32 + kExtraF16Kv);
  }
}

// Quantized weights, one chunk of 300 tokens (10 sequences of 30, all logits) against the naive
// pass. Chunks of 32 tokens and more run the packed matmuls' prefill kernels over every token of
// the chunk at once (on an AMX host the tile kernels, with the tiled inputs made once per matmul
// input, kernels.h); the FFN then runs in two slices of 256 + 44 tokens there
// (ForwardPass::ffn_slice_tokens), three of 128 elsewhere. (The tests above use chunks of at most
// 16 quantized tokens, or F32 weights.) Ten sequences rather than one: an activation that the
// engine (float) and the reference (double) round to neighbouring codes changes every later
// position of its sequence (kTolQuantQuartile), so one long sequence would leave no position to
// hold to the tight bound.
TEST(ForwardVsNaiveLong, QuantizedPromptInOneChunk) {
  constexpr int kSeqs = 10, kLen = 30;
  for (const TensorType wt : {TensorType::Q4_0, TensorType::Q4_K, TensorType::Q6_K}) {
    test::SyntheticModelSpec spec = variants()[0].spec;
    spec.weight_type = wt;
    spec.seed = 31 + static_cast<uint64_t>(wt);
    auto model = Model::from_gguf(test::synthetic_model(spec));
    NaiveModel naive{*model};
    SCOPED_TRACE(std::string("weights ") + tensor_type_name(wt));
    ContextParams cp;
    cp.n_ctx = 32;
    cp.n_batch = 512;
    cp.n_seq_max = kSeqs;
    cp.n_threads = 2;
    cp.kv_type = TensorType::F32;  // the weights' kernels alone (the default F16 cache adds its own rounding)
    Context ctx(*model, cp);
    Batch b;
    std::vector<std::vector<double>> ref;  // per output, in batch order
    for (int s = 0; s < kSeqs; ++s) {
      const auto t = tokens_for(41 + s, kLen, model->hparams().n_vocab);
      const auto r = naive.forward(t);
      ref.insert(ref.end(), r.begin(), r.end());
      for (int i = 0; i < kLen; ++i) b.add(s, t[static_cast<size_t>(i)], i, true);
    }
    ctx.decode(b);
    ASSERT_EQ(ctx.n_outputs(), kSeqs * kLen);
    std::vector<double> errors;
    for (int i = 0; i < kSeqs * kLen; ++i) errors.push_back(rel_error(ctx.logits(i), ref[static_cast<size_t>(i)]));
    const ErrorStats e = ErrorStats::of(errors);
    EXPECT_LE(e.worst, kTolQuant);
    EXPECT_LE(e.quartile, kTolQuantQuartile) << "a quarter of the positions or more differ by more than rounding";
    std::printf(
        "  weights %-5s one chunk of %d tokens (%d sequences): worst relative logit error %.2e (tolerance "
        "%.1e), quartile %.1e (tolerance %.0e), median %.1e\n",
        tensor_type_name(wt), kSeqs * kLen, kSeqs, e.worst, kTolQuant, e.quartile, kTolQuantQuartile, e.median);
  }
}

// Long context: RoPE base 1e6 (Qwen 2.5/3) at 4k+ positions, where an angle computed in low
// precision or a position table that wraps or saturates goes wrong while every test at <= 512
// positions passes. Narrow one-layer models (both rotation styles) so the O(T^2) double
// reference stays cheap: 4096 tokens prefilled in chunks of 512, then 64 single-token decode
// steps (positions 4096..4159), compared at every 61st prefill position, the last 32 of the
// prefill and every decode step.
void check_long_context(const char* arch, TensorType kv_type, double tol,
                        std::optional<TensorType> kv_type_v = std::nullopt) {
  test::SyntheticModelSpec spec;
  spec.arch = arch;
  spec.n_embd = 64;
  spec.n_head = 2;
  spec.n_head_kv = 1;
  spec.n_ff = 128;
  spec.n_layer = 1;
  spec.n_ctx_train = 8192;
  spec.rope_base = 1000000.0f;
  spec.seed = 21;
  auto model = Model::from_gguf(test::synthetic_model(spec));
  const int32_t V = model->hparams().n_vocab;
  NaiveModel naive{*model};
  SCOPED_TRACE(std::string(arch) + " long context, kv " + tensor_type_name(kv_type) + "/" +
               tensor_type_name(kv_type_v.value_or(kv_type)));
  constexpr int kPrefill = 4096, kDecode = 64;
  if (kv_type_v == TensorType::Q4_0) {
    // Q4_0 V: the reference rounds its V rows through Q4_0, and its decode steps' weights as the
    // int8-weighted V sum does where the ISA has it (16 calls of 256 positions per step here).
    naive.round_v = round_trip_q4_0;
    naive.int8_value_weights = kernels::attention_kernels(TensorType::Q4_0, model->hparams().head_dim)
                                   .accumulate_weighted != nullptr;
    naive.round_q_from = kPrefill;
  }
  ContextParams cp;
  cp.n_ctx = kPrefill + kDecode;
  cp.n_batch = 512;
  cp.n_seq_max = 1;
  cp.kv_type = kv_type;
  cp.kv_type_v = kv_type_v;
  cp.n_threads = 2;
  Context ctx(*model, cp);
  const auto tokens = tokens_for(31, kPrefill + kDecode, V);
  const auto compared = [](int i) { return i % 61 == 0 || i >= kPrefill - 32; };  // and every decode step
  std::vector<bool> wanted(static_cast<size_t>(kPrefill + kDecode), true);
  for (int i = 0; i < kPrefill; ++i) wanted[static_cast<size_t>(i)] = compared(i);
  const auto ref = naive.forward(tokens, &wanted);
  std::vector<int> checked;
  Batch b;
  for (int i = 0; i < kPrefill; ++i) {
    const bool out = compared(i);
    b.add(0, tokens[static_cast<size_t>(i)], i, out);
    if (out) checked.push_back(i);
  }
  ctx.decode(b);
  ASSERT_EQ(ctx.n_outputs(), static_cast<int32_t>(checked.size()));
  double worst_prefill = 0, worst_far = 0;
  for (size_t o = 0; o < checked.size(); ++o) {
    const double e = rel_error(ctx.logits(static_cast<int32_t>(o)), ref[static_cast<size_t>(checked[o])]);
    worst_prefill = std::max(worst_prefill, e);
    if (checked[o] >= 2048) worst_far = std::max(worst_far, e);
  }
  EXPECT_LE(worst_prefill, tol) << "prefill of 4096 tokens (worst beyond position 2048: " << worst_far << ")";
  double worst_decode = 0;
  for (int i = kPrefill; i < kPrefill + kDecode; ++i) {
    b.clear();
    b.add(0, tokens[static_cast<size_t>(i)], i, true);
    ctx.decode(b);
    worst_decode = std::max(worst_decode, rel_error(ctx.logits(0), ref[static_cast<size_t>(i)]));
  }
  EXPECT_LE(worst_decode, tol) << "decode steps at positions 4096..4159";
  std::printf("  %-6s kv %-5s/%-5s 4160 positions, rope base 1e6: worst relative logit error prefill %.2e (beyond "
              "2048: %.2e), decode %.2e (tolerance %.1e)\n",
              arch, tensor_type_name(kv_type), tensor_type_name(kv_type_v.value_or(kv_type)), worst_prefill, worst_far,
              worst_decode, tol);
}

TEST(ForwardVsNaiveLong, RopeBase1e6At4kPositions) {
  check_long_context("llama", TensorType::F32, kTolF32Long);
  check_long_context("qwen3", TensorType::F32, kTolF32Long);
  // Q4_0 V at 4160 positions: decode steps sum V with int8 weights over 17 calls of up to 256
  // positions (the engine's tiles and call offsets past the first 256) where the ISA has it.
  check_long_context("llama", TensorType::F32, kTolQ4VLong, TensorType::Q4_0);
}

TEST(ForwardVsNaiveKv, F16AndQ8_0KvCache) {
  for (const auto& v : breadth_variants()) {
    check_variant(v, TensorType::F32, TensorType::F16, kTolF32 + kExtraF16Kv);
    // Q8_0 KV against the reference that rounds its K / V rows through Q8_0 (and its decode
    // queries to int8 where the ISA scores with them): kTolQ8Kv*.
    if (v.spec.head_dim == 0 || v.spec.head_dim % 32 == 0) {
      check_variant(v, TensorType::F32, TensorType::Q8_0, kTolQ8KvWorst, std::nullopt, 0, kTolQ8KvQuartile);
    }
  }
}

// Q4_0 KV (attention reads the 4-bit blocks in place) against the reference that rounds its own
// K and V rows through Q4_0 (kTolQ4Kv*), every architecture; K F32 / V Q4_0 and K Q4_0 / V F32
// (rows of different sizes in one cache) on two of them (head_dim 64 and 32).
TEST(ForwardVsNaiveKv, Q4_0KvCacheAgainstAQ4_0RoundingReference) {
  for (const auto& v : breadth_variants()) {
    check_variant(v, TensorType::F32, TensorType::Q4_0, kTolQ4KvWorst, std::nullopt, kTolQ4KvMedian);
    const std::string name = v.name;
    if (name == "llama" || name == "qwen3_qk_norm_head_dim_32") {
      check_variant(v, TensorType::F32, TensorType::F32, kTolQ4KvWorst, TensorType::Q4_0, kTolQ4KvMedian);
      check_variant(v, TensorType::F32, TensorType::Q4_0, kTolQ4KvWorst, TensorType::F32, kTolQ4KvMedian);
    }
  }
}

}  // namespace
}  // namespace edgellm
