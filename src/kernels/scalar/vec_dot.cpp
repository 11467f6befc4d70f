// Reference dot products of one weight row with one activation row. Quantized types accumulate
// exact integer products per block and apply the float scales once per block (per sub-block for
// K-quants), which is what every SIMD path does too, so results agree to float rounding.
#include <cstring>

#include "core/fp16.h"
#include "kernels/blocks.h"
#include "kernels/quant_common.h"
#include "kernels/scalar/scalar_kernels.h"

namespace edgellm::kernels::scalar {

float vec_dot_f32(int64_t n, const void* w, const void* x) {
  return dot_f32(static_cast<const float*>(w), static_cast<const float*>(x), n);
}

float vec_dot_f16(int64_t n, const void* w, const void* x) {
  return dot_f16_f32(static_cast<const uint16_t*>(w), static_cast<const float*>(x), n);
}

float vec_dot_bf16(int64_t n, const void* w, const void* x) {
  const auto* a = static_cast<const uint16_t*>(w);
  const auto* b = static_cast<const float*>(x);
  float s = 0;
  for (int64_t i = 0; i < n; ++i) s += bf16_to_fp32(a[i]) * b[i];
  return s;
}

float vec_dot_q4_0(int64_t n, const void* w, const void* x) {
  const auto* a = static_cast<const BlockQ4_0*>(w);
  const auto* b = static_cast<const BlockQ8_0*>(x);
  float s = 0;
  for (int64_t i = 0; i < n / kQK4_0; ++i) {
    int sum = 0;
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      sum += ((a[i].qs[j] & 0x0F) - 8) * b[i].qs[j];
      sum += ((a[i].qs[j] >> 4) - 8) * b[i].qs[j + kQK4_0 / 2];
    }
    s += static_cast<float>(sum) * (fp16_to_fp32(a[i].d) * fp16_to_fp32(b[i].d));
  }
  return s;
}

// sum d_w q_w + m_w over the block times d_x q_x = d_w d_x sum(q_w q_x) + m_w * (d_x sum q_x).
float vec_dot_q4_1(int64_t n, const void* w, const void* x) {
  const auto* a = static_cast<const BlockQ4_1*>(w);
  const auto* b = static_cast<const BlockQ8_1*>(x);
  float s = 0;
  for (int64_t i = 0; i < n / kQK4_1; ++i) {
    int sum = 0;
    for (int j = 0; j < kQK4_1 / 2; ++j) {
      sum += (a[i].qs[j] & 0x0F) * b[i].qs[j];
      sum += (a[i].qs[j] >> 4) * b[i].qs[j + kQK4_1 / 2];
    }
    s += static_cast<float>(sum) * (fp16_to_fp32(a[i].d) * fp16_to_fp32(b[i].d)) +
         fp16_to_fp32(a[i].m) * fp16_to_fp32(b[i].s);
  }
  return s;
}

float vec_dot_q5_0(int64_t n, const void* w, const void* x) {
  const auto* a = static_cast<const BlockQ5_0*>(w);
  const auto* b = static_cast<const BlockQ8_0*>(x);
  float s = 0;
  for (int64_t i = 0; i < n / kQK5_0; ++i) {
    uint32_t qh;
    std::memcpy(&qh, a[i].qh, sizeof qh);
    int sum = 0;
    for (int j = 0; j < kQK5_0 / 2; ++j) {
      const int q0 = ((a[i].qs[j] & 0x0F) | static_cast<int>(((qh >> j) & 1u) << 4)) - 16;
      const int q1 = ((a[i].qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4)) - 16;
      sum += q0 * b[i].qs[j] + q1 * b[i].qs[j + kQK5_0 / 2];
    }
    s += static_cast<float>(sum) * (fp16_to_fp32(a[i].d) * fp16_to_fp32(b[i].d));
  }
  return s;
}

float vec_dot_q5_1(int64_t n, const void* w, const void* x) {
  const auto* a = static_cast<const BlockQ5_1*>(w);
  const auto* b = static_cast<const BlockQ8_1*>(x);
  float s = 0;
  for (int64_t i = 0; i < n / kQK5_1; ++i) {
    uint32_t qh;
    std::memcpy(&qh, a[i].qh, sizeof qh);
    int sum = 0;
    for (int j = 0; j < kQK5_1 / 2; ++j) {
      const int q0 = (a[i].qs[j] & 0x0F) | static_cast<int>(((qh >> j) & 1u) << 4);
      const int q1 = (a[i].qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
      sum += q0 * b[i].qs[j] + q1 * b[i].qs[j + kQK5_1 / 2];
    }
    s += static_cast<float>(sum) * (fp16_to_fp32(a[i].d) * fp16_to_fp32(b[i].d)) +
         fp16_to_fp32(a[i].m) * fp16_to_fp32(b[i].s);
  }
  return s;
}

float vec_dot_q8_0(int64_t n, const void* w, const void* x) {
  const auto* a = static_cast<const BlockQ8_0*>(w);
  const auto* b = static_cast<const BlockQ8_0*>(x);
  float s = 0;
  for (int64_t i = 0; i < n / kQK8_0; ++i) {
    int sum = 0;
    for (int j = 0; j < kQK8_0; ++j) sum += a[i].qs[j] * b[i].qs[j];
    s += static_cast<float>(sum) * (fp16_to_fp32(a[i].d) * fp16_to_fp32(b[i].d));
  }
  return s;
}

// Per super-block: d_x * (d * sum_s scale_s * sum(q * q_x) - dmin * sum_s min_s * sum(q_x over s)),
// the second sum taken from the activation's bsums (two 16-sums per 32-element sub-block).
float vec_dot_q4_k(int64_t n, const void* w, const void* x) {
  const auto* a = static_cast<const BlockQ4_K*>(w);
  const auto* b = static_cast<const BlockQ8_K*>(x);
  float s = 0;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    uint8_t sc[8], mn[8];
    unpack_scales_mins_k4(a[i].scales, sc, mn);
    int32_t isum = 0, msum = 0;
    const uint8_t* q = a[i].qs;
    const int8_t* y = b[i].qs;
    for (int g = 0; g < 4; ++g, q += 32, y += 64) {
      int s0 = 0, s1 = 0;
      for (int l = 0; l < 32; ++l) {
        s0 += (q[l] & 0x0F) * y[l];
        s1 += (q[l] >> 4) * y[l + 32];
      }
      isum += s0 * sc[2 * g] + s1 * sc[2 * g + 1];
    }
    for (int j = 0; j < 8; ++j) msum += mn[j] * (b[i].bsums[2 * j] + b[i].bsums[2 * j + 1]);
    s += b[i].d * (fp16_to_fp32(a[i].d) * static_cast<float>(isum) - fp16_to_fp32(a[i].dmin) * static_cast<float>(msum));
  }
  return s;
}

float vec_dot_q5_k(int64_t n, const void* w, const void* x) {
  const auto* a = static_cast<const BlockQ5_K*>(w);
  const auto* b = static_cast<const BlockQ8_K*>(x);
  float s = 0;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    uint8_t sc[8], mn[8];
    unpack_scales_mins_k4(a[i].scales, sc, mn);
    int32_t isum = 0, msum = 0;
    const uint8_t* q = a[i].qs;
    const uint8_t* qh = a[i].qh;
    const int8_t* y = b[i].qs;
    for (int g = 0; g < 4; ++g, q += 32, y += 64) {
      const int u0 = 1 << (2 * g), u1 = 2 << (2 * g);
      int s0 = 0, s1 = 0;
      for (int l = 0; l < 32; ++l) {
        s0 += ((q[l] & 0x0F) + ((qh[l] & u0) ? 16 : 0)) * y[l];
        s1 += ((q[l] >> 4) + ((qh[l] & u1) ? 16 : 0)) * y[l + 32];
      }
      isum += s0 * sc[2 * g] + s1 * sc[2 * g + 1];
    }
    for (int j = 0; j < 8; ++j) msum += mn[j] * (b[i].bsums[2 * j] + b[i].bsums[2 * j + 1]);
    s += b[i].d * (fp16_to_fp32(a[i].d) * static_cast<float>(isum) - fp16_to_fp32(a[i].dmin) * static_cast<float>(msum));
  }
  return s;
}

float vec_dot_q6_k(int64_t n, const void* w, const void* x) {
  const auto* a = static_cast<const BlockQ6_K*>(w);
  const auto* b = static_cast<const BlockQ8_K*>(x);
  float s = 0;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const uint8_t* ql = a[i].ql;
    const uint8_t* qh = a[i].qh;
    const int8_t* sc = a[i].scales;
    const int8_t* y = b[i].qs;
    int32_t isum = 0;
    for (int half = 0; half < 2; ++half, ql += 64, qh += 32, sc += 8, y += 128) {
      int s16[8] = {};  // sums of the 8 groups of 16 in this half, in group order
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        s16[is + 0] += q1 * y[l];
        s16[is + 2] += q2 * y[l + 32];
        s16[is + 4] += q3 * y[l + 64];
        s16[is + 6] += q4 * y[l + 96];
      }
      for (int k = 0; k < 8; ++k) isum += s16[k] * sc[k];
    }
    s += b[i].d * fp16_to_fp32(a[i].d) * static_cast<float>(isum);
  }
  return s;
}

void matmul_with(VecDotFn dot, int64_t n, const void* w, size_t w_row_bytes, int64_t r0, int64_t r1, const void* xq,
                 size_t xq_row_bytes, int64_t n_tokens, float* y, int64_t y_stride) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* xb = static_cast<const uint8_t*>(xq);
  for (int64_t t = 0; t < n_tokens; ++t) {
    const void* xr = xb + static_cast<size_t>(t) * xq_row_bytes;
    for (int64_t r = r0; r < r1; ++r) {
      y[t * y_stride + r] = dot(n, wb + static_cast<size_t>(r) * w_row_bytes, xr);
    }
  }
}

}  // namespace edgellm::kernels::scalar
