// NEON vector ops: the attention inner loops (F16 K/V cache read with FCVTL), norms and
// activations. Tails shorter than a vector go to the scalar reference.
#include <arm_neon.h>

#include <cmath>

#include "kernels/arm/arm_kernels.h"
#include "kernels/arm/arm_util.h"
#include "kernels/scalar/scalar_kernels.h"

namespace edgellm::kernels::neon {

using arm::exp_ps;
using arm::load_f16x4;

float dot_f32(const float* a, const float* b, int64_t n) {
  // Four independent FMA chains hide the FMLA latency.
  float32x4_t s0 = vdupq_n_f32(0.0f), s1 = s0, s2 = s0, s3 = s0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    s0 = vfmaq_f32(s0, vld1q_f32(a + i), vld1q_f32(b + i));
    s1 = vfmaq_f32(s1, vld1q_f32(a + i + 4), vld1q_f32(b + i + 4));
    s2 = vfmaq_f32(s2, vld1q_f32(a + i + 8), vld1q_f32(b + i + 8));
    s3 = vfmaq_f32(s3, vld1q_f32(a + i + 12), vld1q_f32(b + i + 12));
  }
  for (; i + 4 <= n; i += 4) s0 = vfmaq_f32(s0, vld1q_f32(a + i), vld1q_f32(b + i));
  float s = vaddvq_f32(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3)));
  if (i < n) s += scalar::dot_f32(a + i, b + i, n - i);
  return s;
}

float dot_f16_f32(const uint16_t* a, const float* b, int64_t n) {
  float32x4_t s0 = vdupq_n_f32(0.0f), s1 = s0;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const float16x8_t h = vreinterpretq_f16_u16(vld1q_u16(a + i));
    s0 = vfmaq_f32(s0, vcvt_f32_f16(vget_low_f16(h)), vld1q_f32(b + i));
    s1 = vfmaq_f32(s1, vcvt_high_f32_f16(h), vld1q_f32(b + i + 4));
  }
  for (; i + 4 <= n; i += 4) s0 = vfmaq_f32(s0, load_f16x4(a + i), vld1q_f32(b + i));
  float s = vaddvq_f32(vaddq_f32(s0, s1));
  if (i < n) s += scalar::dot_f16_f32(a + i, b + i, n - i);
  return s;
}

void axpy_f32(float a, const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vfmaq_n_f32(vld1q_f32(y + i), vld1q_f32(x + i), a));
  for (; i < n; ++i) y[i] += a * x[i];
}

void axpy_f16(float a, const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const float16x8_t h = vreinterpretq_f16_u16(vld1q_u16(x + i));
    vst1q_f32(y + i, vfmaq_n_f32(vld1q_f32(y + i), vcvt_f32_f16(vget_low_f16(h)), a));
    vst1q_f32(y + i + 4, vfmaq_n_f32(vld1q_f32(y + i + 4), vcvt_high_f32_f16(h), a));
  }
  if (i < n) scalar::axpy_f16(a, x + i, y + i, n - i);
}

void scale_f32(float* x, float s, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(x + i, vmulq_n_f32(vld1q_f32(x + i), s));
  for (; i < n; ++i) x[i] *= s;
}

void add_f32(const float* a, const float* b, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vaddq_f32(vld1q_f32(a + i), vld1q_f32(b + i)));
  for (; i < n; ++i) y[i] = a[i] + b[i];
}

void fp32_to_fp16_row(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1_u16(y + i, vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(x + i))));
  if (i < n) scalar::fp32_to_fp16_row(x + i, y + i, n - i);
}

void dequantize_f16(const void* src, float* dst, int64_t n) {
  fp16_to_fp32_row(static_cast<const uint16_t*>(src), dst, n);
}

void fp16_to_fp32_row(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(y + i, load_f16x4(x + i));
  if (i < n) scalar::fp16_to_fp32_row(x + i, y + i, n - i);
}

void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps) {
  // Sum of squares in double lanes, like the reference, so long rows keep full precision.
  float64x2_t acc0 = vdupq_n_f64(0.0), acc1 = acc0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const float32x4_t v = vld1q_f32(x + i);
    const float64x2_t lo = vcvt_f64_f32(vget_low_f32(v));
    const float64x2_t hi = vcvt_high_f64_f32(v);
    acc0 = vfmaq_f64(acc0, lo, lo);
    acc1 = vfmaq_f64(acc1, hi, hi);
  }
  double ss = vaddvq_f64(vaddq_f64(acc0, acc1));
  for (; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const float scale = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
  i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vmulq_f32(vmulq_n_f32(vld1q_f32(x + i), scale), vld1q_f32(w + i)));
  for (; i < n; ++i) y[i] = x[i] * scale * w[i];
}

void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  float32x4_t vmax = vdupq_n_f32(-INFINITY);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vmax = vmaxq_f32(vmax, vld1q_f32(x + i));
  float mx = vmaxvq_f32(vmax);
  for (; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  if (mx == -INFINITY) {  // fully masked row: zeros rather than NaN, like the reference
    for (i = 0; i < n; ++i) x[i] = 0.0f;
    return;
  }
  const float32x4_t vm = vdupq_n_f32(mx);
  float32x4_t vsum = vdupq_n_f32(0.0f);
  i = 0;
  for (; i + 4 <= n; i += 4) {
    const float32x4_t e = exp_ps(vsubq_f32(vld1q_f32(x + i), vm));
    vst1q_f32(x + i, e);
    vsum = vaddq_f32(vsum, e);
  }
  double sum = vaddvq_f32(vsum);
  for (; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  scale_f32(x, static_cast<float>(1.0 / sum), n);
}

void silu_mul(const float* gate, const float* up, float* out, int64_t n) {
  const float32x4_t one = vdupq_n_f32(1.0f);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const float32x4_t g = vld1q_f32(gate + i);
    const float32x4_t s = vdivq_f32(g, vaddq_f32(one, exp_ps(vnegq_f32(g))));
    vst1q_f32(out + i, vmulq_f32(s, vld1q_f32(up + i)));
  }
  if (i < n) scalar::silu_mul(gate + i, up + i, out + i, n - i);
}

}  // namespace edgellm::kernels::neon
