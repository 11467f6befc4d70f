// dotprod (armv8.2-a+dotprod) matmul for the 16-row interleaved Q4_0 / Q5_0 / Q8_0 / Q4_K / Q5_K / Q6_K
// _X16 weights (layouts and the reason for them in kernels/repack.h); the i8mm table inherits it.
//
// One 16-byte load at codes[b][j] + 16q holds 4 consecutive elements (4j .. 4j+3) of the 4 rows
// 4q .. 4q+3 of the group. SDOT by lane, vdotq_laneq_s32(p, codes, x16, l), multiplies each row's
// 4 bytes with activation bytes 4l .. 4l+3 of the 16 in x16, so one instruction advances 4 rows
// by 4 elements of one token and 8 of them finish a 32-element block for a row quad:
//   code vector j = 0..3 pairs with lane j of x.qs[0..15],
//   code vector j = 4..7 (Q4_0: the high nibbles of vectors 0..3, elements 16+4(j-4);
//                         Q8_0: stored vectors 4..7)    with lane j-4 of x.qs[16..31].
// Q4_0 codes are the nibbles 0..15 (valid int8); their offset 8 comes off through the seed
// -8 * sum(x) of the BlockQ8_0S activation block. Q5_0 codes are the 5-bit 0..31 (the nibble
// plus its fifth bit, built with shift-inserts, see Format), seeded with -16 * sum(x). Q8_0
// codes are w + 128: XOR 0x80 restores the signed weight, so no seed is needed.
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
//
// Q4_K_X16 (256-element super-blocks): sub-block j (32 elements, j = 2g + half) of a row quad is
// the 8 code vectors codes[b][g][0..7] + 16q, low nibbles for half 0, high nibbles for half 1,
// so it is a 32-element block exactly like Q4_0 above (same SDOT-by-lane pairing with
// x.qs[32j .. 32j+31], no offset: the codes are the unsigned 0..15). Per (row, token) the
// super-block's integer sums are exact in int32 and built in vector lanes (lane = row):
//   isum = sum_j sc_j * dot_j      (one MLA by the 4 rows' widened scales per sub-block;
//                                   |isum| <= 8 * 63 * 32 * 15 * 128 < 2^31)
//   msum = sum_j m_j * sum_j(x)    (8 widening MLAs by lane of the token's int16 sub-block sums)
// and then the same float operations, in the same order, as the file-layout Q4_K kernels of
// neon / dotprod / i8mm (quant_policies.h K4Base::madd):
//   v = fma(-dmin, float(msum), d * float(isum)),  acc = fma(d_x, v, acc)   per super-block,
// so a repacked Q4_K matrix also gives bit-identical outputs to the file layout on ARM. Tiles
// are the Q4_0 ones (4 rows x 4 tokens, 8 rows for decode): per sub-block the 8 decoded code
// vectors + 4 int32 and 4 F32 accumulators + one token's 2 activation vectors fit the registers.
//
// Q6_K_X16 (256-element super-blocks, 16-element sub-blocks with int8 scales): per 32-element
// chunk the 4 ql and 2 qh vectors of a row quad decode into 8 unsigned 6-bit code vectors, two
// SDOT chains give the two sub-blocks' dots, and Q8_K's bsums remove the offset 32 in int32;
// the float operations are those of the file-layout Q6_K kernels, so bit-identical as well
// (details at tile_q6_k).
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

// The three 32-element block formats (repack.h): 4-bit codes, 5-bit codes (4-bit + fifth bits),
// 8-bit codes.
enum class Block32 { kQ4_0, kQ5_0, kQ8_0 };

template <Block32 kKind>
struct Format {
  // Code bytes per block column of a group: 16 rows x 16 bytes of nibbles (Q5_0: + 16 x 4 bytes
  // of fifth bits) or x 32 bytes.
  static constexpr int64_t kCodeBytes = kKind == Block32::kQ8_0   ? kPackRows * kQK8_0
                                        : kKind == Block32::kQ5_0 ? kPackRows * (kQK5_0 / 2 + 4)
                                                                  : kPackRows * (kQK4_0 / 2);
  // Decodes row quad q of block column `cb` into w[0..7] (w[j] pairs with activation bytes 4j..).
  static EDGELLM_ARM_INLINE void load_codes(const uint8_t* cb, int q, int8x16_t w[8]) {
    if constexpr (kKind == Block32::kQ4_0) {
      const uint8x16_t mask = vdupq_n_u8(0x0F);
      EDGELLM_UNROLL for (int j = 0; j < 4; ++j) {
        const uint8x16_t v = vld1q_u8(cb + 64 * j + 16 * q);
        w[j] = vreinterpretq_s8_u8(vandq_u8(v, mask));     // elements 4j .. 4j+3
        w[j + 4] = vreinterpretq_s8_u8(vshrq_n_u8(v, 4));  // elements 16+4j .. 16+4j+3
      }
    } else if constexpr (kKind == Block32::kQ5_0) {
      // high (16 bytes: rows 4q .. 4q+3 x 4 elements) holds in bit j the fifth bit of code vector
      // j. u = (high >> j) & 0x11 puts vector j's bit at bit 0 and vector j+4's at bit 4 with
      // zeros around them, so one shift-insert per vector builds the 5-bit code:
      //   SLI #4: (u << 4) | (v & 0x0F) = low nibble  + bit j   << 4   (vector j)
      //   SRI #4: (v >> 4) | (u & 0xF0) = high nibble + bit j+4 << 4   (vector j + 4)
      // 15 instructions for 8 vectors (nibble extraction, a bit move, a mask and an OR per
      // vector would take ~30).
      const uint8x16_t high = vld1q_u8(cb + kPackRows * (kQK5_0 / 2) + 16 * q);
      const uint8x16_t pair = vdupq_n_u8(0x11);
      EDGELLM_UNROLL for (int j = 0; j < 4; ++j) {
        const uint8x16_t v = vld1q_u8(cb + 64 * j + 16 * q);
        const uint8x16_t u = vandq_u8(shift_right(high, j), pair);
        w[j] = vreinterpretq_s8_u8(vsliq_n_u8(v, u, 4));      // elements 4j .. 4j+3, 0..31
        w[j + 4] = vreinterpretq_s8_u8(vsriq_n_u8(u, v, 4));  // elements 16+4j .. 16+4j+3
      }
    } else {
      const uint8x16_t bias = vdupq_n_u8(0x80);
      EDGELLM_UNROLL for (int j = 0; j < 8; ++j) {
        w[j] = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(cb + 64 * j + 16 * q), bias));
      }
    }
  }
  // The int32 every partial starts from: -offset * sum(x) removes the Q4_0 / Q5_0 code offset.
  static EDGELLM_ARM_INLINE int32x4_t seed(const BlockQ8_0S& x) {
    // Loaded straight into a vector (a GP multiply + DUP made GCC bounce it through the stack).
    if constexpr (kKind == Block32::kQ4_0) return vmulq_n_s32(vld1q_dup_s32(&x.sum), -8);
    if constexpr (kKind == Block32::kQ5_0) return vmulq_n_s32(vld1q_dup_s32(&x.sum), -16);
    return vdupq_n_s32(0);
  }

 private:
  // v >> j per byte; the immediate shift needs a constant, and j = 0 is no shift at all.
  static EDGELLM_ARM_INLINE uint8x16_t shift_right(uint8x16_t v, int j) {
    switch (j) {
      case 1: return vshrq_n_u8(v, 1);
      case 2: return vshrq_n_u8(v, 2);
      case 3: return vshrq_n_u8(v, 3);
      default: return v;
    }
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
template <Block32 kKind, int RQ, int TT>
EDGELLM_ARM_INLINE void tile(const uint8_t* group, int64_t nb, int q0, const uint8_t* x, size_t x_row_bytes, float* y,
                             int64_t y_stride) {
  using F = Format<kKind>;
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

// ---------------------------------------------------------------- Q4_K_X16
// One super-block column of a group (repack.h, kQ4KX16*): codes [4][8][16][4], scales [8][16],
// mins [4][16][2], d[16], dmin[16], one after the other.
// Decode prefetch distance for Q4_K_X16 / Q5_K_X16: one column ahead (about the byte distance
// the Q4_0 kernel uses in 2-4 of its smaller columns).

// 4 bytes (the 6-bit scales of 4 consecutive rows) -> 4 int32 lanes.
EDGELLM_ARM_INLINE int32x4_t widen4(const uint8_t* p) {
  uint32_t v;
  __builtin_memcpy(&v, p, sizeof v);
  return vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(vmovl_u8(vcreate_u8(v)))));
}

// Sub-block j = 2g + kHigh of super-block column b: for RQ row quads from q0 and TT tokens,
// isum[q][t] += sc_j(rows) * dot_j(rows, token t). `cg` = codes of pair g (8 x 64 bytes),
// `sc` = the 16 scales of sub-block j, x[t] = the token's 32 activation codes of sub-block j.
// Q5_K_X16 (kQ5): `high` = the column's fifth bits (repack.h); code vector k gains bit j of high
// vector k as its bit 4 (one shift by 4 - j, an AND and an OR: codes 0..31, still valid int8).
template <int RQ, int TT, bool kHigh, bool kQ5>
EDGELLM_ARM_INLINE void k4_sub_block(const uint8_t* cg, const uint8_t* high, int j, const uint8_t* sc, int q0,
                                     const int8_t* const x[TT], int32x4_t isum[RQ][TT]) {
  int8x16_t xlo[TT], xhi[TT];
  EDGELLM_UNROLL for (int t = 0; t < TT; ++t) {
    xlo[t] = vld1q_s8(x[t]);
    xhi[t] = vld1q_s8(x[t] + 16);
  }
  const uint8x16_t mask = vdupq_n_u8(0x0F);
  EDGELLM_UNROLL for (int q = 0; q < RQ; ++q) {
    int8x16_t w[8];  // w[k]: elements 4k .. 4k+3 of the sub-block, rows 4(q0+q) .. +3
    EDGELLM_UNROLL for (int k = 0; k < 8; ++k) {
      const uint8x16_t v = vld1q_u8(cg + 64 * k + 16 * (q0 + q));
      uint8x16_t c = kHigh ? vshrq_n_u8(v, 4) : vandq_u8(v, mask);
      if constexpr (kQ5) {
        const uint8x16_t h = vld1q_u8(high + 64 * k + 16 * (q0 + q));
        c = vorrq_u8(c, vandq_u8(vshlq_u8(h, vdupq_n_s8(static_cast<int8_t>(4 - j))), vdupq_n_u8(0x10)));
      }
      w[k] = vreinterpretq_s8_u8(c);
    }
    const int32x4_t s = widen4(sc + 4 * (q0 + q));
    EDGELLM_UNROLL for (int t = 0; t < TT; ++t) {
      isum[q][t] = vmlaq_s32(isum[q][t], block_dot<TT == 1>(vdupq_n_s32(0), w, xlo[t], xhi[t]), s);
    }
  }
}

// The Q4_K_X16 / Q5_K_X16 counterpart of tile() above (same arguments; nb = super-blocks per row).
template <bool kQ5, int RQ, int TT>
EDGELLM_ARM_INLINE void tile_q4_k(const uint8_t* group, int64_t nb, int q0, const uint8_t* x, size_t x_row_bytes,
                                  float* y, int64_t y_stride) {
  constexpr int64_t kColumnBytes = kQ5 ? kQ5KX16ColumnBytes : kQ4KX16ColumnBytes;
  const BlockQ8_KS* xt[TT];
  for (int t = 0; t < TT; ++t) xt[t] = reinterpret_cast<const BlockQ8_KS*>(x + static_cast<size_t>(t) * x_row_bytes);
  float32x4_t acc[RQ][TT];
  EDGELLM_UNROLL for (int q = 0; q < RQ; ++q) {
    EDGELLM_UNROLL for (int t = 0; t < TT; ++t) acc[q][t] = vdupq_n_f32(0.0f);
  }
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* cb = group + b * kColumnBytes;  // codes, then the side data
    const uint8_t* scales = cb + kQ4KX16Scales;
    const uint8_t* mins = cb + kQ4KX16Mins;
    const auto* dd = reinterpret_cast<const uint16_t*>(cb + kQ4KX16D);
    const auto* dm = reinterpret_cast<const uint16_t*>(cb + kQ4KX16Dmin);
    if (TT == 1 && q0 == 0) {  // later passes over the group find its lines in cache
      // The next column, codes and side data alike (one stream).
      for (int64_t o = 0; o < kColumnBytes; o += 64) arm::prefetch(cb + kColumnBytes + o);
    }
    int32x4_t isum[RQ][TT];
    EDGELLM_UNROLL for (int q = 0; q < RQ; ++q) {
      EDGELLM_UNROLL for (int t = 0; t < TT; ++t) isum[q][t] = vdupq_n_s32(0);
    }
    // Not unrolled: the 4 pair iterations are long enough, and unrolling them would only grow
    // the code (the nibble half is a template argument of the two sub-block calls instead).
    for (int g = 0; g < 4; ++g) {
      const uint8_t* cg = cb + g * 8 * 64;
      const int8_t* xs[TT];
      EDGELLM_UNROLL for (int t = 0; t < TT; ++t) xs[t] = xt[t][b].qs + 64 * g;
      k4_sub_block<RQ, TT, false, kQ5>(cg, cb + kQ5KX16High, 2 * g, scales + (2 * g) * kPackRows, q0, xs, isum);
      EDGELLM_UNROLL for (int t = 0; t < TT; ++t) xs[t] += 32;
      k4_sub_block<RQ, TT, true, kQ5>(cg, cb + kQ5KX16High, 2 * g + 1, scales + (2 * g + 1) * kPackRows, q0, xs,
                                      isum);
    }
    EDGELLM_UNROLL for (int q = 0; q < RQ; ++q) {
      // Mins of rows 4(q0+q) .. +3: pair i holds (m_2i, m_2i+1) per row; de-interleave into
      // even[i/2] = (m_2i rows 0..3 | m_2i+2 rows 0..3) and odd = the same for m_2i+1, m_2i+3.
      const uint8_t* mq = mins + 8 * (q0 + q);
      int16x8_t pr[4];
      EDGELLM_UNROLL for (int i = 0; i < 4; ++i) pr[i] = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(mq + 32 * i)));
      const int16x8_t e01 = vuzp1q_s16(pr[0], pr[1]), o01 = vuzp2q_s16(pr[0], pr[1]);  // m0|m2, m1|m3
      const int16x8_t e23 = vuzp1q_s16(pr[2], pr[3]), o23 = vuzp2q_s16(pr[2], pr[3]);  // m4|m6, m5|m7
      const float32x4_t dw = arm::load_f16x4(dd + 4 * (q0 + q));
      const float32x4_t dmw = arm::load_f16x4(dm + 4 * (q0 + q));
      EDGELLM_UNROLL for (int t = 0; t < TT; ++t) {
        // |m_j * sum_j(x)| <= 63 * 32 * 127: the 8-term sum is exact in int32.
        const int16x8_t sums = vld1q_s16(xt[t][b].sums);
        int32x4_t m = vmull_laneq_s16(vget_low_s16(e01), sums, 0);
        m = vmlal_laneq_s16(m, vget_low_s16(o01), sums, 1);
        m = vmlal_high_laneq_s16(m, e01, sums, 2);
        m = vmlal_high_laneq_s16(m, o01, sums, 3);
        m = vmlal_laneq_s16(m, vget_low_s16(e23), sums, 4);
        m = vmlal_laneq_s16(m, vget_low_s16(o23), sums, 5);
        m = vmlal_high_laneq_s16(m, e23, sums, 6);
        m = vmlal_high_laneq_s16(m, o23, sums, 7);
        // The file-layout order (quant_policies.h): d * isum, then fma with -dmin * msum, then
        // fma with d_x into the accumulator.
        const float32x4_t scaled = vmulq_f32(dw, vcvtq_f32_s32(isum[q][t]));
        const float32x4_t v = vfmsq_f32(scaled, dmw, vcvtq_f32_s32(m));
        acc[q][t] = vfmaq_n_f32(acc[q][t], v, xt[t][b].d);
      }
    }
  }
  EDGELLM_UNROLL for (int q = 0; q < RQ; ++q) {
    EDGELLM_UNROLL for (int t = 0; t < TT; ++t) vst1q_f32(y + t * y_stride + 4 * q, acc[q][t]);
  }
}

// ---------------------------------------------------------------- Q6_K_X16
// Byte sizes of one super-block column of a group (repack.h): ql [8][4][16][4], qh [16][16][4],
// int8 scales [16][16]; then d[16] F16 per column in its own array after all columns.
constexpr int64_t kK6QlBytes = 2048;
constexpr int64_t kK6QhBytes = 1024;
constexpr int64_t kK6ColumnBytes = kK6QlBytes + kK6QhBytes + 256;
// Decode prefetch distance for Q6_K_X16: one super-block column ahead (as Q4_K_X16), issued as
// 7 lines per 32-element chunk (8 x 7 x 64 = 3584 >= 3360 bytes: the whole column) so that the
// requests are spread over the column instead of a burst of 53.
constexpr int kK6PrefetchBytes = static_cast<int>(kK6ColumnBytes);
constexpr int kK6PrefetchLinesPerChunk = 7;

// Chunk c (elements 32c .. 32c+31 = sub-blocks 2c and 2c+1) of one super-block column for row
// quad q: qa[s] = elements 32c+4s .. +3 (sub-block 2c), qb[s] = elements 32c+16+4s .. +3
// (sub-block 2c+1), s = 0..3, as the unsigned 6-bit codes 0..63 (lanes = rows 4q .. 4q+3).
// ql[c][s] holds both sub-blocks' low nibbles; qh[2c] / qh[2c+1] hold pair s of high bits in
// bits 2s, 2s+1. Combining the two qh vectors first,
//   lo = SLI(ha, hb, 4) = hb bits 0-3 : ha bits 0-3   (pairs 0, 1 of both),
//   hi = SRI(hb, ha, 4) = hb bits 4-7 : ha bits 4-7   (pairs 2, 3),
// z_s = (lo or hi, >> 2 for odd s) & 0x33 has pair s of ha in bits 0-1 and of hb in bits 4-5
// with zeros around them, so as for Q5_0 one shift-insert per vector builds each code:
//   qa[s] = SLI(ql, z_s, 4) = (z_s << 4) | (ql & 0x0F),
//   qb[s] = SRI(z_s, ql, 4) = (ql >> 4) | (z_s & 0xF0).
// 16 instructions for 8 code vectors.
EDGELLM_ARM_INLINE void k6_load_chunk(const uint8_t* col, int c, int q, int8x16_t qa[4], int8x16_t qb[4]) {
  const uint8x16_t ha = vld1q_u8(col + kK6QlBytes + 64 * (2 * c) + 16 * q);
  const uint8x16_t hb = vld1q_u8(col + kK6QlBytes + 64 * (2 * c + 1) + 16 * q);
  const uint8x16_t lo = vsliq_n_u8(ha, hb, 4), hi = vsriq_n_u8(hb, ha, 4);
  const uint8x16_t m = vdupq_n_u8(0x33);
  const uint8x16_t z[4] = {vandq_u8(lo, m), vandq_u8(vshrq_n_u8(lo, 2), m), vandq_u8(hi, m),
                           vandq_u8(vshrq_n_u8(hi, 2), m)};
  EDGELLM_UNROLL for (int s = 0; s < 4; ++s) {
    const uint8x16_t v = vld1q_u8(col + 64 * (4 * c + s) + 16 * q);
    qa[s] = vreinterpretq_s8_u8(vsliq_n_u8(v, z[s], 4));
    qb[s] = vreinterpretq_s8_u8(vsriq_n_u8(z[s], v, 4));
  }
}

// Per (row, token) and super-block the file-layout Q6_K kernels (quant_policies.h KQ6_K)
// compute the exact int32 isum = sum_j sc_j * sum_{e in j} (q_e - 32) x_e and then
// acc = fma(float(isum), d_x * d_w, acc). Here the codes stay unsigned (0..63 is a valid int8
// for SDOT) and the offset comes off through Q8_K's 16-element sums: each sub-block's SDOT chain
// starts from -32 * bsum_j, which gives sum (q - 32) x exactly, and one MLA by the rows' widened
// int8 scales adds it to isum. All integer and exact (|sc_j * partial| <= 128 * 16 * 32 * 128,
// 16 of them < 2^31), so the float operations and their order are the file layout's: a repacked
// Q6_K matrix gives bit-identical outputs on ARM.
// (Seeding the chains instead of a widening MLA of -32 sc_j with bsum_j afterwards saves the
// copies of a zero accumulator that SDOT's destructive destination would need: ~5% fewer
// instructions per chunk in GCC 12's loops.)
// Tiles as Q4_0: 4 rows x 4 tokens for prefill (8 code vectors + 2 scale vectors + 4 int32 and
// 4 F32 accumulators + the tokens' activations fit the registers), 8 rows for decode.
template <int RQ, int TT>
EDGELLM_ARM_INLINE void tile_q6_k(const uint8_t* group, int64_t nb, int q0, const uint8_t* x, size_t x_row_bytes,
                                  float* y, int64_t y_stride) {
  const auto* dd = reinterpret_cast<const uint16_t*>(group + nb * kK6ColumnBytes);
  const BlockQ8_K* xt[TT];
  for (int t = 0; t < TT; ++t) xt[t] = reinterpret_cast<const BlockQ8_K*>(x + static_cast<size_t>(t) * x_row_bytes);
  float32x4_t acc[RQ][TT];
  EDGELLM_UNROLL for (int q = 0; q < RQ; ++q) {
    EDGELLM_UNROLL for (int t = 0; t < TT; ++t) acc[q][t] = vdupq_n_f32(0.0f);
  }
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* col = group + b * kK6ColumnBytes;
    if (TT == 1 && q0 == 0 && (b & 1) == 0) {  // d of a column is 32 bytes: a line every second one
      arm::prefetch(dd + (b + 2) * kPackRows);
    }
    int32x4_t isum[RQ][TT];
    EDGELLM_UNROLL for (int q = 0; q < RQ; ++q) {
      EDGELLM_UNROLL for (int t = 0; t < TT; ++t) isum[q][t] = vdupq_n_s32(0);
    }
    // Not unrolled (as the Q4_K pair loop): each of the 8 iterations is 80-120 instructions.
    for (int c = 0; c < 8; ++c) {
      if (TT == 1 && q0 == 0) {  // later passes over the group find its lines in cache
        const uint8_t* pf = col + kK6PrefetchBytes + 64 * kK6PrefetchLinesPerChunk * c;
        EDGELLM_UNROLL for (int k = 0; k < kK6PrefetchLinesPerChunk; ++k) arm::prefetch(pf + 64 * k);
      }
      // The token's activations of the two sub-blocks and the seeds -32 * bsum_2c, -32 * bsum_2c+1
      // of their SDOT chains (Q8_K's 16-element sums, widened first: |32 * bsum| <= 65024).
      int8x16_t xa[TT], xb[TT];
      int32x4_t seed_a[TT], seed_b[TT];
      EDGELLM_UNROLL for (int t = 0; t < TT; ++t) {
        xa[t] = vld1q_s8(xt[t][b].qs + 32 * c);
        xb[t] = vld1q_s8(xt[t][b].qs + 32 * c + 16);
        int32_t pair;
        __builtin_memcpy(&pair, xt[t][b].bsums + 2 * c, sizeof pair);
        const int32x4_t bs = vmulq_n_s32(vmovl_s16(vreinterpret_s16_s32(vdup_n_s32(pair))), -32);
        seed_a[t] = vdupq_laneq_s32(bs, 0);
        seed_b[t] = vdupq_laneq_s32(bs, 1);
      }
      const uint8_t* sc = col + kK6QlBytes + kK6QhBytes + (2 * c) * kPackRows;
      EDGELLM_UNROLL for (int q = 0; q < RQ; ++q) {
        int8x16_t qa[4], qb[4];
        k6_load_chunk(col, c, q0 + q, qa, qb);
        // The int8 scales of sub-blocks 2c and 2c+1 of rows 4(q0+q) .. +3, widened to int32.
        uint32_t sa, sb;
        __builtin_memcpy(&sa, sc + 4 * (q0 + q), sizeof sa);
        __builtin_memcpy(&sb, sc + kPackRows + 4 * (q0 + q), sizeof sb);
        const int16x8_t s16 = vmovl_s8(vcreate_s8(static_cast<uint64_t>(sa) | static_cast<uint64_t>(sb) << 32));
        const int32x4_t sca = vmovl_s16(vget_low_s16(s16)), scb = vmovl_high_s16(s16);
        EDGELLM_UNROLL for (int t = 0; t < TT; ++t) {
          // Two independent SDOT chains (one per sub-block): sum (q - 32) x per row.
          int32x4_t pa = vdotq_laneq_s32(seed_a[t], qa[0], xa[t], 0);
          int32x4_t pb = vdotq_laneq_s32(seed_b[t], qb[0], xb[t], 0);
          pa = vdotq_laneq_s32(pa, qa[1], xa[t], 1);
          pb = vdotq_laneq_s32(pb, qb[1], xb[t], 1);
          pa = vdotq_laneq_s32(pa, qa[2], xa[t], 2);
          pb = vdotq_laneq_s32(pb, qb[2], xb[t], 2);
          pa = vdotq_laneq_s32(pa, qa[3], xa[t], 3);
          pb = vdotq_laneq_s32(pb, qb[3], xb[t], 3);
          isum[q][t] = vmlaq_s32(vmlaq_s32(isum[q][t], pa, sca), pb, scb);
        }
      }
    }
    EDGELLM_UNROLL for (int q = 0; q < RQ; ++q) {
      const float32x4_t dw = arm::load_f16x4(dd + b * kPackRows + 4 * (q0 + q));
      EDGELLM_UNROLL for (int t = 0; t < TT; ++t) {
        // The file-layout order: fma(float(isum), d_x * d_w, acc).
        acc[q][t] = vfmaq_f32(acc[q][t], vcvtq_f32_s32(isum[q][t]), vmulq_n_f32(dw, xt[t][b].d));
      }
    }
  }
  EDGELLM_UNROLL for (int q = 0; q < RQ; ++q) {
    EDGELLM_UNROLL for (int t = 0; t < TT; ++t) vst1q_f32(y + t * y_stride + 4 * q, acc[q][t]);
  }
}

// ---------------------------------------------------------------- drivers
// The six packed formats as tile policies for the shared driver below.
template <Block32 kKind>
struct Legacy {
  static constexpr int64_t kBlockElems = kQK8_0;
  template <int RQ, int TT>
  static EDGELLM_ARM_INLINE void run(const uint8_t* group, int64_t nb, int q0, const uint8_t* x, size_t x_row_bytes,
                                     float* y, int64_t y_stride) {
    tile<kKind, RQ, TT>(group, nb, q0, x, x_row_bytes, y, y_stride);
  }
};

template <bool kQ5>
struct KQuant4Or5 {
  static constexpr int64_t kBlockElems = kQK_K;
  template <int RQ, int TT>
  static EDGELLM_ARM_INLINE void run(const uint8_t* group, int64_t nb, int q0, const uint8_t* x, size_t x_row_bytes,
                                     float* y, int64_t y_stride) {
    tile_q4_k<kQ5, RQ, TT>(group, nb, q0, x, x_row_bytes, y, y_stride);
  }
};
using KQuant4 = KQuant4Or5<false>;
using KQuant5 = KQuant4Or5<true>;

struct KQuant6 {
  static constexpr int64_t kBlockElems = kQK_K;
  template <int RQ, int TT>
  static EDGELLM_ARM_INLINE void run(const uint8_t* group, int64_t nb, int q0, const uint8_t* x, size_t x_row_bytes,
                                     float* y, int64_t y_stride) {
    tile_q6_k<RQ, TT>(group, nb, q0, x, x_row_bytes, y, y_stride);
  }
};

// Every group of rows [ra, rb) (multiples of 16) for TT tokens, RQ row quads per tile.
template <class K, int RQ, int TT>
void groups(const uint8_t* w, size_t w_row_bytes, int64_t nb, int64_t ra, int64_t rb, const uint8_t* x,
            size_t x_row_bytes, float* y, int64_t y_stride) {
  for (int64_t r = ra; r < rb; r += kPackRows) {
    const uint8_t* group = w + static_cast<size_t>(r) * w_row_bytes;
    for (int q0 = 0; q0 < kPackRows / 4; q0 += RQ) {
      K::template run<RQ, TT>(group, nb, q0, x, x_row_bytes, y + r + 4 * q0, y_stride);
    }
  }
}

template <class K>
void matmul_packed(int64_t n, const void* wv, size_t w_row_bytes, int64_t r0, int64_t r1, const void* xq,
                   size_t x_row_bytes, int64_t n_tokens, float* y, int64_t y_stride) {
  const int64_t nb = n / K::kBlockElems;
  const auto* w = static_cast<const uint8_t*>(wv);
  const auto* x = static_cast<const uint8_t*>(xq);
  if (n_tokens == 1) {
    groups<K, kDecodeQuads, 1>(w, w_row_bytes, nb, r0, r1, x, x_row_bytes, y, y_stride);
    return;
  }
  int64_t chunk_rows = static_cast<int64_t>(kChunkBytes / w_row_bytes) / kPackRows * kPackRows;
  if (chunk_rows < kPackRows) chunk_rows = kPackRows;
  for (int64_t rc = r0; rc < r1; rc += chunk_rows) {
    const int64_t re = rc + chunk_rows < r1 ? rc + chunk_rows : r1;
    int64_t t = 0;
    for (; t + kTokens <= n_tokens; t += kTokens) {
      groups<K, kPrefillQuads, kTokens>(w, w_row_bytes, nb, rc, re, x + static_cast<size_t>(t) * x_row_bytes,
                                        x_row_bytes, y + t * y_stride, y_stride);
    }
    // 1 .. 3 leftover tokens in one tile, so each code vector is still decoded once for them.
    const uint8_t* xr = x + static_cast<size_t>(t) * x_row_bytes;
    float* yr = y + t * y_stride;
    switch (n_tokens - t) {
      case 3: groups<K, kPrefillQuads, 3>(w, w_row_bytes, nb, rc, re, xr, x_row_bytes, yr, y_stride); break;
      case 2: groups<K, kPrefillQuads, 2>(w, w_row_bytes, nb, rc, re, xr, x_row_bytes, yr, y_stride); break;
      case 1: groups<K, kDecodeQuads, 1>(w, w_row_bytes, nb, rc, re, xr, x_row_bytes, yr, y_stride); break;
      default: break;
    }
  }
}

}  // namespace

// The trampolines of kernel_list.h's packed group.
#define EDGELLM_MATMUL_PACKED(type, fn, K) \
  void fn(EDGELLM_MATMUL_PARAMS) { matmul_packed<K>(EDGELLM_MATMUL_ARGS); }
#include "kernels/arm/dotprod/kernel_list.h"

}  // namespace edgellm::kernels::dotprod

#undef EDGELLM_UNROLL
