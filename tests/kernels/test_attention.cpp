// Attention kernels (kernels/attention.h) of every ISA and stored row type against naive
// double-precision loops written here over rows decoded by the test itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/fp16.h"
#include "kernels/attention.h"
#include "kernels/blocks.h"
#include "kernels/kernels.h"

namespace edgellm::kernels {
namespace {

// A score or an output element is an F32 sum of at most a few hundred products (hd <= 256 for
// scores, cnt <= 129 rows plus the initial value for accumulate) in some summation order; its
// error relative to the sum of |terms| is bounded by ~n * 2^-24 in the worst case, and each
// test prints the worst it measured (WorstRelative): 4.9e-7 (accumulate), 2.9e-7 (scores),
// 7.9e-8 (the int8-weighted V sum against its coded weights) on AVX-512, AVX2 and scalar (AMD
// EPYC), and the same on NEON, dotprod and i8mm under qemu. The bound is about 10x the worst.
constexpr double kSumRelTol = 5e-6;

// The worst |got - reference| / (sum of |terms|) a test saw against kSumRelTol, printed when the
// test ends, so the margin between the bound and the measured error stays visible.
class WorstRelative {
 public:
  explicit WorstRelative(const char* what) : what_(what) {}
  ~WorstRelative() {
    std::printf("  %s on %s: worst |error| / sum |terms| %.2e (kSumRelTol %.0e)\n", what_, isa_name(active_isa()),
                worst_, kSumRelTol);
  }
  void add(double got, double ref, double mag) {
    if (mag > 0) worst_ = std::max(worst_, std::fabs(got - ref) / mag);
  }

 private:
  const char* what_;
  double worst_ = 0;
};
// Guard value written around every output area; the kernels must not touch it.
constexpr float kGuard = -12345.0f;

std::vector<float> randn(size_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = g(rng);
  return v;
}

// cnt rows of hd elements, encoded in `type` with row stride row_bytes (>= one row: padding is
// filled with garbage the kernels must skip), plus the rows as the test decodes them.
struct Rows {
  std::vector<uint8_t> bytes;
  std::vector<double> value;  // [cnt, hd]
};

Rows make_rows(TensorType type, int64_t cnt, int64_t hd, size_t row_bytes, uint32_t seed) {
  const auto x = randn(static_cast<size_t>(cnt * hd), seed, 2.0f);
  Rows r;
  r.bytes.assign(static_cast<size_t>(cnt) * row_bytes, 0xA5);
  r.value.resize(static_cast<size_t>(cnt * hd));
  for (int64_t s = 0; s < cnt; ++s) {
    uint8_t* row = r.bytes.data() + static_cast<size_t>(s) * row_bytes;
    const float* src = x.data() + s * hd;
    double* dec = r.value.data() + s * hd;
    switch (type) {
      case TensorType::F32:
        std::memcpy(row, src, static_cast<size_t>(hd) * sizeof(float));
        for (int64_t i = 0; i < hd; ++i) dec[i] = src[i];
        break;
      case TensorType::F16:
        for (int64_t i = 0; i < hd; ++i) {
          const uint16_t h = fp32_to_fp16(src[i]);
          std::memcpy(row + 2 * i, &h, sizeof(h));
          dec[i] = fp16_to_fp32(h);
        }
        break;
      case TensorType::Q4_0:  // the library quantizes, the test decodes the blocks itself
        quantize_row(TensorType::Q4_0, src, row, hd);
        for (int64_t b = 0; b < hd / kQK4_0; ++b) {
          BlockQ4_0 blk;
          std::memcpy(&blk, row + static_cast<size_t>(b) * sizeof(BlockQ4_0), sizeof(blk));
          const double d = fp16_to_fp32(blk.d);
          for (int j = 0; j < kQK4_0 / 2; ++j) {
            dec[b * kQK4_0 + j] = d * ((blk.qs[j] & 0x0F) - 8);
            dec[b * kQK4_0 + kQK4_0 / 2 + j] = d * ((blk.qs[j] >> 4) - 8);
          }
        }
        break;
      default: {  // Q8_0: the library quantizes, the test decodes the blocks itself
        quantize_row(TensorType::Q8_0, src, row, hd);
        for (int64_t b = 0; b < hd / kQK8_0; ++b) {
          BlockQ8_0 blk;
          std::memcpy(&blk, row + static_cast<size_t>(b) * sizeof(BlockQ8_0), sizeof(blk));
          for (int j = 0; j < kQK8_0; ++j) dec[b * kQK8_0 + j] = static_cast<double>(fp16_to_fp32(blk.d)) * blk.qs[j];
        }
        break;
      }
    }
  }
  return r;
}

class Attention : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    saved_ = active_isa();
    set_active_isa(GetParam());
  }
  void TearDown() override { set_active_isa(saved_); }
  Isa saved_ = Isa::kScalar;
};

struct Shape {
  TensorType type;
  int64_t hd;
};
// Every stored type; head dims below, at and above the vector widths (Q8_0, Q4_0: whole blocks).
const Shape kShapes[] = {{TensorType::F32, 8},   {TensorType::F32, 20},  {TensorType::F32, 64},  {TensorType::F32, 128},
                         {TensorType::F16, 8},   {TensorType::F16, 20},  {TensorType::F16, 64},  {TensorType::F16, 128},
                         {TensorType::Q8_0, 32}, {TensorType::Q8_0, 64}, {TensorType::Q8_0, 128},
                         {TensorType::Q4_0, 32}, {TensorType::Q4_0, 64}, {TensorType::Q4_0, 128}};
// Row counts around 4 / 8 / 16 lanes and a typical KV block of 16; head counts 1, 2, the
// Qwen2.5 group of 7 and more than the 8 a kernel pass holds.
const int64_t kCounts[] = {1, 3, 8, 15, 16, 17, 40};
const int64_t kGroups[] = {1, 2, 7, 11};

std::string where(const Shape& sh, int64_t cnt, int64_t g, int64_t pad) {
  return std::string(tensor_type_name(sh.type)) + " hd=" + std::to_string(sh.hd) + " cnt=" + std::to_string(cnt) +
         " g=" + std::to_string(g) + " row pad=" + std::to_string(pad);
}

TEST_P(Attention, ScoresMatchReference) {
  WorstRelative worst("scores");
  uint32_t seed = 100;
  for (const Shape& sh : kShapes) {
    for (int64_t pad : {0, 6}) {
      const size_t row_bytes = tensor_row_bytes(sh.type, sh.hd) + static_cast<size_t>(pad);
      for (int64_t cnt : kCounts) {
        for (int64_t g : kGroups) {
          const Rows k = make_rows(sh.type, cnt, sh.hd, row_bytes, ++seed);
          const int64_t q_stride = sh.hd + 3, s_stride = cnt + 5;  // strided, not packed
          const auto q = randn(static_cast<size_t>(g * q_stride), ++seed);
          const float scale = 1.0f / std::sqrt(static_cast<float>(sh.hd));
          std::vector<float> out(static_cast<size_t>(g * s_stride), kGuard);
          attention_scores(sh.type, k.bytes.data(), row_bytes, cnt, sh.hd, q.data(), q_stride, g, scale, out.data(),
                           s_stride);
          for (int64_t h = 0; h < g; ++h) {
            for (int64_t s = 0; s < s_stride; ++s) {
              const float got = out[static_cast<size_t>(h * s_stride + s)];
              if (s >= cnt) {
                ASSERT_EQ(got, kGuard) << "wrote past the rows: " << where(sh, cnt, g, pad) << " h=" << h;
                continue;
              }
              double ref = 0, mag = 0;
              for (int64_t i = 0; i < sh.hd; ++i) {
                const double t = static_cast<double>(q[static_cast<size_t>(h * q_stride + i)]) *
                                 k.value[static_cast<size_t>(s * sh.hd + i)];
                ref += t;
                mag += std::fabs(t);
              }
              worst.add(got, scale * ref, scale * mag);
              ASSERT_NEAR(got, scale * ref, kSumRelTol * scale * mag + 1e-30)
                  << where(sh, cnt, g, pad) << " h=" << h << " s=" << s;
            }
          }
        }
      }
    }
  }
}

TEST_P(Attention, AccumulateMatchesReference) {
  WorstRelative worst("accumulate");
  uint32_t seed = 900;
  for (const Shape& sh : kShapes) {
    for (int64_t pad : {0, 6}) {
      const size_t row_bytes = tensor_row_bytes(sh.type, sh.hd) + static_cast<size_t>(pad);
      for (int64_t cnt : kCounts) {
        for (int64_t g : kGroups) {
          const Rows v = make_rows(sh.type, cnt, sh.hd, row_bytes, ++seed);
          const int64_t p_stride = cnt + 2, o_stride = sh.hd + 4;
          // Probabilities: positive weights as softmax gives them; out starts non-zero (+=).
          std::vector<float> p = randn(static_cast<size_t>(g * p_stride), ++seed);
          for (float& x : p) x = std::fabs(x) / static_cast<float>(cnt);
          std::vector<float> out(static_cast<size_t>(g * o_stride), kGuard);
          const auto init = randn(static_cast<size_t>(g * o_stride), ++seed);
          for (int64_t h = 0; h < g; ++h) {
            for (int64_t i = 0; i < sh.hd; ++i)
              out[static_cast<size_t>(h * o_stride + i)] = init[static_cast<size_t>(h * o_stride + i)];
          }
          attention_accumulate(sh.type, v.bytes.data(), row_bytes, cnt, sh.hd, p.data(), p_stride, g, out.data(),
                               o_stride);
          for (int64_t h = 0; h < g; ++h) {
            for (int64_t i = 0; i < o_stride; ++i) {
              const float got = out[static_cast<size_t>(h * o_stride + i)];
              if (i >= sh.hd) {
                ASSERT_EQ(got, kGuard) << "wrote past head_dim: " << where(sh, cnt, g, pad) << " h=" << h;
                continue;
              }
              const double x0 = init[static_cast<size_t>(h * o_stride + i)];
              double ref = x0, mag = std::fabs(x0);
              for (int64_t s = 0; s < cnt; ++s) {
                const double t = static_cast<double>(p[static_cast<size_t>(h * p_stride + s)]) *
                                 v.value[static_cast<size_t>(s * sh.hd + i)];
                ref += t;
                mag += std::fabs(t);
              }
              worst.add(got, ref, mag);
              ASSERT_NEAR(got, ref, kSumRelTol * mag + 1e-30) << where(sh, cnt, g, pad) << " h=" << h << " i=" << i;
            }
          }
        }
      }
    }
  }
}

// The resolved kernels are the ones the checked forms call: same bits on one ISA.
TEST_P(Attention, ResolvedKernelsMatchCheckedForms) {
  const int64_t hd = 64, cnt = 16, g = 7;
  const size_t row_bytes = tensor_row_bytes(TensorType::F16, hd);
  const Rows k = make_rows(TensorType::F16, cnt, hd, row_bytes, 7);
  const auto q = randn(static_cast<size_t>(g * hd), 8);
  std::vector<float> a(static_cast<size_t>(g * cnt)), b(a.size());
  attention_scores(TensorType::F16, k.bytes.data(), row_bytes, cnt, hd, q.data(), hd, g, 0.125f, a.data(), cnt);
  const AttentionKernels kern = attention_kernels(TensorType::F16, hd);
  kern.scores(k.bytes.data(), row_bytes, cnt, hd, q.data(), hd, g, 0.125f, b.data(), cnt);
  EXPECT_EQ(a, b);
  std::vector<float> oa(static_cast<size_t>(g * hd), 0.0f), ob = oa;
  attention_accumulate(TensorType::F16, k.bytes.data(), row_bytes, cnt, hd, a.data(), cnt, g, oa.data(), hd);
  kern.accumulate(k.bytes.data(), row_bytes, cnt, hd, a.data(), cnt, g, ob.data(), hd);
  EXPECT_EQ(oa, ob);
}

// Each ISA against its scalar twin (Isa::kScalar) on the quantized row types, for a decode-like
// shape (Qwen2.5: hd 64, g 7; TinyLlama: hd 64, g 8): the same F32 products in another summation
// order, so within the sum tolerance of each other (the reference tests above bound both).
TEST_P(Attention, QuantizedRowsMatchScalarTwin) {
  for (TensorType type : {TensorType::Q8_0, TensorType::Q4_0}) {
    for (int64_t g : {7, 8}) {
      const int64_t hd = 64, cnt = 37;
      const size_t row_bytes = tensor_row_bytes(type, hd);
      const Rows k = make_rows(type, cnt, hd, row_bytes, 31 + static_cast<uint32_t>(g));
      const auto q = randn(static_cast<size_t>(g * hd), 41);
      const auto p = randn(static_cast<size_t>(g * cnt), 43, 0.2f);
      std::vector<float> s(static_cast<size_t>(g * cnt)), o(static_cast<size_t>(g * hd), 0.0f);
      const AttentionKernels kern = attention_kernels(type, hd);
      kern.scores(k.bytes.data(), row_bytes, cnt, hd, q.data(), hd, g, 0.125f, s.data(), cnt);
      kern.accumulate(k.bytes.data(), row_bytes, cnt, hd, p.data(), cnt, g, o.data(), hd);
      set_active_isa(Isa::kScalar);
      std::vector<float> s_ref(s.size()), o_ref(o.size(), 0.0f);
      const AttentionKernels twin = attention_kernels(type, hd);
      twin.scores(k.bytes.data(), row_bytes, cnt, hd, q.data(), hd, g, 0.125f, s_ref.data(), cnt);
      twin.accumulate(k.bytes.data(), row_bytes, cnt, hd, p.data(), cnt, g, o_ref.data(), hd);
      set_active_isa(GetParam());
      for (size_t i = 0; i < s.size(); ++i) {
        ASSERT_NEAR(s[i], s_ref[i], 1e-5 * (1.0 + std::fabs(s_ref[i]))) << tensor_type_name(type) << " score " << i;
      }
      for (size_t i = 0; i < o.size(); ++i) {
        ASSERT_NEAR(o[i], o_ref[i], 1e-5 * (1.0 + std::fabs(o_ref[i]))) << tensor_type_name(type) << " out " << i;
      }
    }
  }
}

// Prefill's K^T tiles: element d of row s lands at kt[d * kt_stride + s], exactly the value the
// test decodes (widening is exact for every type); nothing outside [hd, cnt] of the tile moves.
TEST_P(Attention, WidenTransposedPutsRowsInColumns) {
  uint32_t seed = 900;
  for (const Shape& sh : kShapes) {
    for (int64_t pad : {0, 6}) {
      const size_t row_bytes = tensor_row_bytes(sh.type, sh.hd) + static_cast<size_t>(pad);
      for (int64_t cnt : kCounts) {
        const Rows k = make_rows(sh.type, cnt, sh.hd, row_bytes, ++seed);
        const int64_t kt_stride = cnt + 9;
        std::vector<float> kt(static_cast<size_t>(sh.hd * kt_stride), kGuard);
        attention_kernels(sh.type, sh.hd).widen_transposed(k.bytes.data(), row_bytes, cnt, sh.hd, kt.data(), kt_stride);
        for (int64_t d = 0; d < sh.hd; ++d) {
          for (int64_t s = 0; s < kt_stride; ++s) {
            const float got = kt[static_cast<size_t>(d * kt_stride + s)];
            const double want = s < cnt ? k.value[static_cast<size_t>(s * sh.hd + d)] : kGuard;
            ASSERT_EQ(static_cast<double>(got), want) << where(sh, cnt, 1, pad) << " d=" << d << " s=" << s;
          }
        }
      }
    }
  }
}

// quantize_query: codes within [-127, 127], the largest |q| of a block coded as +-127, every
// value within half a step of its code (d / scale is the step), sum = the codes' sum, the
// attention scale folded into d; a zero block gives d = 0 and zero codes.
TEST(QuantizeQuery, CodesAreRoundedValuesOfOneScalePerBlock) {
  const int64_t hd = 96;
  auto q = randn(static_cast<size_t>(hd), 5, 3.0f);
  for (int i = 64; i < 96; ++i) q[static_cast<size_t>(i)] = 0.0f;
  const float scale = 0.125f;
  QueryBlockQ8 out[3];
  quantize_query(q.data(), hd, scale, out);
  for (int b = 0; b < 3; ++b) {
    int32_t sum = 0, amax_code = 0;
    const double step = out[b].d / scale;
    for (int i = 0; i < 32; ++i) {
      const int c = out[b].qs[i];
      ASSERT_LE(std::abs(c), 127);
      sum += c;
      amax_code = std::max(amax_code, std::abs(c));
      if (b < 2) {
        ASSERT_LE(std::fabs(q[static_cast<size_t>(b * 32 + i)] - c * step), 0.5 * step * (1 + 1e-6)) << b;
      }
    }
    EXPECT_EQ(sum, out[b].sum);
    if (b < 2) {
      EXPECT_EQ(amax_code, 127);
    } else {
      EXPECT_EQ(out[b].d, 0.0f);
      EXPECT_EQ(amax_code, 0);
    }
  }
}

// A NaN or infinite value leaves a block without an int8 form: its codes 0 and a NaN scale, so
// the head's scores are NaN as with the F32 query (not a NaN cast to int8, undefined behaviour).
// A block of values near the smallest normal floats, where 127 / max|q| overflows, still gets
// codes up to 127 and a finite scale.
TEST(QuantizeQuery, NonFiniteAndTinyBlocks) {
  std::vector<float> q(96, 0.5f);
  q[3] = std::numeric_limits<float>::quiet_NaN();
  q[40] = -std::numeric_limits<float>::infinity();
  for (int i = 64; i < 96; ++i) q[static_cast<size_t>(i)] = (i % 2 ? 1.0f : -0.5f) * 2e-38f;
  QueryBlockQ8 out[3];
  quantize_query(q.data(), 96, 0.125f, out);
  for (int b = 0; b < 2; ++b) {
    EXPECT_TRUE(std::isnan(out[b].d)) << b;
    EXPECT_EQ(out[b].sum, 0) << b;
    for (int i = 0; i < 32; ++i) ASSERT_EQ(out[b].qs[i], 0) << b;
  }
  EXPECT_TRUE(std::isfinite(out[2].d));
  EXPECT_GT(out[2].d, 0.0f);
  for (int i = 0; i < 32; ++i) {
    if (i % 2) {
      ASSERT_EQ(out[2].qs[i], 127) << i;
    } else {  // -0.5 x 2e-38 is subnormal: about -63.5 steps, either neighbour
      ASSERT_TRUE(out[2].qs[i] == -63 || out[2].qs[i] == -64) << i << " " << int{out[2].qs[i]};
    }
  }
}

// Int8-query scores (AttentionKernels::scores_q8, where the ISA has them) against a double
// computation over the rows the test decodes and the query codes times d: only F32 rounding
// apart (two products and an FMA per block: measured <= 6.6e-8 of the sum of |terms| over all
// shapes, scalar and AVX-512; bound kInt8ScoreRelTol = 7e-7).
// Then against the exact F32 query: the difference is the query's quantization, at most half a
// step per element, i.e. sum |k_i| * step_b / 2 per block (bounded, not estimated). hd 96 has an
// odd block count (a chunk with one block).
TEST_P(Attention, Int8QueryScoresMatchReference) {
  constexpr double kInt8ScoreRelTol = 7e-7;
  uint32_t seed = 3000;
  for (TensorType type : {TensorType::Q8_0, TensorType::Q4_0}) {
    if (attention_kernels(type, 32).scores_q8 == nullptr) GTEST_SKIP() << "no int8-query scores on this ISA";
    for (int64_t hd : {32, 64, 96, 128}) {
      for (int64_t pad : {0, 6}) {
        const size_t row_bytes = tensor_row_bytes(type, hd) + static_cast<size_t>(pad);
        for (int64_t cnt : kCounts) {
          for (int64_t g : kGroups) {
            const Shape sh{type, hd};
            const Rows k = make_rows(type, cnt, hd, row_bytes, ++seed);
            const int64_t nb = hd / 32, q_stride = nb + 1, s_stride = cnt + 5;
            const auto q = randn(static_cast<size_t>(g * hd), ++seed);
            const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
            std::vector<QueryBlockQ8> qq(static_cast<size_t>(g * q_stride));
            for (int64_t h = 0; h < g; ++h) quantize_query(q.data() + h * hd, hd, scale, qq.data() + h * q_stride);
            std::vector<float> out(static_cast<size_t>(g * s_stride), kGuard);
            attention_scores_q8(type, k.bytes.data(), row_bytes, cnt, hd, qq.data(), q_stride, g, out.data(), s_stride);
            for (int64_t h = 0; h < g; ++h) {
              for (int64_t s = 0; s < s_stride; ++s) {
                const float got = out[static_cast<size_t>(h * s_stride + s)];
                if (s >= cnt) {
                  ASSERT_EQ(got, kGuard) << "wrote past the rows: " << where(sh, cnt, g, pad) << " h=" << h;
                  continue;
                }
                double coded = 0, mag = 0, exact = 0, qerr = 0;
                for (int64_t i = 0; i < hd; ++i) {
                  const QueryBlockQ8& b = qq[static_cast<size_t>(h * q_stride + i / 32)];
                  const double kv = k.value[static_cast<size_t>(s * hd + i)];
                  const double t = static_cast<double>(b.d) * b.qs[i % 32] * kv;
                  coded += t;
                  mag += std::fabs(t);
                  exact += scale * static_cast<double>(q[static_cast<size_t>(h * hd + i)]) * kv;
                  qerr += std::fabs(kv) * b.d / 2;
                }
                ASSERT_NEAR(got, coded, kInt8ScoreRelTol * mag + 1e-30) << where(sh, cnt, g, pad) << " h=" << h << " s=" << s;
                // Measured: at most 0.57 of the bound qerr.
                ASSERT_NEAR(got, exact, qerr * (1 + 1e-5) + kInt8ScoreRelTol * mag + 1e-30)
                    << where(sh, cnt, g, pad) << " h=" << h << " s=" << s;
              }
            }
          }
        }
      }
    }
  }
}

// Every ISA's int8-query scores equal the scalar twin bit for bit: the integer block sums are
// exact and the F32 steps are the same operations in the same order (kernels/attention.h).
TEST_P(Attention, Int8QueryScoresEqualScalarTwinExactly) {
  for (TensorType type : {TensorType::Q8_0, TensorType::Q4_0}) {
    if (attention_kernels(type, 32).scores_q8 == nullptr) GTEST_SKIP() << "no int8-query scores on this ISA";
    // Every row count of kCounts (partial 16-row and 4-row groups, a lone row) and 37, with and
    // without padding between rows.
    std::vector<int64_t> counts(std::begin(kCounts), std::end(kCounts));
    counts.push_back(37);
    for (int64_t hd : {32, 64, 96, 128, 160, 256}) {
      for (int64_t g : {1, 7, 8, 11}) {
        for (int64_t pad : {0, 6}) {
          for (int64_t cnt : counts) {
            const int64_t nb = hd / 32;
            const size_t row_bytes = tensor_row_bytes(type, hd) + static_cast<size_t>(pad);
            const Rows k = make_rows(type, cnt, hd, row_bytes, 77 + static_cast<uint32_t>(g + hd + cnt));
            const auto q = randn(static_cast<size_t>(g * hd), 79);
            std::vector<QueryBlockQ8> qq(static_cast<size_t>(g * nb));
            for (int64_t h = 0; h < g; ++h) quantize_query(q.data() + h * hd, hd, 0.125f, qq.data() + h * nb);
            std::vector<float> s(static_cast<size_t>(g * cnt)), s_ref(s.size());
            attention_kernels(type, hd).scores_q8(k.bytes.data(), row_bytes, cnt, hd, qq.data(), nb, g, s.data(), cnt);
            set_active_isa(Isa::kScalar);
            attention_kernels(type, hd).scores_q8(k.bytes.data(), row_bytes, cnt, hd, qq.data(), nb, g, s_ref.data(),
                                                  cnt);
            set_active_isa(GetParam());
            for (size_t i = 0; i < s.size(); ++i) {
              ASSERT_EQ(s[i], s_ref[i]) << tensor_type_name(type) << " hd=" << hd << " g=" << g << " cnt=" << cnt
                                        << " pad=" << pad << " score " << i;
            }
          }
        }
      }
    }
  }
}

// The int8-weighted V sum over Q4_0 rows (AttentionKernels::value_weights / accumulate_weighted,
// where the ISA has it). Weights: probabilities over 20 orders of magnitude, some below
// FLT_MIN / d, scaled by the rows' own block scales.
std::vector<float> weights_like_softmax(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::vector<float> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = i % 13 == 5 ? 1e-37f * u(rng) : std::exp(-46.0f * u(rng) * u(rng));
  return p;
}

// Tiles of 16 rows in the order of `rows`, each tile at a place of its own in `store` (reversed
// when `scatter`: tile t of the sequence at slot n_tiles - 1 - t), so a group of 64 rows spans four
// tiles that are not adjacent in memory, as four KV blocks of 16 can be.
struct ValueTiles {
  std::vector<uint8_t> store;
  std::vector<const uint8_t*> tiles;
};
ValueTiles tile_rows(const Rows& v, int64_t cnt, size_t row_bytes, bool scatter) {
  ValueTiles t;
  const int64_t n_tiles = (cnt + kValueTileRows - 1) / kValueTileRows;
  const size_t tile_bytes = static_cast<size_t>(kValueTileRows) * row_bytes;
  t.store.assign(static_cast<size_t>(n_tiles) * tile_bytes, 0xEE);
  for (int64_t i = 0; i < n_tiles; ++i) {
    const int64_t slot = scatter ? n_tiles - 1 - i : i;
    const int64_t rows = std::min<int64_t>(kValueTileRows, cnt - i * kValueTileRows);
    std::memcpy(t.store.data() + static_cast<size_t>(slot) * tile_bytes,
                v.bytes.data() + static_cast<size_t>(i * kValueTileRows) * row_bytes, static_cast<size_t>(rows) * row_bytes);
    t.tiles.push_back(t.store.data() + static_cast<size_t>(slot) * tile_bytes);
  }
  return t;
}

// The weights of one group, head and block, from the definition in kernels/attention.h, written
// here independently of the kernels: x = p * d, m = max |x|, q = round-half-even(x * 127 / m).
struct GroupWeights {
  int8_t q[kValueWeightGroupRows] = {};
  float scale = 0.0f;
  int32_t offset = 0;
  float m = 0.0f;
};
GroupWeights group_weights(const Rows& v, size_t row_bytes, const float* p, int64_t s0, int64_t rows, int64_t b) {
  GroupWeights gw;
  float x[kValueWeightGroupRows] = {};
  for (int64_t j = 0; j < rows; ++j) {
    BlockQ4_0 blk;
    std::memcpy(&blk, v.bytes.data() + static_cast<size_t>(s0 + j) * row_bytes + b * sizeof(BlockQ4_0), sizeof blk);
    x[j] = p[s0 + j] * fp16_to_fp32(blk.d);
    gw.m = std::max(gw.m, std::fabs(x[j]));
  }
  if (gw.m < 0x1p-120f) return gw;  // 127 / m would overflow: the group adds nothing
  const float inv = 127.0f / gw.m;
  for (int64_t j = 0; j < kValueWeightGroupRows; ++j) {
    gw.q[j] = static_cast<int8_t>(std::nearbyint(x[j] * inv));
    gw.offset += 8 * gw.q[j];
  }
  gw.scale = gw.m / 127.0f;
  return gw;
}

// Against the definition: (1) the weights, scales and offsets of every group, head and block;
// (2) each output against double sums the test computes of the definition's weights times the
// codes the test decodes, up to F32 rounding (kSumRelTol of the sum of |terms|, plus one rounding
// of the F32 FMA per group); (3) each output against the exact p * v: each weight differs from
// p * d by at most m / 254 of its group (half an int8 step; or all of |p d| where m < 2^-120 and
// the group adds nothing), so the bound is the sum of m / 254 * |code| over the rows, plus F32 summation.
TEST_P(Attention, WeightedValueSumMatchesReference) {
  if (attention_kernels(TensorType::Q4_0, 32).accumulate_weighted == nullptr)
    GTEST_SKIP() << "no int8-weighted V sum on this ISA";
  WorstRelative worst("weighted V sum against the coded weights");
  uint32_t seed = 5000;
  for (int64_t hd : {32, 64, 96, 128, 160, 256}) {
    for (int64_t pad : {0, 6}) {
      const size_t row_bytes = tensor_row_bytes(TensorType::Q4_0, hd) + static_cast<size_t>(pad);
      for (int64_t cnt : {1, 3, 8, 15, 16, 17, 33, 40, 64, 77, 129}) {
        for (int64_t g : kGroups) {
          const Shape sh{TensorType::Q4_0, hd};
          const Rows v = make_rows(TensorType::Q4_0, cnt, hd, row_bytes, ++seed);
          const ValueTiles tiles = tile_rows(v, cnt, row_bytes, /*scatter=*/true);
          const int64_t nb = hd / 32, p_stride = cnt + 3, o_stride = hd + 5;
          const auto p = weights_like_softmax(static_cast<size_t>(g * p_stride), ++seed);
          const auto out0 = randn(static_cast<size_t>(g * o_stride), ++seed, 0.1f);
          // The weights' records plus a guard area the kernels must not touch.
          const size_t n_w = static_cast<size_t>(value_weights_bytes(cnt, g, hd));
          std::vector<uint8_t> w(n_w + 64, 0xAD);
          std::vector<float> out(out0.begin(), out0.end());
          const AttentionKernels k = attention_kernels(TensorType::Q4_0, hd);
          k.value_weights(tiles.tiles.data(), row_bytes, cnt, hd, p.data(), p_stride, g, w.data());
          k.accumulate_weighted(tiles.tiles.data(), row_bytes, cnt, hd, w.data(), g, out.data(), o_stride);
          for (size_t i = n_w; i < w.size(); ++i) ASSERT_EQ(w[i], 0xAD) << "wrote past the records: " << where(sh, cnt, g, pad);
          const ValueWeightGroup rec(g, nb);
          for (int64_t h = 0; h < g; ++h) {
            std::vector<double> coded(static_cast<size_t>(hd)), mag(static_cast<size_t>(hd)), bound(static_cast<size_t>(hd));
            for (int64_t i = 0; i < hd; ++i) coded[static_cast<size_t>(i)] = out0[static_cast<size_t>(h * o_stride + i)];
            for (int64_t s0 = 0; s0 < cnt; s0 += kValueWeightGroupRows) {
              const int64_t rows = std::min<int64_t>(kValueWeightGroupRows, cnt - s0);
              const uint8_t* grp = w.data() + (s0 / kValueWeightGroupRows) * rec.bytes;
              for (int64_t b = 0; b < nb; ++b) {
                const GroupWeights want = group_weights(v, row_bytes, p.data() + h * p_stride, s0, rows, b);
                float scale;
                int32_t offset;
                std::memcpy(&scale, grp + rec.scale_offset(h, b), sizeof scale);
                std::memcpy(&offset, grp + rec.offset_offset(h, b), sizeof offset);
                ASSERT_EQ(scale, want.scale) << where(sh, cnt, g, pad) << " h=" << h << " b=" << b << " s0=" << s0;
                ASSERT_EQ(offset, want.offset) << where(sh, cnt, g, pad) << " h=" << h << " b=" << b << " s0=" << s0;
                for (int64_t j = 0; j < kValueWeightGroupRows; ++j) {
                  ASSERT_EQ(static_cast<int8_t>(grp[rec.weights_offset(h, b) + j]), want.q[j])
                      << where(sh, cnt, g, pad) << " h=" << h << " b=" << b << " row " << s0 + j;
                }
                for (int64_t e = 0; e < 32; ++e) {
                  const int64_t i = b * 32 + e;
                  double sum = 0, sum_mag = 0, err = 0;
                  for (int64_t j = 0; j < rows; ++j) {
                    BlockQ4_0 blk;
                    std::memcpy(&blk, v.bytes.data() + static_cast<size_t>(s0 + j) * row_bytes + b * sizeof(BlockQ4_0),
                                sizeof blk);
                    const uint8_t byte = blk.qs[e % 16];
                    const int code = (e < 16 ? (byte & 0x0F) : (byte >> 4)) - 8;
                    sum += static_cast<double>(want.q[j]) * code;
                    sum_mag += std::fabs(static_cast<double>(want.q[j]) * code);
                    err += static_cast<double>(want.m) / 254.0 * std::abs(code) * (1 + 1e-6);
                    if (want.m < 0x1p-120f)
                      err += std::fabs(static_cast<double>(p[static_cast<size_t>(h * p_stride + s0 + j)]) * fp16_to_fp32(blk.d) * code);
                  }
                  coded[static_cast<size_t>(i)] += sum * want.scale;
                  mag[static_cast<size_t>(i)] += sum_mag * want.scale;
                  bound[static_cast<size_t>(i)] += err;
                }
              }
            }
            for (int64_t i = 0; i < o_stride; ++i) {
              const size_t at = static_cast<size_t>(h * o_stride + i);
              if (i >= hd) {
                ASSERT_EQ(out[at], out0[at]) << "wrote past the head: " << where(sh, cnt, g, pad);
                continue;
              }
              const double m0 = std::fabs(out0[at]);
              worst.add(out[at], coded[static_cast<size_t>(i)], mag[static_cast<size_t>(i)] + m0);
              ASSERT_NEAR(out[at], coded[static_cast<size_t>(i)], kSumRelTol * (mag[static_cast<size_t>(i)] + m0) + 1e-30)
                  << where(sh, cnt, g, pad) << " h=" << h << " i=" << i;
              double exact = out0[at], exact_mag = m0;
              for (int64_t s = 0; s < cnt; ++s) {
                const double e = static_cast<double>(p[static_cast<size_t>(h * p_stride + s)]) * v.value[static_cast<size_t>(s * hd + i)];
                exact += e;
                exact_mag += std::fabs(e);
              }
              ASSERT_NEAR(out[at], exact, bound[static_cast<size_t>(i)] + kSumRelTol * exact_mag + 1e-36)
                  << where(sh, cnt, g, pad) << " h=" << h << " i=" << i;
            }
          }
        }
      }
    }
  }
}

// Every ISA's int8-weighted V sum equals the scalar twin bit for bit (weight records and
// outputs): integer sums are exact and each group adds one F32 FMA (kernels/attention.h). The
// rows go as tiles scattered in memory, and the same rows in contiguous tiles give the same bits
// (the result does not depend on where the KV blocks are).
TEST_P(Attention, WeightedValueSumEqualsScalarTwinExactly) {
  if (attention_kernels(TensorType::Q4_0, 32).accumulate_weighted == nullptr)
    GTEST_SKIP() << "no int8-weighted V sum on this ISA";
  std::vector<int64_t> counts(std::begin(kCounts), std::end(kCounts));
  counts.push_back(37);
  counts.push_back(61);  // one group of 61 rows: not whole quads
  counts.push_back(93);   // a second group of 29 rows
  counts.push_back(125);  // a second group of 61 rows: a partial last quarter
  counts.push_back(256);
  for (int64_t hd : {32, 64, 96, 128, 160, 256}) {
    for (int64_t g : {1, 7, 8, 11}) {
      for (int64_t pad : {0, 6}) {
        for (int64_t cnt : counts) {
          if (cnt == 256 && (pad != 0 || hd != 64)) continue;
          const size_t row_bytes = tensor_row_bytes(TensorType::Q4_0, hd) + static_cast<size_t>(pad);
          const Rows v = make_rows(TensorType::Q4_0, cnt, hd, row_bytes, 91 + static_cast<uint32_t>(g + hd + cnt));
          const ValueTiles scattered = tile_rows(v, cnt, row_bytes, true), contiguous = tile_rows(v, cnt, row_bytes, false);
          const auto p = weights_like_softmax(static_cast<size_t>(g * cnt), 93);
          const auto out0 = randn(static_cast<size_t>(g * hd), 95, 0.1f);
          const size_t n_w = static_cast<size_t>(value_weights_bytes(cnt, g, hd));
          std::vector<uint8_t> w(n_w), w_ref(n_w), w_contig(n_w);
          std::vector<float> out(out0), out_ref(out0), out_contig(out0);
          const AttentionKernels k = attention_kernels(TensorType::Q4_0, hd);
          k.value_weights(scattered.tiles.data(), row_bytes, cnt, hd, p.data(), cnt, g, w.data());
          k.accumulate_weighted(scattered.tiles.data(), row_bytes, cnt, hd, w.data(), g, out.data(), hd);
          k.value_weights(contiguous.tiles.data(), row_bytes, cnt, hd, p.data(), cnt, g, w_contig.data());
          k.accumulate_weighted(contiguous.tiles.data(), row_bytes, cnt, hd, w_contig.data(), g, out_contig.data(), hd);
          set_active_isa(Isa::kScalar);
          const AttentionKernels twin = attention_kernels(TensorType::Q4_0, hd);
          twin.value_weights(scattered.tiles.data(), row_bytes, cnt, hd, p.data(), cnt, g, w_ref.data());
          twin.accumulate_weighted(scattered.tiles.data(), row_bytes, cnt, hd, w_ref.data(), g, out_ref.data(), hd);
          set_active_isa(GetParam());
          const std::string at = "hd=" + std::to_string(hd) + " g=" + std::to_string(g) + " cnt=" + std::to_string(cnt) +
                                 " pad=" + std::to_string(pad);
          for (size_t i = 0; i < n_w; ++i) {
            ASSERT_EQ(w[i], w_ref[i]) << at << " weight record byte " << i;
            ASSERT_EQ(w[i], w_contig[i]) << at << " weight record byte " << i << " (contiguous tiles)";
          }
          for (size_t i = 0; i < out.size(); ++i) {
            ASSERT_EQ(std::memcmp(&out[i], &out_ref[i], sizeof(float)), 0)
                << at << " out " << i << ": " << out[i] << " vs " << out_ref[i];
            ASSERT_EQ(std::memcmp(&out[i], &out_contig[i], sizeof(float)), 0) << at << " out " << i << " (contiguous tiles)";
          }
        }
      }
    }
  }
}

// Groups whose largest |p * d| is 0 or below 2^-120 add nothing: weights 0, scale 0, no 0 * inf
// or NaN; a group at exactly 2^-120 is kept. By hand, from the definition, d = 1 and all codes
// -1 everywhere, G = kValueWeightGroupRows: group 0 p = 0; group 1 p = FLT_MIN / 4 (subnormal);
// group 2 p = 2^-122 (normal, below the threshold); group 3 p = 2^-120 (kept: q = 127,
// S = 2^-120 / 127, too small to move an output of 1); group 4 (one row) p = 0.5: q = 127,
// S = 0.5 / 127, offset 1016, so out = fma(-127, S, 1) = 0.5 exactly (127 * fl(0.5 / 127) rounds
// to 0.5).
TEST_P(Attention, WeightedValueSumTinyGroupsAddNothing) {
  if (attention_kernels(TensorType::Q4_0, 32).accumulate_weighted == nullptr)
    GTEST_SKIP() << "no int8-weighted V sum on this ISA";
  constexpr int kG = static_cast<int>(kValueWeightGroupRows);
  constexpr int kRows = 4 * kG + 1;
  std::vector<BlockQ4_0> rows(kRows);
  for (auto& r : rows) {
    r.d = fp32_to_fp16(1.0f);
    std::memset(r.qs, 0x77, sizeof r.qs);  // nibbles 7: value -1
  }
  const float group_p[5] = {0.0f, std::numeric_limits<float>::min() / 4, 0x1p-122f, 0x1p-120f, 0.5f};
  std::vector<float> p(kRows);
  for (int s = 0; s < kRows; ++s) p[static_cast<size_t>(s)] = group_p[s / kG];
  std::vector<const uint8_t*> tiles;
  for (int s = 0; s < kRows; s += 16) tiles.push_back(reinterpret_cast<const uint8_t*>(&rows[static_cast<size_t>(s)]));
  for (const bool twin : {false, true}) {
    if (twin) set_active_isa(Isa::kScalar);
    const AttentionKernels k = attention_kernels(TensorType::Q4_0, 32);
    std::vector<uint8_t> w(static_cast<size_t>(value_weights_bytes(kRows, 1, 32)));
    std::vector<float> out(32, 1.0f);
    k.value_weights(tiles.data(), sizeof(BlockQ4_0), kRows, 32, p.data(), kRows, 1, w.data());
    k.accumulate_weighted(tiles.data(), sizeof(BlockQ4_0), kRows, 32, w.data(), 1, out.data(), 32);
    if (twin) set_active_isa(GetParam());
    const char* who = twin ? "twin" : "kernel";
    const ValueWeightGroup rec(1, 1);
    for (int grp = 0; grp < 5; ++grp) {
      float scale;
      std::memcpy(&scale, w.data() + grp * rec.bytes + rec.scale_offset(0, 0), sizeof scale);
      const bool kept = grp >= 3;
      EXPECT_EQ(scale, kept ? group_p[grp] / 127.0f : 0.0f) << who << " group " << grp;
      const int rows_in = grp == 4 ? 1 : kG;
      for (int j = 0; j < kG; ++j) {
        EXPECT_EQ(static_cast<int8_t>(w[static_cast<size_t>(grp * rec.bytes + j)]), kept && j < rows_in ? 127 : 0)
            << who << " group " << grp << " row " << j;
      }
    }
    for (int i = 0; i < 32; ++i) EXPECT_EQ(out[static_cast<size_t>(i)], 0.5f) << who << " element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Isas, Attention, ::testing::ValuesIn(supported_isas()),
                         [](const ::testing::TestParamInfo<Isa>& info) { return std::string(isa_name(info.param)); });

ErrorCode code_of(void (*fn)()) {
  try {
    fn();
  } catch (const Error& e) {
    return e.code();
  }
  return ErrorCode::kInternal;  // nothing thrown
}

TEST(AttentionArgs, RejectsUnsupportedTypesAndShapes) {
  EXPECT_EQ(code_of([] { attention_kernels(TensorType::Q4_1, 64); }), ErrorCode::kUnsupported);
  EXPECT_EQ(code_of([] { attention_kernels(TensorType::BF16, 64); }), ErrorCode::kUnsupported);
  EXPECT_EQ(code_of([] { attention_kernels(TensorType::Q8_0, 48); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([] { attention_kernels(TensorType::Q4_0, 48); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([] { attention_kernels(TensorType::F16, 0); }), ErrorCode::kInvalidArgument);
  // Rows shorter than one head row, negative counts, overlapping head strides.
  EXPECT_EQ(code_of([] {
              float q[64] = {}, s[16] = {};
              uint8_t rows[16 * 128] = {};
              attention_scores(TensorType::F16, rows, 100, 16, 64, q, 64, 1, 1.0f, s, 16);
            }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([] {
              float p[16] = {}, out[64] = {};
              uint8_t rows[16 * 128] = {};
              attention_accumulate(TensorType::F16, rows, 128, -1, 64, p, 16, 1, out, 64);
            }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([] {
              float p[32] = {}, out[128] = {};
              uint8_t rows[16 * 128] = {};
              attention_accumulate(TensorType::F16, rows, 128, 16, 64, p, 16, 2, out, 32);
            }),
            ErrorCode::kInvalidArgument);
  // Int8-query scores exist for Q8_0 / Q4_0 rows only.
  EXPECT_EQ(code_of([] {
              QueryBlockQ8 q[2] = {};
              float s[16] = {};
              uint8_t rows[16 * 128] = {};
              attention_scores_q8(TensorType::F16, rows, 128, 16, 64, q, 2, 1, s, 16);
            }),
            ErrorCode::kUnsupported);
  // Nothing to do is fine, even with null pointers.
  EXPECT_NO_THROW(attention_scores(TensorType::F32, nullptr, 0, 0, 64, nullptr, 64, 3, 1.0f, nullptr, 0));
}

}  // namespace
}  // namespace edgellm::kernels
