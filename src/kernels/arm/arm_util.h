// Internal NEON helpers shared by the ARM64 kernel files (neon/, dotprod/, i8mm/).
// Everything is in an anonymous namespace: the same inline function compiled with different
// -march flags in different files must not be merged by the linker into one copy (it could
// then carry instructions the CPU lacks). For the same reason the SIMD files avoid core/fp16.h
// and call the scalar reference only through its out-of-line functions.
#pragma once

#include <arm_neon.h>

#include <cstdint>

namespace edgellm::kernels::arm {
namespace {

#if defined(__GNUC__)
#define EDGELLM_ARM_INLINE inline __attribute__((always_inline))
#else
#define EDGELLM_ARM_INLINE inline
#endif

// One F16 -> F32 with the FCVTL instruction (exact, subnormals included: FZ16 is off).
EDGELLM_ARM_INLINE float half_to_float(uint16_t h) {
  return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0);
}

// One F32 -> F16, round to nearest even (FPCR default), same as core/fp16.h fp32_to_fp16.
EDGELLM_ARM_INLINE uint16_t float_to_half(float f) {
  return vget_lane_u16(vreinterpret_u16_f16(vcvt_f16_f32(vdupq_n_f32(f))), 0);
}

// 4 halves -> 4 floats.
EDGELLM_ARM_INLINE float32x4_t load_f16x4(const uint16_t* p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }

// 4 bfloat16 -> 4 floats (exact: bf16 is the top half of a float).
EDGELLM_ARM_INLINE float32x4_t load_bf16x4(const uint16_t* p) {
  return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16));
}

EDGELLM_ARM_INLINE void prefetch(const void* p) { __builtin_prefetch(p, 0, 3); }

// exp(x), Cephes-style: x = n ln2 + r with |r| <= ln2/2, degree-6 polynomial for e^r, times
// 2^n built in the exponent field. Relative error ~2 ulp over the normal range; x < -87.33
// gives exactly 0 (so exp(-inf) = 0) and x > 88 gives +inf — the same constants as the x86
// kernels, so every SIMD path rounds alike.
EDGELLM_ARM_INLINE float32x4_t exp_ps(float32x4_t x) {
  const uint32x4_t lo_mask = vcltq_f32(x, vdupq_n_f32(-87.33f));
  const uint32x4_t hi_mask = vcgtq_f32(x, vdupq_n_f32(88.0f));
  x = vminq_f32(vmaxq_f32(x, vdupq_n_f32(-87.33f)), vdupq_n_f32(88.0f));
  const float32x4_t n = vrndnq_f32(vmulq_n_f32(x, 1.44269504088896341f));
  float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f));  // ln2 split hi + lo
  r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
  float32x4_t p = vdupq_n_f32(1.9875691500e-4f);
  p = vfmaq_f32(vdupq_n_f32(1.3981999507e-3f), p, r);
  p = vfmaq_f32(vdupq_n_f32(8.3334519073e-3f), p, r);
  p = vfmaq_f32(vdupq_n_f32(4.1665795894e-2f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.6666665459e-1f), p, r);
  p = vfmaq_f32(vdupq_n_f32(5.0000001201e-1f), p, r);
  p = vfmaq_f32(vaddq_f32(r, vdupq_n_f32(1.0f)), p, vmulq_f32(r, r));
  const int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
  float32x4_t out = vmulq_f32(p, vreinterpretq_f32_s32(e));
  out = vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(out), lo_mask));
  return vbslq_f32(hi_mask, vdupq_n_f32(__builtin_inff()), out);
}

// 0x10 in byte i where bit i of the 32 qh bits is set (the fifth bit of Q5 element i):
// bytes 0..15 of the result are elements 0..15 (`lo`), 16..31 go to `hi`.
EDGELLM_ARM_INLINE void fifth_bits(const uint8_t* qh, uint8x16_t& lo, uint8x16_t& hi) {
  uint32_t bits;
  __builtin_memcpy(&bits, qh, sizeof bits);
  const uint8x8_t b = vcreate_u8(bits);
  static const uint8_t kBit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  const uint8x16_t sel = vld1q_u8(kBit);
  const uint8x16_t spread_lo = vcombine_u8(vdup_lane_u8(b, 0), vdup_lane_u8(b, 1));
  const uint8x16_t spread_hi = vcombine_u8(vdup_lane_u8(b, 2), vdup_lane_u8(b, 3));
  const uint8x16_t ten = vdupq_n_u8(0x10);
  lo = vandq_u8(vtstq_u8(spread_lo, sel), ten);
  hi = vandq_u8(vtstq_u8(spread_hi, sel), ten);
}

}  // namespace
}  // namespace edgellm::kernels::arm
