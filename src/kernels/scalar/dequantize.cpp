// Reference dequantization: block layout -> F32, following ggml's formulas element for element
// (see kernels/blocks.h for the element order inside each block).
#include <cstring>

#include "core/fp16.h"
#include "kernels/blocks.h"
#include "kernels/quant_common.h"
#include "kernels/scalar/scalar_kernels.h"

namespace edgellm::kernels::scalar {

void dequantize_f32(const void* src, float* dst, int64_t n) {
  std::memmove(dst, src, static_cast<size_t>(n) * sizeof(float));
}

void dequantize_f16(const void* src, float* dst, int64_t n) {
  const auto* h = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(h[i]);
}

void dequantize_bf16(const void* src, float* dst, int64_t n) {
  const auto* h = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(h[i]);
}

// x = d * (q - 8), q the 4-bit code.
void dequantize_q4_0(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ4_0*>(src);
  for (int64_t i = 0; i < n / kQK4_0; ++i, dst += kQK4_0) {
    const float d = fp16_to_fp32(b[i].d);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      dst[j] = static_cast<float>((b[i].qs[j] & 0x0F) - 8) * d;
      dst[j + kQK4_0 / 2] = static_cast<float>((b[i].qs[j] >> 4) - 8) * d;
    }
  }
}

// x = d * q + m.
void dequantize_q4_1(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ4_1*>(src);
  for (int64_t i = 0; i < n / kQK4_1; ++i, dst += kQK4_1) {
    const float d = fp16_to_fp32(b[i].d);
    const float m = fp16_to_fp32(b[i].m);
    for (int j = 0; j < kQK4_1 / 2; ++j) {
      dst[j] = static_cast<float>(b[i].qs[j] & 0x0F) * d + m;
      dst[j + kQK4_1 / 2] = static_cast<float>(b[i].qs[j] >> 4) * d + m;
    }
  }
}

// x = d * (q5 - 16); the fifth bit of element j is bit j of the little-endian qh word.
void dequantize_q5_0(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ5_0*>(src);
  for (int64_t i = 0; i < n / kQK5_0; ++i, dst += kQK5_0) {
    const float d = fp16_to_fp32(b[i].d);
    uint32_t qh;
    std::memcpy(&qh, b[i].qh, sizeof qh);
    for (int j = 0; j < kQK5_0 / 2; ++j) {
      const int h0 = static_cast<int>((qh >> j) & 1u) << 4;
      const int h1 = static_cast<int>((qh >> (j + 16)) & 1u) << 4;
      dst[j] = static_cast<float>(((b[i].qs[j] & 0x0F) | h0) - 16) * d;
      dst[j + kQK5_0 / 2] = static_cast<float>(((b[i].qs[j] >> 4) | h1) - 16) * d;
    }
  }
}

// x = d * q5 + m.
void dequantize_q5_1(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ5_1*>(src);
  for (int64_t i = 0; i < n / kQK5_1; ++i, dst += kQK5_1) {
    const float d = fp16_to_fp32(b[i].d);
    const float m = fp16_to_fp32(b[i].m);
    uint32_t qh;
    std::memcpy(&qh, b[i].qh, sizeof qh);
    for (int j = 0; j < kQK5_1 / 2; ++j) {
      const int h0 = static_cast<int>((qh >> j) & 1u) << 4;
      const int h1 = static_cast<int>((qh >> (j + 16)) & 1u) << 4;
      dst[j] = static_cast<float>((b[i].qs[j] & 0x0F) | h0) * d + m;
      dst[j + kQK5_1 / 2] = static_cast<float>((b[i].qs[j] >> 4) | h1) * d + m;
    }
  }
}

void dequantize_q8_0(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ8_0*>(src);
  for (int64_t i = 0; i < n / kQK8_0; ++i, dst += kQK8_0) {
    const float d = fp16_to_fp32(b[i].d);
    for (int j = 0; j < kQK8_0; ++j) dst[j] = static_cast<float>(b[i].qs[j]) * d;
  }
}

void dequantize_q8_1(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ8_1*>(src);
  for (int64_t i = 0; i < n / kQK8_1; ++i, dst += kQK8_1) {
    const float d = fp16_to_fp32(b[i].d);
    for (int j = 0; j < kQK8_1; ++j) dst[j] = static_cast<float>(b[i].qs[j]) * d;
  }
}

// Sub-block s (32 elements) of a super-block: x = d * scale_s * q - dmin * min_s. The 128 bytes
// of qs are 4 groups of 32: low nibbles are sub-block 2g, high nibbles sub-block 2g+1.
void dequantize_q4_k(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ4_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = fp16_to_fp32(b[i].d);
    const float dmin = fp16_to_fp32(b[i].dmin);
    const uint8_t* q = b[i].qs;
    for (int g = 0; g < 4; ++g, q += 32) {
      uint8_t sc0, m0, sc1, m1;
      get_scale_min_k4(2 * g, b[i].scales, &sc0, &m0);
      get_scale_min_k4(2 * g + 1, b[i].scales, &sc1, &m1);
      const float d0 = d * sc0, mm0 = dmin * m0;
      const float d1 = d * sc1, mm1 = dmin * m1;
      for (int l = 0; l < 32; ++l) *dst++ = d0 * static_cast<float>(q[l] & 0x0F) - mm0;
      for (int l = 0; l < 32; ++l) *dst++ = d1 * static_cast<float>(q[l] >> 4) - mm1;
    }
  }
}

// As Q4_K; the fifth bit of element l of sub-block s is bit s of qh[l].
void dequantize_q5_k(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ5_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = fp16_to_fp32(b[i].d);
    const float dmin = fp16_to_fp32(b[i].dmin);
    const uint8_t* q = b[i].qs;
    const uint8_t* qh = b[i].qh;
    for (int g = 0; g < 4; ++g, q += 32) {
      uint8_t sc0, m0, sc1, m1;
      get_scale_min_k4(2 * g, b[i].scales, &sc0, &m0);
      get_scale_min_k4(2 * g + 1, b[i].scales, &sc1, &m1);
      const float d0 = d * sc0, mm0 = dmin * m0;
      const float d1 = d * sc1, mm1 = dmin * m1;
      const uint8_t u0 = static_cast<uint8_t>(1u << (2 * g));
      const uint8_t u1 = static_cast<uint8_t>(2u << (2 * g));
      for (int l = 0; l < 32; ++l) *dst++ = d0 * static_cast<float>((q[l] & 0x0F) + ((qh[l] & u0) ? 16 : 0)) - mm0;
      for (int l = 0; l < 32; ++l) *dst++ = d1 * static_cast<float>((q[l] >> 4) + ((qh[l] & u1) ? 16 : 0)) - mm1;
    }
  }
}

// Two halves of 128; within a half, l in [0,32): ql[l] low/high nibbles are elements l / l+64,
// ql[l+32] low/high are l+32 / l+96; qh[l] bits (0-1, 2-3, 4-5, 6-7) are the top 2 bits of
// elements l, l+32, l+64, l+96. x = d * scale[16-group] * (q6 - 32).
void dequantize_q6_k(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ6_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = fp16_to_fp32(b[i].d);
    const uint8_t* ql = b[i].ql;
    const uint8_t* qh = b[i].qh;
    const int8_t* sc = b[i].scales;
    for (int half = 0; half < 2; ++half, ql += 64, qh += 32, sc += 8, dst += 128) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        dst[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
        dst[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        dst[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        dst[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
    }
  }
}

void dequantize_q8_k(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ8_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i, dst += kQK_K) {
    for (int j = 0; j < kQK_K; ++j) dst[j] = b[i].d * static_cast<float>(b[i].qs[j]);
  }
}

}  // namespace edgellm::kernels::scalar
