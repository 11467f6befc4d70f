// NEON activation quantization (once per matmul input row). Produces exactly the bytes of the
// scalar reference: the same float operations per element; Q8_0/Q8_1 round half away from zero
// like roundf (FCVTAS), Q8_K rounds half to even like nearest_int (FCVTNS); F16 scales use
// FCVTN's round-to-nearest-even like core/fp16.h.
#include <arm_neon.h>

#include <cstring>

#include "kernels/arm/arm_kernels.h"
#include "kernels/arm/arm_util.h"
#include "kernels/blocks.h"

namespace edgellm::kernels::neon {
namespace {

using arm::float_to_half;

// 4 x 4 int32 (each in [-127, 127]) -> 16 int8 in order.
EDGELLM_ARM_INLINE int8x16_t narrow16(int32x4_t a, int32x4_t b, int32x4_t c, int32x4_t d) {
  const int16x8_t ab = vcombine_s16(vqmovn_s32(a), vqmovn_s32(b));
  const int16x8_t cd = vcombine_s16(vqmovn_s32(c), vqmovn_s32(d));
  return vcombine_s8(vqmovn_s16(ab), vqmovn_s16(cd));
}

// One 32-element block, Q8_0 rule: d = amax / 127, q = roundf(x * (1/d)). Returns sum(q) and
// the unrounded d (Q8_1's s is computed from it, as in the reference).
EDGELLM_ARM_INLINE int32_t quantize_block32(const float* x, uint16_t* d_out, int8_t* qs, float* d_float) {
  float32x4_t v[8];
  float32x4_t m = vdupq_n_f32(0.0f);
  for (int k = 0; k < 8; ++k) {
    v[k] = vld1q_f32(x + 4 * k);
    m = vmaxq_f32(m, vabsq_f32(v[k]));
  }
  const float amax = vmaxvq_f32(m);
  const float d = amax / 127;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  *d_out = float_to_half(d);
  *d_float = d;
  int32x4_t q[8];
  int32x4_t sum = vdupq_n_s32(0);
  for (int k = 0; k < 8; ++k) {
    q[k] = vcvtaq_s32_f32(vmulq_n_f32(v[k], id));
    sum = vaddq_s32(sum, q[k]);
  }
  vst1q_s8(qs, narrow16(q[0], q[1], q[2], q[3]));
  vst1q_s8(qs + 16, narrow16(q[4], q[5], q[6], q[7]));
  return vaddvq_s32(sum);
}

}  // namespace

void quantize_q8_0(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ8_0*>(dst);
  float d;
  for (int64_t i = 0; i < n / kQK8_0; ++i) quantize_block32(x + i * kQK8_0, &y[i].d, y[i].qs, &d);
}

void quantize_q8_1(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ8_1*>(dst);
  for (int64_t i = 0; i < n / kQK8_1; ++i) {
    float d;
    const int32_t sum = quantize_block32(x + i * kQK8_1, &y[i].d, y[i].qs, &d);
    y[i].s = float_to_half(static_cast<float>(sum) * d);
  }
}

// Q8_K: iscale = -127 / (signed value of largest magnitude, first on ties), q = round-half-even
// clamped to [-127, 127], d = 1 / iscale, bsums over 16.
void quantize_q8_k(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ8_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float* b = x + i * kQK_K;
    float32x4_t m = vdupq_n_f32(0.0f);
    for (int k = 0; k < kQK_K; k += 4) m = vmaxq_f32(m, vabsq_f32(vld1q_f32(b + k)));
    const float amax = vmaxvq_f32(m);
    if (amax == 0.0f) {
      std::memset(&y[i], 0, sizeof y[i]);
      continue;
    }
    float max_signed = 0;
    for (int k = 0; k < kQK_K; ++k) {
      if ((b[k] < 0 ? -b[k] : b[k]) == amax) {
        max_signed = b[k];
        break;
      }
    }
    const float iscale = -127.f / max_signed;
    const int32x4_t lo = vdupq_n_s32(-127), hi = vdupq_n_s32(127);
    for (int k = 0; k < kQK_K; k += 16) {
      int32x4_t q[4];
      for (int j = 0; j < 4; ++j) {
        const int32x4_t v = vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(b + k + 4 * j), iscale));
        q[j] = vmaxq_s32(lo, vminq_s32(hi, v));
      }
      const int8x16_t packed = narrow16(q[0], q[1], q[2], q[3]);
      vst1q_s8(y[i].qs + k, packed);
      y[i].bsums[k / 16] = vaddlvq_s8(packed);
    }
    y[i].d = 1.0f / iscale;
  }
}

}  // namespace edgellm::kernels::neon
