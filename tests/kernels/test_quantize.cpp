// Reference quantizers: ggml-identical bytes for the legacy types (checked against naive
// implementations of ggml's formulas written here), round-trip error per type, K-quant quality
// at least as good as the plain min/max rule, and activation quantization identical on every ISA.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/fp16.h"
#include "kernels/blocks.h"
#include "kernels/kernels.h"

namespace edgellm::kernels {
namespace {

// Round-trip RMSE / RMS(x) for Gaussian data, per type. Theory for a uniform b-bit grid over
// roughly +-3 sigma gives ~ 6 / 2^b / sqrt(12) of the RMS: 4 bits ~0.11, 5 bits ~0.055,
// 6 bits ~0.027, 8 bits ~0.007; per-block adaptive scales do better (blocks rarely reach 3 sigma).
// Thresholds sit ~20% above the values these ggml-equivalent reference quantizers measure here
// (Q4_0 0.086, Q4_1 0.078, Q5_0 0.042, Q5_1 0.038, Q8_0 0.0053, Q4_K 0.071, Q5_K 0.036, Q6_K 0.0177).
constexpr double kMaxRelRmse_Q4_0 = 0.10;
constexpr double kMaxRelRmse_Q4_1 = 0.094;
constexpr double kMaxRelRmse_Q5_0 = 0.051;
constexpr double kMaxRelRmse_Q5_1 = 0.046;
constexpr double kMaxRelRmse_Q8_0 = 0.0065;
constexpr double kMaxRelRmse_Q4_K = 0.086;
constexpr double kMaxRelRmse_Q5_K = 0.044;
constexpr double kMaxRelRmse_Q6_K = 0.0215;
// F16 keeps 11 significant bits (relative error <= 2^-11), BF16 8 bits (<= 2^-8).
constexpr double kMaxRelRmse_F16 = 1.0 / 2048;
constexpr double kMaxRelRmse_BF16 = 1.0 / 256;

std::vector<float> gaussian(size_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = g(rng);
  return v;
}

double rel_rmse(TensorType type, const std::vector<float>& x) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> q(tensor_row_bytes(type, n));
  quantize_row(type, x.data(), q.data(), n);
  std::vector<float> y(x.size());
  dequantize_row(type, q.data(), y.data(), n);
  double err = 0, ref = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    err += (static_cast<double>(x[i]) - y[i]) * (static_cast<double>(x[i]) - y[i]);
    ref += static_cast<double>(x[i]) * x[i];
  }
  return std::sqrt(err / ref);
}

TEST(Quantize, RoundTripErrorPerType) {
  const std::vector<float> x = gaussian(256 * 64, 7);
  struct Case {
    TensorType type;
    double max_rel_rmse;
  };
  const Case cases[] = {
      {TensorType::Q4_0, kMaxRelRmse_Q4_0}, {TensorType::Q4_1, kMaxRelRmse_Q4_1}, {TensorType::Q5_0, kMaxRelRmse_Q5_0},
      {TensorType::Q5_1, kMaxRelRmse_Q5_1}, {TensorType::Q8_0, kMaxRelRmse_Q8_0}, {TensorType::Q4_K, kMaxRelRmse_Q4_K},
      {TensorType::Q5_K, kMaxRelRmse_Q5_K}, {TensorType::Q6_K, kMaxRelRmse_Q6_K}, {TensorType::F16, kMaxRelRmse_F16},
      {TensorType::BF16, kMaxRelRmse_BF16},
  };
  for (const Case& c : cases) {
    const double e = rel_rmse(c.type, x);
    EXPECT_LT(e, c.max_rel_rmse) << tensor_type_name(c.type);
    EXPECT_GT(e, 0.0) << tensor_type_name(c.type) << " cannot be lossless on Gaussian data";
    std::printf("  %-5s relative RMSE %.5f (limit %.5f)\n", tensor_type_name(c.type), e, c.max_rel_rmse);
  }
  EXPECT_EQ(rel_rmse(TensorType::F32, x), 0.0);
}

// ---- naive ggml formulas for the legacy types (written independently of src/kernels)

float absmax_signed(const float* x, int n) {
  float amax = 0, m = 0;
  for (int j = 0; j < n; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      m = x[j];
    }
  }
  return m;
}

std::vector<uint8_t> naive_q4_0(const std::vector<float>& x) {
  std::vector<uint8_t> out;
  for (size_t b = 0; b < x.size() / 32; ++b) {
    const float* v = &x[b * 32];
    const float d = absmax_signed(v, 32) / -8;
    const float id = d == 0 ? 0.0f : 1.0f / d;
    const uint16_t dh = fp32_to_fp16(d);
    out.push_back(static_cast<uint8_t>(dh & 0xFF));
    out.push_back(static_cast<uint8_t>(dh >> 8));
    for (int j = 0; j < 16; ++j) {
      int lo = static_cast<int8_t>(v[j] * id + 8.5f);
      int hi = static_cast<int8_t>(v[j + 16] * id + 8.5f);
      lo = lo > 15 ? 15 : lo;
      hi = hi > 15 ? 15 : hi;
      out.push_back(static_cast<uint8_t>(lo | (hi << 4)));
    }
  }
  return out;
}

std::vector<uint8_t> naive_q8_0(const std::vector<float>& x) {
  std::vector<uint8_t> out;
  for (size_t b = 0; b < x.size() / 32; ++b) {
    const float* v = &x[b * 32];
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(v[j]));
    const float d = amax / 127;
    const float id = d == 0 ? 0.0f : 1.0f / d;
    const uint16_t dh = fp32_to_fp16(d);
    out.push_back(static_cast<uint8_t>(dh & 0xFF));
    out.push_back(static_cast<uint8_t>(dh >> 8));
    for (int j = 0; j < 32; ++j) out.push_back(static_cast<uint8_t>(static_cast<int8_t>(std::roundf(v[j] * id))));
  }
  return out;
}

std::vector<uint8_t> naive_q5_0(const std::vector<float>& x) {
  std::vector<uint8_t> out;
  for (size_t b = 0; b < x.size() / 32; ++b) {
    const float* v = &x[b * 32];
    const float d = absmax_signed(v, 32) / -16;
    const float id = d == 0 ? 0.0f : 1.0f / d;
    const uint16_t dh = fp32_to_fp16(d);
    uint8_t q[32];
    for (int j = 0; j < 32; ++j) {
      const int c = static_cast<int8_t>(v[j] * id + 16.5f);
      q[j] = static_cast<uint8_t>(c > 31 ? 31 : c);
    }
    uint32_t qh = 0;
    for (int j = 0; j < 32; ++j) qh |= static_cast<uint32_t>(q[j] >> 4) << j;
    out.push_back(static_cast<uint8_t>(dh & 0xFF));
    out.push_back(static_cast<uint8_t>(dh >> 8));
    for (int k = 0; k < 4; ++k) out.push_back(static_cast<uint8_t>(qh >> (8 * k)));
    for (int j = 0; j < 16; ++j) out.push_back(static_cast<uint8_t>((q[j] & 15) | ((q[j + 16] & 15) << 4)));
  }
  return out;
}

// Q4_1 (bits = 4, clamp 15) and Q5_1 (bits = 5, no clamp), as in ggml.
std::vector<uint8_t> naive_q_1(const std::vector<float>& x, int bits) {
  std::vector<uint8_t> out;
  for (size_t b = 0; b < x.size() / 32; ++b) {
    const float* v = &x[b * 32];
    const float mn = *std::min_element(v, v + 32), mx = *std::max_element(v, v + 32);
    const float d = (mx - mn) / static_cast<float>((1 << bits) - 1);
    const float id = d == 0 ? 0.0f : 1.0f / d;
    uint8_t q[32];
    for (int j = 0; j < 32; ++j) {
      if (bits == 4) {
        const int c = static_cast<int8_t>((v[j] - mn) * id + 0.5f);
        q[j] = static_cast<uint8_t>(c > 15 ? 15 : c);
      } else {
        q[j] = static_cast<uint8_t>((v[j] - mn) * id + 0.5f);
      }
    }
    const uint16_t dh = fp32_to_fp16(d), mh = fp32_to_fp16(mn);
    out.push_back(static_cast<uint8_t>(dh & 0xFF));
    out.push_back(static_cast<uint8_t>(dh >> 8));
    out.push_back(static_cast<uint8_t>(mh & 0xFF));
    out.push_back(static_cast<uint8_t>(mh >> 8));
    if (bits == 5) {
      uint32_t qh = 0;
      for (int j = 0; j < 32; ++j) qh |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
      for (int k = 0; k < 4; ++k) out.push_back(static_cast<uint8_t>(qh >> (8 * k)));
    }
    for (int j = 0; j < 16; ++j) out.push_back(static_cast<uint8_t>((q[j] & 15) | ((q[j + 16] & 15) << 4)));
  }
  return out;
}

std::vector<uint8_t> quantized(TensorType type, const std::vector<float>& x) {
  std::vector<uint8_t> q(tensor_row_bytes(type, static_cast<int64_t>(x.size())));
  quantize_row(type, x.data(), q.data(), static_cast<int64_t>(x.size()));
  return q;
}

// Inputs with awkward blocks: zeros, exact ties, a lone outlier, tiny and huge magnitudes.
std::vector<float> tricky_input() {
  std::vector<float> x = gaussian(32 * 40, 11, 3.0f);
  for (int j = 0; j < 32; ++j) x[j] = 0.0f;                                 // block 0: all zero
  for (int j = 0; j < 32; ++j) x[32 + j] = static_cast<float>(j % 17 - 8);  // block 1: integers (ties)
  x[64 + 5] = 1000.0f;                                                     // block 2: outlier
  for (int j = 0; j < 32; ++j) x[96 + j] = 1e-6f * static_cast<float>(j - 16);
  for (int j = 0; j < 32; ++j) x[128 + j] = -0.5f + static_cast<float>(j) / 31.0f;
  for (int j = 0; j < 32; ++j) x[160 + j] = 60000.0f * std::sin(static_cast<float>(j));
  return x;
}

TEST(Quantize, LegacyTypesMatchGgmlFormulasByteForByte) {
  for (const std::vector<float>& x : {gaussian(32 * 300, 3), tricky_input()}) {
    EXPECT_EQ(quantized(TensorType::Q4_0, x), naive_q4_0(x));
    EXPECT_EQ(quantized(TensorType::Q8_0, x), naive_q8_0(x));
    EXPECT_EQ(quantized(TensorType::Q5_0, x), naive_q5_0(x));
    EXPECT_EQ(quantized(TensorType::Q4_1, x), naive_q_1(x, 4));
    EXPECT_EQ(quantized(TensorType::Q5_1, x), naive_q_1(x, 5));
  }
}

TEST(Quantize, Q4_0HandComputedBlock) {
  // x = j - 16 for j in [0, 32): max magnitude -16 -> d = -16 / -8 = 2, id = 0.5;
  // q = trunc(x * 0.5 + 8.5): x = -16 -> 0.5 -> 0; x = -1 -> 8.0 -> 8; x = 15 -> 16 -> min(15) = 15.
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j - 16);
  BlockQ4_0 b;
  quantize_row(TensorType::Q4_0, x.data(), &b, 32);
  EXPECT_EQ(b.d, 0x4000);                    // 2.0
  EXPECT_EQ(b.qs[0] & 0xF, 0);               // x[0] = -16
  EXPECT_EQ(b.qs[15] & 0xF, 8);              // x[15] = -1 -> 8.0
  EXPECT_EQ(b.qs[15] >> 4, 15);              // x[31] = 15 -> 16.0 clamped
  EXPECT_EQ(b.qs[0] >> 4, 8);                // x[16] = 0 -> 8.5 -> 8
}

// Plain min/max rule for Q4_K/Q5_K (no scale search): per 32-element sub-block
// scale = (max - min)/nmax with min clamped to <= 0, both rounded to 6 bits against their maxima.
double plain_k_rmse(const std::vector<float>& x, int nmax) {
  double err = 0;
  for (size_t sb = 0; sb < x.size() / 256; ++sb) {
    float sc[8], mn[8], max_sc = 0, max_mn = 0;
    for (int j = 0; j < 8; ++j) {
      const float* v = &x[sb * 256 + 32 * j];
      const float lo = std::min(0.0f, *std::min_element(v, v + 32)), hi = *std::max_element(v, v + 32);
      sc[j] = (hi - lo) / static_cast<float>(nmax);
      mn[j] = -lo;
      max_sc = std::max(max_sc, sc[j]);
      max_mn = std::max(max_mn, mn[j]);
    }
    const float d = fp16_to_fp32(fp32_to_fp16(max_sc / 63)), dmin = fp16_to_fp32(fp32_to_fp16(max_mn / 63));
    for (int j = 0; j < 8; ++j) {
      const float s = d * std::min(63.0f, std::round(sc[j] / (max_sc / 63)));
      const float m = dmin * std::min(63.0f, std::round(mn[j] / (max_mn / 63)));
      for (int l = 0; l < 32; ++l) {
        const float v = x[sb * 256 + 32 * j + l];
        const float q = s > 0 ? std::clamp(std::round((v + m) / s), 0.0f, static_cast<float>(nmax)) : 0.0f;
        err += std::pow(static_cast<double>(s * q - m - v), 2);
      }
    }
  }
  return std::sqrt(err / static_cast<double>(x.size()));
}

// Plain rule for Q6_K: per 16-element group scale = absmax / 31.5 (symmetric), int8 group scales.
double plain_q6k_rmse(const std::vector<float>& x) {
  double err = 0;
  for (size_t sb = 0; sb < x.size() / 256; ++sb) {
    float sc[16], max_sc = 0;
    for (int j = 0; j < 16; ++j) {
      float a = 0;
      for (int l = 0; l < 16; ++l) a = std::max(a, std::fabs(x[sb * 256 + 16 * j + l]));
      sc[j] = a / 31.5f;
      max_sc = std::max(max_sc, sc[j]);
    }
    const float d = fp16_to_fp32(fp32_to_fp16(max_sc / 127));
    for (int j = 0; j < 16; ++j) {
      const float s = d * std::min(127.0f, std::round(sc[j] / (max_sc / 127)));
      for (int l = 0; l < 16; ++l) {
        const float v = x[sb * 256 + 16 * j + l];
        const float q = s > 0 ? std::clamp(std::round(v / s), -32.0f, 31.0f) : 0.0f;
        err += std::pow(static_cast<double>(s * q - v), 2);
      }
    }
  }
  return std::sqrt(err / static_cast<double>(x.size()));
}

TEST(Quantize, KQuantsNoWorseThanPlainRule) {
  const std::vector<float> x = gaussian(256 * 64, 21);
  double rms = 0;
  for (float v : x) rms += static_cast<double>(v) * v;
  rms = std::sqrt(rms / static_cast<double>(x.size()));
  EXPECT_LE(rel_rmse(TensorType::Q4_K, x), plain_k_rmse(x, 15) / rms);
  EXPECT_LE(rel_rmse(TensorType::Q5_K, x), plain_k_rmse(x, 31) / rms);
  EXPECT_LE(rel_rmse(TensorType::Q6_K, x), plain_q6k_rmse(x) / rms);
}

TEST(Quantize, DeterministicAndZeroSafe) {
  const std::vector<float> x = gaussian(256 * 4, 5);
  const std::vector<float> zeros(256 * 2, 0.0f);
  for (TensorType t : {TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1, TensorType::Q8_0,
                       TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K, TensorType::Q8_K, TensorType::Q8_1}) {
    EXPECT_EQ(quantized(t, x), quantized(t, x)) << tensor_type_name(t);
    const std::vector<uint8_t> q = quantized(t, zeros);
    std::vector<float> y(zeros.size(), 1.0f);
    dequantize_row(t, q.data(), y.data(), static_cast<int64_t>(y.size()));
    for (float v : y) ASSERT_EQ(v, 0.0f) << tensor_type_name(t);
  }
}

TEST(Quantize, ActivationBytesIdenticalOnEveryIsa) {
  // Every ISA must produce exactly the scalar activation bytes (Q8_0 rounds half away from zero
  // with id = 1/d like ggml's reference; Q8_K uses round-half-even), so results never depend on
  // the ISA beyond float summation order.
  std::vector<float> x = gaussian(256 * 17, 8, 2.0f);
  for (int j = 0; j < 64; ++j) x[j] = static_cast<float>(j % 9) - 4.0f;  // exact ties after scaling
  for (int j = 64; j < 96; ++j) x[j] = 0.0f;
  // Q8_K's scale takes the sign of the FIRST element of largest magnitude: ties of opposite sign
  // far apart (positions 37 and 100 of block 3) and within one group of 8 (13 and 14 of block 4).
  x[768 + 37] = 30.0f;
  x[768 + 100] = -30.0f;
  x[1024 + 13] = -30.0f;
  x[1024 + 14] = 30.0f;
  const int64_t n = static_cast<int64_t>(x.size());
  const Isa saved = active_isa();
  for (TensorType wt : {TensorType::Q4_0, TensorType::Q4_1, TensorType::Q4_K, TensorType::F16, TensorType::F32}) {
    std::vector<uint8_t> ref;
    for (Isa isa : supported_isas()) {
      set_active_isa(isa);
      std::vector<uint8_t> q(activation_row_bytes(wt, n));
      quantize_activation_row(wt, x.data(), q.data(), n);
      if (ref.empty()) {
        ref = q;
      } else {
        ASSERT_EQ(q, ref) << tensor_type_name(wt) << " activations differ on " << isa_name(isa);
      }
    }
  }
  set_active_isa(saved);
}

TEST(Quantize, ActivationTypes) {
  EXPECT_EQ(activation_type(TensorType::Q4_0), TensorType::Q8_0);
  EXPECT_EQ(activation_type(TensorType::Q5_0), TensorType::Q8_0);
  EXPECT_EQ(activation_type(TensorType::Q8_0), TensorType::Q8_0);
  EXPECT_EQ(activation_type(TensorType::Q4_1), TensorType::Q8_1);
  EXPECT_EQ(activation_type(TensorType::Q5_1), TensorType::Q8_1);
  EXPECT_EQ(activation_type(TensorType::Q4_K), TensorType::Q8_K);
  EXPECT_EQ(activation_type(TensorType::Q6_K), TensorType::Q8_K);
  EXPECT_EQ(activation_type(TensorType::F16), TensorType::F32);
  EXPECT_EQ(activation_type(TensorType::BF16), TensorType::F32);
  EXPECT_EQ(activation_row_bytes(TensorType::Q4_K, 512), 2 * sizeof(BlockQ8_K));
}

}  // namespace
}  // namespace edgellm::kernels
