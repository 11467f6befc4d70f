// F16 / BF16 conversions: the portable core/fp16.h versions against the hardware (F16C on x86,
// exhaustive over all 65536 halves and over many float bit patterns), BF16 rounding by hand, and
// the row converters of every ISA against the scalar ones.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/fp16.h"
#include "kernels/cpu_features.h"
#include "kernels/kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace edgellm {
namespace {

bool same_float_bits_or_both_nan(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return float_to_bits(a) == float_to_bits(b);
}

#if defined(__x86_64__)
__attribute__((target("f16c"))) float hw_half_to_float(uint16_t h) {
  return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h)));
}
bool have_f16c() { return kernels::cpu_features().f16c && kernels::cpu_features().os_ymm; }
__attribute__((target("f16c"))) uint16_t hw_float_to_half(float f) {
  return static_cast<uint16_t>(_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(f), _MM_FROUND_TO_NEAREST_INT), 0));
}

TEST(Fp16, ExhaustiveHalfToFloatMatchesF16c) {
  if (!have_f16c()) GTEST_SKIP() << "NOT CHECKED ON THIS HOST: the CPU has no F16C";
  for (uint32_t h = 0; h < 65536; ++h) {
    const float sw = fp16_to_fp32(static_cast<uint16_t>(h));
    const float hw = hw_half_to_float(static_cast<uint16_t>(h));
    ASSERT_TRUE(same_float_bits_or_both_nan(sw, hw)) << std::hex << "half 0x" << h;
  }
}

TEST(Fp16, FloatToHalfMatchesF16c) {
  if (!have_f16c()) GTEST_SKIP() << "NOT CHECKED ON THIS HOST: the CPU has no F16C";
  // Every float whose bits are a multiple of 97 (covers all exponents, subnormal/overflow
  // boundaries and many rounding positions), plus exact ties around each half ulp.
  for (uint64_t bits = 0; bits <= 0xFFFFFFFFull; bits += 97) {
    const float f = bits_to_float(static_cast<uint32_t>(bits));
    const uint16_t sw = fp32_to_fp16(f);
    const uint16_t hw = hw_float_to_half(f);
    if (std::isnan(f)) {
      ASSERT_TRUE((sw & 0x7C00) == 0x7C00 && (sw & 0x3FF) != 0) << std::hex << "float bits 0x" << bits;
      continue;
    }
    ASSERT_EQ(sw, hw) << std::hex << "float bits 0x" << bits;
  }
  for (uint32_t h = 0; h < 0x7C00; ++h) {
    // Midpoint between half h and h+1 (a tie: must round to the even one) and its neighbours.
    const double mid = (static_cast<double>(fp16_to_fp32(static_cast<uint16_t>(h))) +
                        static_cast<double>(fp16_to_fp32(static_cast<uint16_t>(h + 1)))) / 2;
    const float m = static_cast<float>(mid);
    for (float f : {m, std::nextafter(m, 0.0f), std::nextafter(m, 1e9f), -m}) {
      ASSERT_EQ(fp32_to_fp16(f), hw_float_to_half(f)) << "near half 0x" << std::hex << h;
    }
  }
}
#endif

TEST(Fp16, HandCheckedValues) {
  EXPECT_EQ(fp32_to_fp16(1.0f), 0x3C00);
  EXPECT_EQ(fp32_to_fp16(-2.0f), 0xC000);
  EXPECT_EQ(fp32_to_fp16(65504.0f), 0x7BFF);   // largest half
  EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7C00);   // halfway to 2^16 rounds to even -> Inf
  EXPECT_EQ(fp32_to_fp16(5.9604644775390625e-08f), 0x0001);  // 2^-24, smallest subnormal
  EXPECT_EQ(fp32_to_fp16(2.98023223876953125e-08f), 0x0000); // 2^-25: tie -> even (0)
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even -> 1.0 (0x3C00).
  EXPECT_EQ(fp32_to_fp16(1.0f + 0.00048828125f), 0x3C00);
  // 1 + 3 * 2^-11 is halfway between 1 + 2^-10 (odd mantissa 1) and 1 + 2^-9: -> 0x3C02.
  EXPECT_EQ(fp32_to_fp16(1.0f + 3 * 0.00048828125f), 0x3C02);
}

TEST(Bf16, RoundingByHand) {
  // 1.0 = 0x3F800000 -> 0x3F80. 1 + 2^-8 = 0x3F808000 is a tie between 0x3F80 and 0x3F81: even -> 0x3F80.
  EXPECT_EQ(fp32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(fp32_to_bf16(bits_to_float(0x3F808000u)), 0x3F80);
  // 0x3F818000 is a tie between 0x3F81 (odd) and 0x3F82: even -> 0x3F82.
  EXPECT_EQ(fp32_to_bf16(bits_to_float(0x3F818000u)), 0x3F82);
  // Just above a tie rounds up, just below rounds down.
  EXPECT_EQ(fp32_to_bf16(bits_to_float(0x3F808001u)), 0x3F81);
  EXPECT_EQ(fp32_to_bf16(bits_to_float(0x3F807FFFu)), 0x3F80);
  // Largest finite float rounds up to Inf (0x7F80); NaN stays NaN.
  EXPECT_EQ(fp32_to_bf16(bits_to_float(0x7F7FFFFFu)), 0x7F80);
  const uint16_t nan = fp32_to_bf16(std::nanf(""));
  EXPECT_EQ(nan & 0x7F80, 0x7F80);
  EXPECT_NE(nan & 0x007F, 0);
  // Round trip: every bf16 value converts back exactly.
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = bf16_to_fp32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(fp32_to_bf16(f), h);
  }
}

TEST(Fp16, RowConvertersMatchScalarOnEveryIsa) {
  std::mt19937 rng(3);
  std::vector<float> x(1027);
  std::uniform_int_distribution<uint32_t> bits(0, 0xFFFFFFFFu);
  for (auto& v : x) {
    v = bits_to_float(bits(rng));
    if (std::isnan(v)) v = 1.5f;
  }
  x[0] = 65520.0f;
  x[1] = -0.0f;
  std::vector<uint16_t> ref(x.size());
  for (size_t i = 0; i < x.size(); ++i) ref[i] = fp32_to_fp16(x[i]);
  const kernels::Isa saved = kernels::active_isa();
  for (kernels::Isa isa : kernels::supported_isas()) {
    kernels::set_active_isa(isa);
    std::vector<uint16_t> h(x.size());
    kernels::fp32_to_fp16_row(x.data(), h.data(), static_cast<int64_t>(x.size()));
    ASSERT_EQ(h, ref) << kernels::isa_name(isa);
    std::vector<float> back(x.size());
    kernels::fp16_to_fp32_row(h.data(), back.data(), static_cast<int64_t>(h.size()));
    for (size_t i = 0; i < h.size(); ++i) {
      ASSERT_TRUE(same_float_bits_or_both_nan(back[i], fp16_to_fp32(h[i]))) << kernels::isa_name(isa) << " " << i;
    }
  }
  kernels::set_active_isa(saved);
}

}  // namespace
}  // namespace edgellm
