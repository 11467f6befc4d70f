// matmul for every weight type on every ISA this CPU supports, against a reference computed in
// double precision from the dequantized weights and the dequantized quantized activations, plus
// SIMD == scalar. Shapes cover n_in = 256, 512, 4096+256; odd row counts; row sub-ranges not
// starting at 0; n_tokens 1, 3, 7, 16, 33.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/fp16.h"
#include "kernels/blocks.h"
#include "kernels/kernels.h"

namespace edgellm::kernels {
namespace {

// Error budgets, relative to sum_i |w_i * x_i| (the natural scale of a dot product's rounding):
// the integer block sums are exact, so what remains is F32 rounding of the per-block scale
// products and of the accumulation over up to 4352 / 32 = 136 blocks (F32 weights: 4352 terms in
// lanes). Worst-case bounds are n * 2^-24 ~ 2.6e-4, but the errors measured over every type,
// shape and ISA here (AVX-512 / AVX2 / scalar) are at most 1.7e-7 (F16 1.71e-7, F32 1.54e-7,
// BF16 1.58e-7, K-quants 7.6e-8, Q4_0/Q5_0/Q8_0 3.1e-8), so 2e-6 is ~10x the measured error;
// a single wrong block costs ~1/136 of the scale (7e-3).
constexpr double kRefRelTol = 2e-6;
// SIMD and scalar compute the same integer sums and differ only in F32 summation order
// (measured at most 1.74e-7, F16).
constexpr double kSimdVsScalarRelTol = 2e-6;
// Q8_1 stores s = d * sum(q) as F16; the kernel uses it for the min term of Q4_1 / Q5_1 while the
// reference uses the exact sum, so each block may differ by |m| * |s| * 2^-11 (F16 half-ulp).
constexpr double kF16HalfUlp = 1.0 / 2048.0;

const TensorType kWeightTypes[] = {TensorType::F32,  TensorType::F16,  TensorType::BF16, TensorType::Q4_0,
                                   TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1, TensorType::Q8_0,
                                   TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K};

struct Problem {
  TensorType type;
  int64_t n;       // n_in
  int64_t rows;    // n_out
  int64_t tokens;
  std::vector<uint8_t> w;   // rows * w_row_bytes
  size_t w_row_bytes = 0;
  std::vector<float> wf;    // dequantized weights [rows, n]
  std::vector<float> x;     // [tokens, n] F32 activations
};

Problem make_problem(TensorType type, int64_t n, int64_t rows, int64_t tokens, uint32_t seed) {
  Problem p{type, n, rows, tokens, {}, 0, {}, {}};
  std::mt19937 rng(seed);
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  std::uniform_real_distribution<float> uni(0.25f, 2.0f);
  std::vector<float> src(static_cast<size_t>(rows * n));
  for (int64_t r = 0; r < rows; ++r) {
    // Rows with different scales and an offset, so mins and scales vary across blocks.
    const float scale = uni(rng), offset = 0.1f * gauss(rng);
    for (int64_t i = 0; i < n; ++i) src[r * n + i] = scale * gauss(rng) + offset;
  }
  p.w_row_bytes = tensor_row_bytes(type, n);
  p.w.resize(p.w_row_bytes * static_cast<size_t>(rows));
  p.wf.resize(src.size());
  for (int64_t r = 0; r < rows; ++r) {
    quantize_row(type, src.data() + r * n, p.w.data() + r * p.w_row_bytes, n);
    dequantize_row(type, p.w.data() + r * p.w_row_bytes, p.wf.data() + r * n, n);
  }
  p.x.resize(static_cast<size_t>(tokens * n));
  for (auto& v : p.x) v = gauss(rng);
  return p;
}

struct Result {
  std::vector<float> y;          // [tokens, rows], NaN outside [r0, r1)
  std::vector<double> ref;       // double reference
  std::vector<double> abs_scale; // sum |w x| per output
  std::vector<double> extra_tol; // Q8_1 s rounding allowance per output
};

// Runs matmul for rows [r0, r1) on the active ISA and builds the reference from the activations
// that this ISA's quantize_activation_row produced (dequantized by the scalar-tested dequantizer).
Result run(const Problem& p, int64_t r0, int64_t r1) {
  const TensorType at = activation_type(p.type);
  const size_t xq_row = activation_row_bytes(p.type, p.n);
  std::vector<uint8_t> xq(xq_row * static_cast<size_t>(p.tokens));
  std::vector<float> xd(static_cast<size_t>(p.tokens * p.n));
  for (int64_t t = 0; t < p.tokens; ++t) {
    quantize_activation_row(p.type, p.x.data() + t * p.n, xq.data() + t * xq_row, p.n);
    dequantize_row(at, xq.data() + t * xq_row, xd.data() + t * p.n, p.n);
  }
  Result res;
  res.y.assign(static_cast<size_t>(p.tokens * p.rows), std::nanf(""));
  matmul(p.type, p.n, p.w.data(), p.w_row_bytes, r0, r1, xq.data(), xq_row, p.tokens, res.y.data(), p.rows);
  res.ref.assign(res.y.size(), 0.0);
  res.abs_scale.assign(res.y.size(), 0.0);
  res.extra_tol.assign(res.y.size(), 0.0);
  const bool has_min = p.type == TensorType::Q4_1 || p.type == TensorType::Q5_1;
  for (int64_t t = 0; t < p.tokens; ++t) {
    for (int64_t r = r0; r < r1; ++r) {
      double s = 0, a = 0, e = 0;
      for (int64_t i = 0; i < p.n; ++i) {
        const double prod = static_cast<double>(p.wf[r * p.n + i]) * xd[t * p.n + i];
        s += prod;
        a += std::fabs(prod);
      }
      if (has_min) {
        for (int64_t b = 0; b < p.n / 32; ++b) {
          // m is at byte offset 2 of both BlockQ4_1 and BlockQ5_1; s at offset 2 of BlockQ8_1.
          const size_t bb = p.type == TensorType::Q4_1 ? sizeof(BlockQ4_1) : sizeof(BlockQ5_1);
          uint16_t m, sx;
          std::memcpy(&m, p.w.data() + r * p.w_row_bytes + b * bb + 2, 2);
          std::memcpy(&sx, xq.data() + t * xq_row + b * sizeof(BlockQ8_1) + 2, 2);
          e += std::fabs(fp16_to_fp32(m)) * std::fabs(fp16_to_fp32(sx)) * kF16HalfUlp * 1.01;
        }
      }
      res.ref[t * p.rows + r] = s;
      res.abs_scale[t * p.rows + r] = a;
      res.extra_tol[t * p.rows + r] = e;
    }
  }
  return res;
}

std::string label(const Problem& p, Isa isa) {
  return std::string(tensor_type_name(p.type)) + " n=" + std::to_string(p.n) + " rows=" + std::to_string(p.rows) +
         " tokens=" + std::to_string(p.tokens) + " isa=" + isa_name(isa);
}

class MatmulAllTypes : public ::testing::TestWithParam<TensorType> {
 protected:
  void TearDown() override { set_active_isa(saved_); }
  Isa saved_ = active_isa();
};

TEST_P(MatmulAllTypes, MatchesDoubleReferenceAndScalarOnEveryIsa) {
  const TensorType type = GetParam();
  struct Shape {
    int64_t n, rows, tokens, r0, r1;
  };
  // Under CPU emulation (EDGELLM_SLOW_EMULATION=1, set by scripts/test-arm64.sh) the 4352 x 21
  // rows x 33 tokens shape costs ~70% of the run; a smaller one keeps its properties (long rows,
  // several token tiles, an odd leftover token, a row range not starting at 0).
  const char* slow = std::getenv("EDGELLM_SLOW_EMULATION");
  const bool emulated = slow != nullptr && *slow != '\0' && std::string(slow) != "0";
  const Shape big = emulated ? Shape{4352, 9, 5, 1, 9} : Shape{4352, 21, 33, 7, 20};
  const Shape shapes[] = {
      {256, 37, 1, 0, 37},   {256, 37, 3, 5, 37},   {512, 19, 7, 3, 18},    {512, 33, 16, 1, 33},
      {4352, 13, 1, 0, 13},  big,                   {256, 64, 16, 0, 64},   {4352, 17, 3, 2, 17},
  };
  uint32_t seed = 1234;
  for (const Shape& s : shapes) {
    const Problem p = make_problem(type, s.n, s.rows, s.tokens, seed++);
    std::vector<float> scalar_y;
    for (Isa isa : supported_isas()) {
      set_active_isa(isa);
      const Result res = run(p, s.r0, s.r1);
      for (int64_t t = 0; t < p.tokens; ++t) {
        for (int64_t r = 0; r < p.rows; ++r) {
          const size_t k = static_cast<size_t>(t * p.rows + r);
          if (r < s.r0 || r >= s.r1) {
            ASSERT_TRUE(std::isnan(res.y[k])) << label(p, isa) << ": wrote outside [r0, r1) at row " << r;
            continue;
          }
          const double tol = kRefRelTol * res.abs_scale[k] + res.extra_tol[k] + 1e-30;
          ASSERT_NEAR(res.y[k], res.ref[k], tol) << label(p, isa) << " token " << t << " row " << r;
        }
      }
      if (isa == Isa::kScalar) {
        scalar_y = res.y;
      } else if (!scalar_y.empty()) {
        // Activations are quantized identically on every ISA (test_quantize checks the bytes),
        // so the scalar output is directly comparable.
        for (int64_t t = 0; t < p.tokens; ++t) {
          for (int64_t r = s.r0; r < s.r1; ++r) {
            const size_t k = static_cast<size_t>(t * p.rows + r);
            ASSERT_NEAR(res.y[k], scalar_y[k], kSimdVsScalarRelTol * res.abs_scale[k] + 1e-30)
                << label(p, isa) << " vs scalar, token " << t << " row " << r;
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, MatmulAllTypes, ::testing::ValuesIn(kWeightTypes),
                         [](const ::testing::TestParamInfo<TensorType>& info) {
                           return std::string(tensor_type_name(info.param));
                         });

TEST(Matmul, LargeTileCountsAndStrides) {
  // A row stride larger than the packed row and an output stride larger than n_out: the kernel
  // must honour both (the engine packs several matrices side by side).
  const Isa saved = active_isa();
  for (Isa isa : supported_isas()) {
    set_active_isa(isa);
    for (TensorType type : {TensorType::Q4_0, TensorType::Q4_K, TensorType::F16}) {
      const int64_t n = 512, rows = 11, tokens = 5, y_stride = 17;
      Problem p = make_problem(type, n, rows, tokens, 99);
      const size_t padded = p.w_row_bytes + 64;
      std::vector<uint8_t> wpad(padded * rows, 0xEE);
      for (int64_t r = 0; r < rows; ++r) std::memcpy(wpad.data() + r * padded, p.w.data() + r * p.w_row_bytes, p.w_row_bytes);
      const size_t xq_row = activation_row_bytes(type, n) + 16;
      std::vector<uint8_t> xq(xq_row * tokens);
      for (int64_t t = 0; t < tokens; ++t) quantize_activation_row(type, p.x.data() + t * n, xq.data() + t * xq_row, n);
      std::vector<float> y1(static_cast<size_t>(tokens * y_stride), 0.0f), y2(static_cast<size_t>(tokens * rows));
      matmul(type, n, wpad.data(), padded, 0, rows, xq.data(), xq_row, tokens, y1.data(), y_stride);
      for (int64_t t = 0; t < tokens; ++t) {
        matmul(type, n, p.w.data(), p.w_row_bytes, 0, rows, xq.data() + t * xq_row, xq_row, 1, y2.data() + t * rows, rows);
      }
      for (int64_t t = 0; t < tokens; ++t) {
        for (int64_t r = 0; r < rows; ++r) {
          ASSERT_NEAR(y1[t * y_stride + r], y2[t * rows + r], 1e-4f * (1 + std::fabs(y2[t * rows + r])))
              << tensor_type_name(type) << " " << isa_name(isa) << " t=" << t << " r=" << r;
        }
      }
    }
  }
  set_active_isa(saved);
}

TEST(Matmul, ThreadsSplittingRowsMatchOneCall) {
  // The engine's thread pool gives each thread a row range [r0, r1) of the same matmul.
  const Isa saved = active_isa();
  for (Isa isa : supported_isas()) {
    set_active_isa(isa);
    for (TensorType type : {TensorType::Q4_0, TensorType::Q6_K, TensorType::F32}) {
      const int64_t n = 512, rows = 45, tokens = 6;
      const Problem p = make_problem(type, n, rows, tokens, 7);
      const size_t xq_row = activation_row_bytes(type, n);
      std::vector<uint8_t> xq(xq_row * tokens);
      for (int64_t t = 0; t < tokens; ++t) quantize_activation_row(type, p.x.data() + t * n, xq.data() + t * xq_row, n);
      std::vector<float> one(static_cast<size_t>(tokens * rows)), split(one.size());
      matmul(type, n, p.w.data(), p.w_row_bytes, 0, rows, xq.data(), xq_row, tokens, one.data(), rows);
      std::vector<std::thread> pool;
      const int64_t bounds[] = {0, 7, 8, 30, 45};
      for (int i = 0; i < 4; ++i) {
        pool.emplace_back([&, i] {
          matmul(type, n, p.w.data(), p.w_row_bytes, bounds[i], bounds[i + 1], xq.data(), xq_row, tokens, split.data(),
                 rows);
        });
      }
      for (auto& th : pool) th.join();
      // Same kernel, same tile shapes per row (tiles never mix rows' arithmetic): bit-identical.
      ASSERT_EQ(split, one) << tensor_type_name(type) << " " << isa_name(isa);
    }
  }
  set_active_isa(saved);
}

TEST(Matmul, RejectsBadArguments) {
  std::vector<uint8_t> w(1024), xq(1024);
  float y[4];
  EXPECT_THROW(matmul(TensorType::Q4_0, 33, w.data(), 18, 0, 1, xq.data(), 34, 1, y, 1), Error);  // n % 32
  EXPECT_THROW(matmul(TensorType::Q8_K, 256, w.data(), 292, 0, 1, xq.data(), 292, 1, y, 1), Error); // not a weight type
  EXPECT_THROW(matmul(TensorType::Q4_0, 32, w.data(), 18, 2, 1, xq.data(), 34, 1, y, 1), Error);  // r1 < r0
  EXPECT_THROW(matmul(TensorType::Q4_0, 64, w.data(), 18, 0, 1, xq.data(), 68, 1, y, 1), Error);  // stride too small
}

}  // namespace
}  // namespace edgellm::kernels
