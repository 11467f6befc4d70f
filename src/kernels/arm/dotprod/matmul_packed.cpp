// dotprod (armv8.2-a+dotprod) matmul for the 16-row interleaved Q4_0_X16 / Q8_0_X16 weights
// (layout and the reason for it in kernels/repack.h); the i8mm table inherits it.
//
// One 16-byte load at codes[b][j] + 16q holds 4 consecutive elements (4j .. 4j+3) of the 4 rows
// 4q .. 4q+3 of the group. SDOT by lane, vdotq_laneq_s32(p, codes, x16, l), multiplies each row's
// 4 bytes with activation bytes 4l .. 4l+3 of the 16 in x16, so one instruction advances 4 rows
// by 4 elements of one token and 8 of them finish a 32-element block for a row quad:
//   code vector j = 0..3 pairs with lane j of x.qs[0..15],
//   code vector j = 4..7 (Q4_0: the high nibbles of vectors 0..3, elements 16+4(j-4);
//                         Q8_0: stored vectors 4..7)    with lane j-4 of x.qs[16..31].
// Q4_0 codes are the nibbles 0..15 (valid int8); their offset 8 comes off through the seed
// -8 * sum(x) of the BlockQ8_0S activation block. Q8_0 codes are w + 128: XOR 0x80 restores the
// signed weight, so no seed is needed.
//
// Float contract: per (row, token) and block, acc = fma(float(exact int32 block dot), d_w * d_x,
// acc) in block order — the same operations as the file-layout NEON/dotprod/i8mm kernels
// (quant_policies.h), so a repacked matrix gives bit-identical outputs to the file layout on ARM.
//
// Tiles (why): a decoded row quad is 8 code vectors. Prefill runs 4 rows x 4 tokens: + 8
// activation vectors + 4 F32 accumulators + partials and scales stays within the 32 NEON
// registers, and each code vector is decoded once per 4 tokens. (8 rows x 4 tokens made GCC 12
// hoist the second quad's codes and spill the accumulators every block.) Decode (one token)
// runs 8 rows per pass: 16 code vectors in flight for the loads; the whole 16-row group per pass
// spilled accumulators under GCC 12 and clang 14. The first pass over a group pulls its lines
// from DRAM (with software prefetch), the later passes re-read them from cache.
#include <arm_neon.h>

#include "kernels/arm/arm_kernels.h"
#include "kernels/arm/arm_util.h"
#include "kernels/blocks.h"
#include "kernels/repack.h"

namespace edgellm::kernels::dotprod {
namespace {

// The tile loops have compile-time trip counts; unrolled, their arrays (accumulators, decoded
// codes) live in registers. GCC -O2 does not unroll them by itself.
#define EDGELLM_UNROLL _Pragma("GCC unroll 16")

// Prefill token tile (see the register budget above).
constexpr int kTokens = 4;
// Row quads (4 rows each) per prefill tile and per decode tile (see the register budget above).
constexpr int kPrefillQuads = 1;
constexpr int kDecodeQuads = 2;
// Decode streams every weight byte once from DRAM; prefetch this far ahead in the group's byte
// stream (about 2-4 block columns) so the next columns' lines are in flight while SDOTs run.
// Not tuned on hardware (only emulated here); ARM cores' stream prefetchers also catch this.
constexpr int kPrefetchBytes = 1024;
// Rows per L2 chunk for prefill: the chunk's weights are re-read from L2 by every token tile.
// 128 KiB fits the L2 of current phone big and little cores with room for the activations.
constexpr size_t kChunkBytes = 128 * 1024;

template <bool kQ4>
struct Format {
  // Code bytes per block column of a group (16 rows x 16 or 32 bytes).
  static constexpr int64_t kCodeBytes = kPackRows * (kQ4 ? kQK4_0 / 2 : kQK8_0);
  // Decodes row quad q of block column `cb` into w[0..7] (w[j] pairs with activation bytes 4j..).
  static EDGELLM_ARM_INLINE void load_codes(const uint8_t* cb, int q, int8x16_t w[8]) {
    if constexpr (kQ4) {
      const uint8x16_t mask = vdupq_n_u8(0x0F);
      EDGELLM_UNROLL for (int j = 0; j < 4; ++j) {
        const uint8x16_t v = vld1q_u8(cb + 64 * j + 16 * q);
        w[j] = vreinterpretq_s8_u8(vandq_u8(v, mask));     // elements 4j .. 4j+3
        w[j + 4] = vreinterpretq_s8_u8(vshrq_n_u8(v, 4));  // elements 16+4j .. 16+4j+3
      }
    } else {
      const uint8x16_t bias = vdupq_n_u8(0x80);
      EDGELLM_UNROLL for (int j = 0; j < 8; ++j) {
        w[j] = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(cb + 64 * j + 16 * q), bias));
      }
    }
  }
  // The int32 every partial starts from: -offset * sum(x) removes the Q4_0 code offset.
  static EDGELLM_ARM_INLINE int32x4_t seed(const BlockQ8_0S& x) {
    // Loaded straight into a vector (a GP multiply + DUP made GCC bounce it through the stack).
    if constexpr (kQ4) return vmulq_n_s32(vld1q_dup_s32(&x.sum), -8);
    return vdupq_n_s32(0);
  }
};

// Exact int32 dot of one row quad's block with one token's block: lanes = rows 4q .. 4q+3.
// kSplit: two independent chains so consecutive SDOTs do not wait on each other when only one
// token is in flight (decode); with several tokens the tokens' chains interleave instead.
template <bool kSplit>
EDGELLM_ARM_INLINE int32x4_t block_dot(int32x4_t seed, const int8x16_t w[8], int8x16_t xlo, int8x16_t xhi) {
  if constexpr (kSplit) {
    int32x4_t p0 = vdotq_laneq_s32(seed, w[0], xlo, 0);
    int32x4_t p1 = vdotq_laneq_s32(vdupq_n_s32(0), w[1], xlo, 1);
    p0 = vdotq_laneq_s32(p0, w[2], xlo, 2);
    p1 = vdotq_laneq_s32(p1, w[3], xlo, 3);
    p0 = vdotq_laneq_s32(p0, w[4], xhi, 0);
    p1 = vdotq_laneq_s32(p1, w[5], xhi, 1);
    p0 = vdotq_laneq_s32(p0, w[6], xhi, 2);
    p1 = vdotq_laneq_s32(p1, w[7], xhi, 3);
    return vaddq_s32(p0, p1);
  } else {
    int32x4_t p = vdotq_laneq_s32(seed, w[0], xlo, 0);
    p = vdotq_laneq_s32(p, w[1], xlo, 1);
    p = vdotq_laneq_s32(p, w[2], xlo, 2);
    p = vdotq_laneq_s32(p, w[3], xlo, 3);
    p = vdotq_laneq_s32(p, w[4], xhi, 0);
    p = vdotq_laneq_s32(p, w[5], xhi, 1);
    p = vdotq_laneq_s32(p, w[6], xhi, 2);
    return vdotq_laneq_s32(p, w[7], xhi, 3);
  }
}

// Rows 4*q0 .. 4*(q0+RQ)-1 of the group at `group` times TT tokens (activation rows x, x +
// x_row_bytes, ...); y points at the output of the tile's first row for the first token.
template <bool kQ4, int RQ, int TT>
EDGELLM_ARM_INLINE void tile(const uint8_t* group, int64_t nb, int q0, const uint8_t* x, size_t x_row_bytes, float* y,
                             int64_t y_stride) {
  using F = Format<kQ4>;
  const auto* scales = reinterpret_cast<const uint16_t*>(group + nb * F::kCodeBytes);
  const BlockQ8_0S* xt[TT];
  for (int t = 0; t < TT; ++t) xt[t] = reinterpret_cast<const BlockQ8_0S*>(x + static_cast<size_t>(t) * x_row_bytes);
  float32x4_t acc[RQ][TT];
  EDGELLM_UNROLL for (int q = 0; q < RQ; ++q) {
    EDGELLM_UNROLL for (int t = 0; t < TT; ++t) acc[q][t] = vdupq_n_f32(0.0f);
  }
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* cb = group + b * F::kCodeBytes;
    if (TT == 1 && q0 == 0) {  // later passes over the group find its lines in cache
      for (int64_t o = 0; o < F::kCodeBytes; o += 64) arm::prefetch(cb + kPrefetchBytes + o);
      // A block column's 16 scales are 32 bytes: one line every second column.
      if ((b & 1) == 0) arm::prefetch(reinterpret_cast<const uint8_t*>(scales + b * kPackRows) + kPrefetchBytes);
    }
    int8x16_t xlo[TT], xhi[TT];
    float dx[TT];
    EDGELLM_UNROLL for (int t = 0; t < TT; ++t) {
      xlo[t] = vld1q_s8(xt[t][b].qs);
      xhi[t] = vld1q_s8(xt[t][b].qs + 16);
      dx[t] = xt[t][b].d;
    }
    EDGELLM_UNROLL for (int q = 0; q < RQ; ++q) {
      // 4 F16 scales of rows 4(q0+q) .. +3 -> F32 (exact).
      const float32x4_t dw = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(scales + b * kPackRows + 4 * (q0 + q))));
      int8x16_t w[8];
      F::load_codes(cb, q0 + q, w);
      EDGELLM_UNROLL for (int t = 0; t < TT; ++t) {
        const int32x4_t p = block_dot<TT == 1>(F::seed(xt[t][b]), w, xlo[t], xhi[t]);
        acc[q][t] = vfmaq_f32(acc[q][t], vcvtq_f32_s32(p), vmulq_n_f32(dw, dx[t]));
      }
    }
  }
  EDGELLM_UNROLL for (int q = 0; q < RQ; ++q) {
    EDGELLM_UNROLL for (int t = 0; t < TT; ++t) vst1q_f32(y + t * y_stride + 4 * q, acc[q][t]);
  }
}

// Every group of rows [ra, rb) (multiples of 16) for TT tokens, RQ row quads per tile.
template <bool kQ4, int RQ, int TT>
void groups(const uint8_t* w, size_t w_row_bytes, int64_t nb, int64_t ra, int64_t rb, const uint8_t* x,
            size_t x_row_bytes, float* y, int64_t y_stride) {
  for (int64_t r = ra; r < rb; r += kPackRows) {
    const uint8_t* group = w + static_cast<size_t>(r) * w_row_bytes;
    for (int q0 = 0; q0 < kPackRows / 4; q0 += RQ) {
      tile<kQ4, RQ, TT>(group, nb, q0, x, x_row_bytes, y + r + 4 * q0, y_stride);
    }
  }
}

template <bool kQ4>
void matmul_packed(int64_t n, const void* wv, size_t w_row_bytes, int64_t r0, int64_t r1, const void* xq,
                   size_t x_row_bytes, int64_t n_tokens, float* y, int64_t y_stride) {
  const int64_t nb = n / kQK8_0;
  const auto* w = static_cast<const uint8_t*>(wv);
  const auto* x = static_cast<const uint8_t*>(xq);
  if (n_tokens == 1) {
    groups<kQ4, kDecodeQuads, 1>(w, w_row_bytes, nb, r0, r1, x, x_row_bytes, y, y_stride);
    return;
  }
  int64_t chunk_rows = static_cast<int64_t>(kChunkBytes / w_row_bytes) / kPackRows * kPackRows;
  if (chunk_rows < kPackRows) chunk_rows = kPackRows;
  for (int64_t rc = r0; rc < r1; rc += chunk_rows) {
    const int64_t re = rc + chunk_rows < r1 ? rc + chunk_rows : r1;
    int64_t t = 0;
    for (; t + kTokens <= n_tokens; t += kTokens) {
      groups<kQ4, kPrefillQuads, kTokens>(w, w_row_bytes, nb, rc, re, x + static_cast<size_t>(t) * x_row_bytes,
                                          x_row_bytes, y + t * y_stride, y_stride);
    }
    // 1 .. 3 leftover tokens in one tile, so each code vector is still decoded once for them.
    const uint8_t* xr = x + static_cast<size_t>(t) * x_row_bytes;
    float* yr = y + t * y_stride;
    switch (n_tokens - t) {
      case 3: groups<kQ4, kPrefillQuads, 3>(w, w_row_bytes, nb, rc, re, xr, x_row_bytes, yr, y_stride); break;
      case 2: groups<kQ4, kPrefillQuads, 2>(w, w_row_bytes, nb, rc, re, xr, x_row_bytes, yr, y_stride); break;
      case 1: groups<kQ4, kDecodeQuads, 1>(w, w_row_bytes, nb, rc, re, xr, x_row_bytes, yr, y_stride); break;
      default: break;
    }
  }
}

}  // namespace

void matmul_q4_0_x16(int64_t n, const void* w, size_t wrb, int64_t r0, int64_t r1, const void* x, size_t xrb,
                     int64_t nt, float* y, int64_t ys) {
  matmul_packed<true>(n, w, wrb, r0, r1, x, xrb, nt, y, ys);
}

void matmul_q8_0_x16(int64_t n, const void* w, size_t wrb, int64_t r0, int64_t r1, const void* x, size_t xrb,
                     int64_t nt, float* y, int64_t ys) {
  matmul_packed<false>(n, w, wrb, r0, r1, x, xrb, nt, y, ys);
}

}  // namespace edgellm::kernels::dotprod

#undef EDGELLM_UNROLL
