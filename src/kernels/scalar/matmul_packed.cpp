// Scalar reference for the 16-row interleaved Q4_0/Q5_0/Q8_0/Q4_K/Q6_K _X16 weights (layout in
// kernels/repack.h) and their BlockQ8_0S activations. Written lane by lane from the layout
// description, independently of the SIMD kernels it is the reference for.
#include <cstring>

#include "core/fp16.h"
#include "kernels/blocks.h"
#include "kernels/repack.h"
#include "kernels/scalar/scalar_kernels.h"

namespace edgellm::kernels::scalar {

void quantize_q8_0s(const float* src, void* dst, int64_t n) {
  // Exactly the Q8_0 codes and (F16-rounded) scale, so a packed matmul equals the file-layout one.
  auto* out = static_cast<BlockQ8_0S*>(dst);
  for (int64_t b = 0; b < n / kQK8_0; ++b) {
    BlockQ8_0 q;
    quantize_q8_0(src + b * kQK8_0, &q, kQK8_0);
    out[b].d = fp16_to_fp32(q.d);
    int32_t sum = 0;
    for (int i = 0; i < kQK8_0; ++i) sum += q.qs[i];
    out[b].sum = sum;
    std::memcpy(out[b].qs, q.qs, sizeof q.qs);
  }
}

void quantize_q8_ks(const float* src, void* dst, int64_t n) {
  // Exactly the Q8_K codes and scale; the sub-block sums come from Q8_K's 16-element bsums.
  auto* out = static_cast<BlockQ8_KS*>(dst);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    BlockQ8_K q;
    quantize_q8_k(src + b * kQK_K, &q, kQK_K);
    q8_k_to_q8_ks(q, out[b]);
  }
}

void q8_k_to_q8_ks(const BlockQ8_K& q, BlockQ8_KS& out) {
  out.d = q.d;
  for (int j = 0; j < kQK_K / 32; ++j) out.sums[j] = static_cast<int16_t>(q.bsums[2 * j] + q.bsums[2 * j + 1]);
  std::memcpy(out.qs, q.qs, sizeof q.qs);
}

namespace {

// Q4_K_X16 and Q5_K_X16 (a Q4_K_X16 column plus fifth bits, kernels/repack.h):
// y = sum_b dx * (d_r * sum_j sc_j * dot_j - dmin_r * sum_j m_j * sum_j(x)), as ggml's K-quant dot.
template <bool kQ5>
void matmul_k4_x16(int64_t n, const void* w, size_t w_row_bytes, int64_t r0, int64_t r1, const void* xq,
                   size_t xq_row_bytes, int64_t n_tokens, float* y, int64_t y_stride) {
  constexpr int64_t kColumnBytes = kQ5 ? kQ5KX16ColumnBytes : kQ4KX16ColumnBytes;
  const int64_t nb = n / kQK_K;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t lane = r % kPackRows;
    const auto* group = static_cast<const uint8_t*>(w) + static_cast<size_t>(r - lane) * w_row_bytes;
    for (int64_t t = 0; t < n_tokens; ++t) {
      const auto* x = reinterpret_cast<const BlockQ8_KS*>(static_cast<const uint8_t*>(xq) + t * xq_row_bytes);
      float acc = 0.0f;
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* col = group + b * kColumnBytes;
        const uint8_t* scales = col + kQ4KX16Scales;
        const uint8_t* mins = col + kQ4KX16Mins;
        int32_t dot_scaled = 0, mins_sum = 0;
        for (int j = 0; j < 8; ++j) {
          const int g = j / 2, half = j % 2;
          int32_t dot = 0;
          for (int k = 0; k < 8; ++k) {
            for (int i = 0; i < 4; ++i) {
              const uint8_t byte = col[((g * 8 + k) * kPackRows + lane) * 4 + i];
              const int fifth = kQ5 ? (col[kQ5KX16High + (k * kPackRows + lane) * 4 + i] >> j) & 1 : 0;
              dot += ((half == 0 ? (byte & 0x0F) : (byte >> 4)) | (fifth << 4)) * x[b].qs[32 * j + 4 * k + i];
            }
          }
          dot_scaled += scales[j * kPackRows + lane] * dot;
          mins_sum += mins[(g * kPackRows + lane) * 2 + half] * x[b].sums[j];
        }
        uint16_t d16, m16;
        std::memcpy(&d16, col + kQ4KX16D + 2 * lane, 2);
        std::memcpy(&m16, col + kQ4KX16Dmin + 2 * lane, 2);
        acc += x[b].d * (fp16_to_fp32(d16) * static_cast<float>(dot_scaled) -
                         fp16_to_fp32(m16) * static_cast<float>(mins_sum));
      }
      y[t * y_stride + r] = acc;
    }
  }
}

}  // namespace

void matmul_q4_k_x16(int64_t n, const void* w, size_t w_row_bytes, int64_t r0, int64_t r1, const void* xq,
                     size_t xq_row_bytes, int64_t n_tokens, float* y, int64_t y_stride) {
  matmul_k4_x16<false>(n, w, w_row_bytes, r0, r1, xq, xq_row_bytes, n_tokens, y, y_stride);
}

void matmul_q5_k_x16(int64_t n, const void* w, size_t w_row_bytes, int64_t r0, int64_t r1, const void* xq,
                     size_t xq_row_bytes, int64_t n_tokens, float* y, int64_t y_stride) {
  matmul_k4_x16<true>(n, w, w_row_bytes, r0, r1, xq, xq_row_bytes, n_tokens, y, y_stride);
}

void matmul_q6_k_x16(int64_t n, const void* w, size_t w_row_bytes, int64_t r0, int64_t r1, const void* xq,
                     size_t xq_row_bytes, int64_t n_tokens, float* y, int64_t y_stride) {
  // y = sum_b dx * d_r * sum_j sc_j * sum_{e in j} (q_e - 32) x_e, with q_e = ql nibble | qh pair << 4.
  constexpr int64_t kColumnBytes = 2048 + 1024 + 256;
  const int64_t nb = n / kQK_K;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t lane = r % kPackRows;
    const auto* group = static_cast<const uint8_t*>(w) + static_cast<size_t>(r - lane) * w_row_bytes;
    const auto* dd = reinterpret_cast<const uint16_t*>(group + nb * kColumnBytes);
    for (int64_t t = 0; t < n_tokens; ++t) {
      const auto* x = reinterpret_cast<const BlockQ8_K*>(static_cast<const uint8_t*>(xq) + t * xq_row_bytes);
      float acc = 0.0f;
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* ql = group + b * kColumnBytes;
        const uint8_t* qh = ql + 2048;
        const auto* sc = reinterpret_cast<const int8_t*>(ql + 3072);
        int32_t sum = 0;
        for (int j = 0; j < 16; ++j) {
          int32_t dot = 0;
          for (int s = 0; s < 4; ++s) {
            for (int i = 0; i < 4; ++i) {
              const int e = 16 * j + 4 * s + i;  // element of the super-block
              const int c = j / 2;               // 32-element chunk; sub-block 2c low nibbles, 2c+1 high
              const uint8_t lo_byte = ql[((c * 4 + s) * kPackRows + lane) * 4 + i];
              const int lo = j % 2 == 0 ? (lo_byte & 0x0F) : (lo_byte >> 4);
              const int hi = (qh[(j * kPackRows + lane) * 4 + i] >> (2 * s)) & 3;
              dot += ((lo | (hi << 4)) - 32) * x[b].qs[e];
            }
          }
          sum += sc[j * kPackRows + lane] * dot;
        }
        uint16_t d16;
        std::memcpy(&d16, dd + b * kPackRows + lane, 2);
        acc += x[b].d * fp16_to_fp32(d16) * static_cast<float>(sum);
      }
      y[t * y_stride + r] = acc;
    }
  }
}

void matmul_q5_0_x16(int64_t n, const void* w, size_t w_row_bytes, int64_t r0, int64_t r1, const void* xq,
                     size_t xq_row_bytes, int64_t n_tokens, float* y, int64_t y_stride) {
  // Per block: 256 bytes of low nibbles (as Q4_0_X16), 64 bytes of fifth bits, values - 16.
  constexpr int64_t kColumnBytes = kPackRows * (kQK5_0 / 2) + kPackRows * 4;
  const int64_t nb = n / kQK5_0;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t lane = r % kPackRows;
    const auto* group = static_cast<const uint8_t*>(w) + static_cast<size_t>(r - lane) * w_row_bytes;
    const auto* scales = reinterpret_cast<const uint16_t*>(group + nb * kColumnBytes);
    for (int64_t t = 0; t < n_tokens; ++t) {
      const auto* x = reinterpret_cast<const BlockQ8_0S*>(static_cast<const uint8_t*>(xq) + t * xq_row_bytes);
      float acc = 0.0f;
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* cb = group + b * kColumnBytes;
        const uint8_t* high = cb + kPackRows * (kQK5_0 / 2) + lane * 4;
        int32_t dot = 0;
        for (int j = 0; j < 4; ++j) {
          for (int i = 0; i < 4; ++i) {
            const uint8_t byte = cb[(j * kPackRows + lane) * 4 + i];
            const int lo = (byte & 0x0F) | (((high[i] >> j) & 1) << 4);
            const int hi = (byte >> 4) | (((high[i] >> (j + 4)) & 1) << 4);
            dot += (lo - 16) * x[b].qs[4 * j + i] + (hi - 16) * x[b].qs[16 + 4 * j + i];
          }
        }
        uint16_t d16;
        std::memcpy(&d16, scales + b * kPackRows + lane, sizeof d16);
        acc += fp16_to_fp32(d16) * x[b].d * static_cast<float>(dot);
      }
      y[t * y_stride + r] = acc;
    }
  }
}

namespace {

// codes per lane per block: Q4_0 16 bytes (two elements each), Q8_0 32 bytes.
template <bool kQ4>
void matmul_packed(int64_t n, const void* w, size_t w_row_bytes, int64_t r0, int64_t r1, const void* xq,
                   size_t xq_row_bytes, int64_t n_tokens, float* y, int64_t y_stride) {
  const int64_t nb = n / kQK8_0;
  const int64_t code_bytes = kPackRows * (kQ4 ? kQK4_0 / 2 : kQK8_0);
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t lane = r % kPackRows;
    const auto* group = static_cast<const uint8_t*>(w) + static_cast<size_t>(r - lane) * w_row_bytes;
    const auto* scales = reinterpret_cast<const uint16_t*>(group + nb * code_bytes);
    for (int64_t t = 0; t < n_tokens; ++t) {
      const auto* x = reinterpret_cast<const BlockQ8_0S*>(static_cast<const uint8_t*>(xq) + t * xq_row_bytes);
      float acc = 0.0f;
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* cb = group + b * code_bytes;
        int32_t dot = 0;
        if (kQ4) {
          for (int j = 0; j < 4; ++j) {
            for (int i = 0; i < 4; ++i) {
              const uint8_t byte = cb[(j * kPackRows + lane) * 4 + i];
              dot += (byte & 0x0F) * x[b].qs[4 * j + i] + (byte >> 4) * x[b].qs[16 + 4 * j + i];
            }
          }
          dot -= 8 * x[b].sum;
        } else {
          for (int j = 0; j < 8; ++j) {
            for (int i = 0; i < 4; ++i) dot += cb[(j * kPackRows + lane) * 4 + i] * x[b].qs[4 * j + i];
          }
          dot -= 128 * x[b].sum;
        }
        uint16_t d16;
        std::memcpy(&d16, scales + b * kPackRows + lane, sizeof d16);
        acc += fp16_to_fp32(d16) * x[b].d * static_cast<float>(dot);
      }
      y[t * y_stride + r] = acc;
    }
  }
}

}  // namespace

void matmul_q4_0_x16(int64_t n, const void* w, size_t w_row_bytes, int64_t r0, int64_t r1, const void* xq,
                     size_t xq_row_bytes, int64_t n_tokens, float* y, int64_t y_stride) {
  matmul_packed<true>(n, w, w_row_bytes, r0, r1, xq, xq_row_bytes, n_tokens, y, y_stride);
}

void matmul_q8_0_x16(int64_t n, const void* w, size_t w_row_bytes, int64_t r0, int64_t r1, const void* xq,
                     size_t xq_row_bytes, int64_t n_tokens, float* y, int64_t y_stride) {
  matmul_packed<false>(n, w, w_row_bytes, r0, r1, xq, xq_row_bytes, n_tokens, y, y_stride);
}

}  // namespace edgellm::kernels::scalar
