// gemm_f32 (kernels.h), the F32 GEMM of prefill attention: the scalar reference against a
// double-precision product written here, and every ISA bit for bit against the scalar reference
// (each element is the same FMA chain in the same order, then * alpha, then + C).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/kernels.h"
#include "support/isa_guard.h"

namespace edgellm::kernels {
namespace {

constexpr float kGuard = -12345.0f;

std::vector<float> randn(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = g(rng);
  return v;
}

struct Case {
  int64_t m, n, k;
  float alpha;
  bool accumulate;
};

std::string where(const Case& c) {
  return "m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) +
         " alpha=" + std::to_string(c.alpha) + (c.accumulate ? " accumulate" : "");
}

// Rows of 1..7 and 112 (16 tokens x 7 heads); columns around 8 / 16 / 32 lanes and the 64 of a
// tile; depths 0 (C = 0 or C unchanged), odd, a head_dim and a tile.
std::vector<Case> cases() {
  std::vector<Case> out;
  for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 13, 112}) {
    for (int64_t n : {1, 5, 8, 16, 17, 31, 32, 33, 64, 70}) {
      for (int64_t k : {0, 1, 3, 64, 65}) {
        out.push_back({m, n, k, 0.125f, false});
        out.push_back({m, n, k, 0.3f, false});  // alpha * sum inexact: one rounding, after the chain
        out.push_back({m, n, k, 1.0f, true});
      }
    }
  }
  return out;
}

// Strided operands (ld > width) with guards in the gaps of C.
struct Operands {
  int64_t lda, ldb, ldc;
  std::vector<float> a, b, c;
};

Operands operands(const Case& cs, uint32_t seed) {
  Operands o;
  o.lda = cs.k + 3;
  o.ldb = cs.n + 5;
  o.ldc = cs.n + 7;
  o.a = randn(static_cast<size_t>(cs.m * o.lda + 1), seed);
  o.b = randn(static_cast<size_t>((cs.k > 0 ? cs.k : 1) * o.ldb), seed + 1);
  o.c.assign(static_cast<size_t>(cs.m * o.ldc), kGuard);
  const auto init = randn(static_cast<size_t>(cs.m * cs.n), seed + 2);
  for (int64_t i = 0; i < cs.m; ++i) {
    for (int64_t j = 0; j < cs.n; ++j)
      o.c[static_cast<size_t>(i * o.ldc + j)] = init[static_cast<size_t>(i * cs.n + j)];
  }
  return o;
}

using test::IsaGuard;

TEST(GemmF32, ScalarMatchesDoubleProduct) {
  IsaGuard guard;
  set_active_isa(Isa::kScalar);
  uint32_t seed = 1;
  for (const Case& cs : cases()) {
    Operands o = operands(cs, seed += 3);
    const std::vector<float> before = o.c;
    gemm_f32(cs.m, cs.n, cs.k, cs.alpha, o.a.data(), o.lda, o.b.data(), o.ldb, cs.accumulate, o.c.data(), o.ldc);
    for (int64_t i = 0; i < cs.m; ++i) {
      for (int64_t j = 0; j < o.ldc; ++j) {
        const size_t at = static_cast<size_t>(i * o.ldc + j);
        if (j >= cs.n) {
          ASSERT_EQ(o.c[at], kGuard) << where(cs) << " wrote past column n at " << i << "," << j;
          continue;
        }
        double sum = 0, mag = 0;
        for (int64_t p = 0; p < cs.k; ++p) {
          const double t =
              static_cast<double>(o.a[static_cast<size_t>(i * o.lda + p)]) * o.b[static_cast<size_t>(p * o.ldb + j)];
          sum += t;
          mag += std::fabs(t);
        }
        double want = cs.alpha * sum;
        if (cs.accumulate) want += before[at];
        const double tol = 1e-6 * (cs.alpha * mag + (cs.accumulate ? std::fabs(before[at]) : 0.0)) + 1e-30;
        ASSERT_NEAR(o.c[at], want, tol) << where(cs) << " at " << i << "," << j;
      }
    }
  }
}

TEST(GemmF32, EveryIsaMatchesScalarBitForBit) {
  IsaGuard guard;
  uint32_t seed = 7;
  for (const Case& cs : cases()) {
    const Operands start = operands(cs, seed += 3);
    set_active_isa(Isa::kScalar);
    Operands want = start;
    gemm_f32(cs.m, cs.n, cs.k, cs.alpha, want.a.data(), want.lda, want.b.data(), want.ldb, cs.accumulate, want.c.data(),
             want.ldc);
    for (const Isa isa : supported_isas()) {
      set_active_isa(isa);
      Operands got = start;
      gemm_f32(cs.m, cs.n, cs.k, cs.alpha, got.a.data(), got.lda, got.b.data(), got.ldb, cs.accumulate, got.c.data(),
               got.ldc);
      for (size_t i = 0; i < got.c.size(); ++i) {
        ASSERT_EQ(got.c[i], want.c[i]) << isa_name(isa) << " " << where(cs) << " element " << i;
      }
    }
  }
}

// Accumulating continues each element's chain from C: k split over two calls (prompt attention
// splits positions into tiles and per-token tails) gives the bits of one call, on every ISA.
TEST(GemmF32, SplitAccumulationEqualsOneCall) {
  IsaGuard guard;
  const int64_t m = 7, n = 64, k = 100, lda = 130, ldb = 64, ldc = 64;
  const auto a = randn(static_cast<size_t>(m * lda), 31), b = randn(static_cast<size_t>(k * ldb), 32);
  const auto c0 = randn(static_cast<size_t>(m * ldc), 33);
  for (const Isa isa : supported_isas()) {
    set_active_isa(isa);
    std::vector<float> whole = c0, split = c0;
    gemm_f32(m, n, k, 1.0f, a.data(), lda, b.data(), ldb, true, whole.data(), ldc);
    for (const int64_t cut : {int64_t{1}, int64_t{37}, int64_t{64}}) {
      split = c0;
      gemm_f32(m, n, cut, 1.0f, a.data(), lda, b.data(), ldb, true, split.data(), ldc);
      gemm_f32(m, n, k - cut, 1.0f, a.data() + cut, lda, b.data() + cut * ldb, ldb, true, split.data(), ldc);
      ASSERT_EQ(split, whole) << isa_name(isa) << " cut at " << cut;
    }
  }
}

TEST(GemmF32, AccumulateWithAlphaIsAnError) {
  std::vector<float> a(4, 1.0f), b(4, 1.0f), c(4, 0.0f);
  try {
    gemm_f32(2, 2, 2, 0.5f, a.data(), 2, b.data(), 2, true, c.data(), 2);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace edgellm::kernels
