// Vector ops of every ISA against naive double-precision loops written here.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "core/fp16.h"
#include "kernels/kernels.h"

namespace edgellm::kernels {
namespace {

// Dot products: F32 rounding of up to 1000 products and their sum, relative to sum |a b|.
constexpr double kDotRelTol = 1e-5;
// Element-wise ops: a few F32 roundings per element (relative).
constexpr double kElementRelTol = 1e-6;
// exp-based ops (softmax, silu): the SIMD exp polynomial is accurate to a few ulp.
constexpr double kExpRelTol = 2e-6;

std::vector<float> randn(size_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = g(rng);
  return v;
}

std::vector<uint16_t> to_f16(const std::vector<float>& x) {
  std::vector<uint16_t> h(x.size());
  for (size_t i = 0; i < x.size(); ++i) h[i] = fp32_to_fp16(x[i]);
  return h;
}

class VectorOps : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    saved_ = active_isa();
    set_active_isa(GetParam());
  }
  void TearDown() override { set_active_isa(saved_); }
  Isa saved_ = Isa::kScalar;
};

// Lengths around vector widths and unroll factors, including 0 and 1.
const int64_t kLengths[] = {0, 1, 7, 8, 15, 16, 17, 31, 33, 64, 100, 128, 257, 1000};

TEST_P(VectorOps, Dots) {
  for (int64_t n : kLengths) {
    const auto a = randn(static_cast<size_t>(n), 1), b = randn(static_cast<size_t>(n), 2);
    const auto ah = to_f16(a);
    double ref = 0, ref_h = 0, scale = 0, scale_h = 0;
    for (int64_t i = 0; i < n; ++i) {
      ref += static_cast<double>(a[i]) * b[i];
      scale += std::fabs(static_cast<double>(a[i]) * b[i]);
      const double ha = fp16_to_fp32(ah[i]);
      ref_h += ha * b[i];
      scale_h += std::fabs(ha * b[i]);
    }
    EXPECT_NEAR(dot_f32(a.data(), b.data(), n), ref, kDotRelTol * scale + 1e-30) << "n=" << n;
    EXPECT_NEAR(dot_f16_f32(ah.data(), b.data(), n), ref_h, kDotRelTol * scale_h + 1e-30) << "n=" << n;
  }
}

TEST_P(VectorOps, AxpyScaleAdd) {
  for (int64_t n : kLengths) {
    const auto x = randn(static_cast<size_t>(n), 3), y0 = randn(static_cast<size_t>(n), 4);
    const auto xh = to_f16(x);
    const float a = 0.37f;
    std::vector<float> y = y0, yh = y0, s = x, sum(static_cast<size_t>(n));
    axpy_f32(a, x.data(), y.data(), n);
    axpy_f16(a, xh.data(), yh.data(), n);
    scale_f32(s.data(), -1.5f, n);
    add_f32(x.data(), y0.data(), sum.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const double e1 = y0[i] + static_cast<double>(a) * x[i];
      const double e2 = y0[i] + static_cast<double>(a) * fp16_to_fp32(xh[i]);
      EXPECT_NEAR(y[i], e1, kElementRelTol * (std::fabs(y0[i]) + std::fabs(a * x[i])) + 1e-30);
      EXPECT_NEAR(yh[i], e2, kElementRelTol * (std::fabs(y0[i]) + std::fabs(a * x[i])) + 1e-30);
      EXPECT_EQ(s[i], x[i] * -1.5f);
      EXPECT_EQ(sum[i], x[i] + y0[i]);
    }
  }
  // add_f32 may alias its output with an input.
  auto a = randn(100, 5);
  const auto b = randn(100, 6), a0 = a;
  add_f32(a.data(), b.data(), a.data(), 100);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a[i], a0[i] + b[i]);
}

TEST_P(VectorOps, RmsNorm) {
  for (int64_t n : kLengths) {
    if (n == 0) continue;
    const auto x = randn(static_cast<size_t>(n), 7, 3.0f), w = randn(static_cast<size_t>(n), 8);
    const float eps = 1e-5f;
    double ss = 0;
    for (float v : x) ss += static_cast<double>(v) * v;
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
    std::vector<float> y(static_cast<size_t>(n));
    rms_norm(x.data(), w.data(), y.data(), n, eps);
    for (int64_t i = 0; i < n; ++i) {
      const double e = x[i] * inv * w[i];
      EXPECT_NEAR(y[i], e, 4 * kElementRelTol * std::fabs(e) + 1e-30) << "n=" << n << " i=" << i;
    }
    std::vector<float> inplace = x;  // y may alias x
    rms_norm(inplace.data(), w.data(), inplace.data(), n, eps);
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(inplace[i], y[i]);
  }
}

TEST_P(VectorOps, Softmax) {
  for (int64_t n : kLengths) {
    if (n == 0) continue;
    auto x = randn(static_cast<size_t>(n), 9, 4.0f);
    if (n > 3) x[2] = -INFINITY;  // masked entry
    std::vector<double> e(x.size());
    double mx = -INFINITY, sum = 0;
    for (float v : x) mx = std::max<double>(mx, v);
    for (size_t i = 0; i < x.size(); ++i) sum += e[i] = std::exp(static_cast<double>(x[i]) - mx);
    softmax(x.data(), n);
    double total = 0;
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_NEAR(x[i], e[i] / sum, kExpRelTol * e[i] / sum + 1e-12) << "n=" << n << " i=" << i;
      total += x[i];
    }
    if (n > 3) {
      EXPECT_EQ(x[2], 0.0f);
    }
    EXPECT_NEAR(total, 1.0, 1e-5);
  }
  std::vector<float> all_masked(20, -INFINITY);
  softmax(all_masked.data(), 20);
  for (float v : all_masked) EXPECT_EQ(v, 0.0f);
  std::vector<float> big = {1000.0f, 999.0f, -1000.0f};  // no overflow thanks to max subtraction
  softmax(big.data(), 3);
  EXPECT_NEAR(big[0], 1 / (1 + std::exp(-1.0)), 1e-6);
}

TEST_P(VectorOps, SiluMul) {
  for (int64_t n : kLengths) {
    auto g = randn(static_cast<size_t>(n), 10, 5.0f);
    const auto u = randn(static_cast<size_t>(n), 11);
    if (n > 4) {
      g[0] = 100.0f;  // silu(100) = 100
      g[1] = -100.0f; // silu(-100) ~ -3.7e-42: tiny
      g[3] = 0.0f;
    }
    std::vector<float> out(static_cast<size_t>(n));
    silu_mul(g.data(), u.data(), out.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const double e = g[i] / (1.0 + std::exp(-static_cast<double>(g[i]))) * u[i];
      EXPECT_NEAR(out[i], e, kExpRelTol * std::fabs(e) + 1e-30) << "n=" << n << " g=" << g[i];
    }
    silu_mul(g.data(), u.data(), g.data(), n);  // out may alias gate
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(g[i], out[i]);
  }
}

// silu_mul is the same computation at every x86 width (the AVX-512 exp at 16 lanes is the AVX2
// one at 8): AVX-512 equals AVX2 bit for bit, tails included (lengths around 8 and 16).
TEST(VectorOpsX86, SiluMulAvx512EqualsAvx2) {
  const auto isas = supported_isas();
  if (std::find(isas.begin(), isas.end(), Isa::kAvx512) == isas.end())
    GTEST_SKIP() << "NOT CHECKED ON THIS HOST: no AVX-512 on this CPU";
  const Isa saved = active_isa();
  for (int64_t n : kLengths) {
    auto g = randn(static_cast<size_t>(n), 20, 6.0f);
    const auto u = randn(static_cast<size_t>(n), 21);
    if (n > 4) g[2] = -95.0f;  // exp(-g) past the clamp: +inf, so silu = -0 x up
    std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
    set_active_isa(Isa::kAvx2);
    silu_mul(g.data(), u.data(), want.data(), n);
    set_active_isa(Isa::kAvx512);
    silu_mul(g.data(), u.data(), got.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i])) << "n=" << n << " i=" << i;
    }
  }
  set_active_isa(saved);
}

INSTANTIATE_TEST_SUITE_P(Isas, VectorOps, ::testing::ValuesIn(supported_isas()),
                         [](const ::testing::TestParamInfo<Isa>& info) { return std::string(isa_name(info.param)); });

}  // namespace
}  // namespace edgellm::kernels
