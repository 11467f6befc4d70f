// Internal: tile-driver policies (kernels/tile_driver.h) for every quantized weight type on
// ARM64, written once and parameterised by the int8 dot-product primitive D:
//
//   D::dot(int32x4_t acc, int8x16_t a, int8x16_t b) -> acc + (4 lanes whose sum is a . b)
//
// neon/ supplies it with SMULL/SMLAL2 + SADALP (armv8-a baseline), dotprod/ with SDOT. Included
// only from files of one ISA each; everything is in an anonymous namespace (see arm_util.h).
//
// Overflow (why int16 intermediates are safe in the baseline primitive): a lane pair sums two
// int8 products; activations satisfy |q| <= 127 (Q8_0/Q8_1/Q8_K never produce -128) and weight
// codes are in [-128, 127], so |pair| <= 2 * 128 * 127 = 32512 < 32767.
//
// Block decodes (element order, matching the scalar reference):
//   Q4_0/Q4_1: low nibbles of qs[0..15] are elements 0..15, high nibbles elements 16..31.
//   Q5_*: plus bit i of the 32-bit qh as bit 4 of element i.
//   Q4_K/Q5_K: 4 groups of 64: qs[32g..32g+31] low nibbles = elements 64g..64g+31 (sub-block 2g),
//     high nibbles = 64g+32..64g+63 (sub-block 2g+1); Q5_K adds bit 2g / 2g+1 of qh[l] as bit 4.
//   Q6_K: 2 halves of 128; see decode_q6k.
#pragma once

#include <arm_neon.h>

#include <cstdint>

#include "kernels/arm/arm_util.h"
#include "kernels/blocks.h"
#include "kernels/quant_common.h"
#include "kernels/tile_driver.h"

namespace edgellm::kernels::arm {
namespace {

// Float arithmetic contract (why the accumulators are scalar): every (row, token) output is the
// exact int32 block sum converted to F32, fused-multiply-added with (d_w * d_x) per block
// (K-quants: v = fma(-dmin, msum, d * isum), acc = fma(d_x, v, acc)), in block order. The i8mm
// kernels do exactly these operations per lane of their 2x2 tiles, so a result does not depend
// on the ISA among neon/dotprod/i8mm, on how rows are split between threads or on which rows /
// tokens share a tile: outputs are bit-identical. Every product either is an explicit fma or
// only feeds one as a multiplicand / addend, so compiler FP contraction cannot change it.
EDGELLM_ARM_INLINE float fused(float a, float b, float c) { return __builtin_fmaf(a, b, c); }

// ---------------------------------------------------------------- 32-element legacy blocks
struct Q32W {
  int8x16_t lo, hi;  // elements 0..15, 16..31
  float d;
  float m;  // Q4_1 / Q5_1 only
};

struct Q32X {
  int8x16_t lo, hi;
  float d;
  float s;  // Q8_1 only: d * sum(q)
};

EDGELLM_ARM_INLINE void nibbles(const uint8_t* qs, uint8x16_t& lo, uint8x16_t& hi) {
  const uint8x16_t v = vld1q_u8(qs);
  lo = vandq_u8(v, vdupq_n_u8(0x0F));
  hi = vshrq_n_u8(v, 4);
}

// Signed weights x Q8_0: Acc is one F32 sum of scaled block sums.
template <class D>
struct SignedBase {
  static constexpr int64_t kBlockElems = 32;
  using XBlock = BlockQ8_0;
  using W = Q32W;
  using X = Q32X;
  using Acc = float;
  static EDGELLM_ARM_INLINE void load_x(const XBlock* b, X& x) {
    x.lo = vld1q_s8(b->qs);
    x.hi = vld1q_s8(b->qs + 16);
    x.d = half_to_float(b->d);
  }
  static EDGELLM_ARM_INLINE void zero(Acc& a) { a = 0.0f; }
  static EDGELLM_ARM_INLINE void madd(const W& w, const X& x, Acc& acc) {
    const int32x4_t p = D::dot(D::dot(vdupq_n_s32(0), w.lo, x.lo), w.hi, x.hi);
    const float dd = w.d * x.d;
    acc = fused(static_cast<float>(vaddvq_s32(p)), dd, acc);
  }
  static EDGELLM_ARM_INLINE float reduce(const Acc& a) { return a; }
};

template <class D>
struct KQ4_0 : SignedBase<D> {
  using WBlock = BlockQ4_0;
  static EDGELLM_ARM_INLINE void prefetch(const WBlock* b) { arm::prefetch(b + 16); }
  static EDGELLM_ARM_INLINE void decode(const WBlock* b, Q32W& w) {
    uint8x16_t lo, hi;
    nibbles(b->qs, lo, hi);
    w.lo = vsubq_s8(vreinterpretq_s8_u8(lo), vdupq_n_s8(8));
    w.hi = vsubq_s8(vreinterpretq_s8_u8(hi), vdupq_n_s8(8));
    w.d = half_to_float(b->d);
  }
};

template <class D>
struct KQ5_0 : SignedBase<D> {
  using WBlock = BlockQ5_0;
  static EDGELLM_ARM_INLINE void prefetch(const WBlock* b) { arm::prefetch(b + 16); }
  static EDGELLM_ARM_INLINE void decode(const WBlock* b, Q32W& w) {
    uint8x16_t lo, hi, hb_lo, hb_hi;
    nibbles(b->qs, lo, hi);
    fifth_bits(b->qh, hb_lo, hb_hi);
    w.lo = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(lo, hb_lo)), vdupq_n_s8(16));
    w.hi = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(hi, hb_hi)), vdupq_n_s8(16));
    w.d = half_to_float(b->d);
  }
};

template <class D>
struct KQ8_0 : SignedBase<D> {
  using WBlock = BlockQ8_0;
  static EDGELLM_ARM_INLINE void prefetch(const WBlock* b) { arm::prefetch(b + 8); }
  static EDGELLM_ARM_INLINE void decode(const WBlock* b, Q32W& w) {
    w.lo = vld1q_s8(b->qs);
    w.hi = vld1q_s8(b->qs + 16);
    w.d = half_to_float(b->d);
  }
};

struct MinAcc {
  float v;  // sum of d_w d_x sum(q_w q_x)
  float s;  // sum of m_w s_x
};

// Unsigned codes with a min x Q8_1: sum = d_w d_x sum(q_w q_x) + m_w * s_x.
template <class D>
struct MinBase {
  static constexpr int64_t kBlockElems = 32;
  using XBlock = BlockQ8_1;
  using W = Q32W;
  using X = Q32X;
  using Acc = MinAcc;
  static EDGELLM_ARM_INLINE void load_x(const XBlock* b, X& x) {
    x.lo = vld1q_s8(b->qs);
    x.hi = vld1q_s8(b->qs + 16);
    x.d = half_to_float(b->d);
    x.s = half_to_float(b->s);
  }
  static EDGELLM_ARM_INLINE void zero(Acc& a) { a.v = a.s = 0.0f; }
  static EDGELLM_ARM_INLINE void madd(const W& w, const X& x, Acc& acc) {
    const int32x4_t p = D::dot(D::dot(vdupq_n_s32(0), w.lo, x.lo), w.hi, x.hi);
    const float dd = w.d * x.d;
    acc.v = fused(static_cast<float>(vaddvq_s32(p)), dd, acc.v);
    acc.s = fused(w.m, x.s, acc.s);
  }
  static EDGELLM_ARM_INLINE float reduce(const Acc& a) { return a.v + a.s; }
};

template <class D>
struct KQ4_1 : MinBase<D> {
  using WBlock = BlockQ4_1;
  static EDGELLM_ARM_INLINE void prefetch(const WBlock* b) { arm::prefetch(b + 16); }
  static EDGELLM_ARM_INLINE void decode(const WBlock* b, Q32W& w) {
    uint8x16_t lo, hi;
    nibbles(b->qs, lo, hi);
    w.lo = vreinterpretq_s8_u8(lo);
    w.hi = vreinterpretq_s8_u8(hi);
    w.d = half_to_float(b->d);
    w.m = half_to_float(b->m);
  }
};

template <class D>
struct KQ5_1 : MinBase<D> {
  using WBlock = BlockQ5_1;
  static EDGELLM_ARM_INLINE void prefetch(const WBlock* b) { arm::prefetch(b + 16); }
  static EDGELLM_ARM_INLINE void decode(const WBlock* b, Q32W& w) {
    uint8x16_t lo, hi, hb_lo, hb_hi;
    nibbles(b->qs, lo, hi);
    fifth_bits(b->qh, hb_lo, hb_hi);
    w.lo = vreinterpretq_s8_u8(vorrq_u8(lo, hb_lo));
    w.hi = vreinterpretq_s8_u8(vorrq_u8(hi, hb_hi));
    w.d = half_to_float(b->d);
    w.m = half_to_float(b->m);
  }
};

// ---------------------------------------------------------------- K-quants (256 elements)
struct Q8KX {
  const int8_t* q;
  int16x8_t bsum_pairs;  // lane j: sum of activations of sub-block j (32 elements)
  float d;
};

EDGELLM_ARM_INLINE void load_q8k(const BlockQ8_K* b, Q8KX& x) {
  x.q = b->qs;
  x.bsum_pairs = vpaddq_s16(vld1q_s16(b->bsums), vld1q_s16(b->bsums + 8));  // |pair| <= 32 * 127
  x.d = b->d;
}

// A decoded super-block: 16 vectors of codes in element order (L1-resident, reused per token).
struct K4W {
  int8x16_t q[16];
  int32_t scale[8];  // 6-bit sub-block scales
  int16x8_t mins;    // 6-bit sub-block mins
  float d, dmin;
};

EDGELLM_ARM_INLINE void decode_k4_scales(const uint8_t* packed, uint16_t d, uint16_t dmin, K4W& w) {
  uint8_t sc[8], mn[8];
  unpack_scales_mins_k4(packed, sc, mn);
  for (int j = 0; j < 8; ++j) w.scale[j] = sc[j];
  w.mins = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(mn)));
  w.d = half_to_float(d);
  w.dmin = half_to_float(dmin);
}

// sum_j min_j * (activation sum of sub-block j), exact in int32.
EDGELLM_ARM_INLINE int32_t min_term(int16x8_t mins, int16x8_t bsum_pairs) {
  const int32x4_t p = vmlal_high_s16(vmull_s16(vget_low_s16(mins), vget_low_s16(bsum_pairs)), mins, bsum_pairs);
  return vaddvq_s32(p);
}

template <class D>
struct K4Base {
  static constexpr int64_t kBlockElems = 256;
  using XBlock = BlockQ8_K;
  using W = K4W;
  using X = Q8KX;
  using Acc = float;
  static EDGELLM_ARM_INLINE void load_x(const XBlock* b, X& x) { load_q8k(b, x); }
  static EDGELLM_ARM_INLINE void zero(Acc& a) { a = 0.0f; }
  static EDGELLM_ARM_INLINE void madd(const W& w, const X& x, Acc& acc) {
    int32x4_t isum = vdupq_n_s32(0);
    for (int j = 0; j < 8; ++j) {
      const int32x4_t s = D::dot(D::dot(vdupq_n_s32(0), w.q[2 * j], vld1q_s8(x.q + 32 * j)), w.q[2 * j + 1],
                                 vld1q_s8(x.q + 32 * j + 16));
      isum = vmlaq_n_s32(isum, s, w.scale[j]);
    }
    const int32_t msum = min_term(w.mins, x.bsum_pairs);
    const float scaled = w.d * static_cast<float>(vaddvq_s32(isum));
    const float v = fused(-w.dmin, static_cast<float>(msum), scaled);
    acc = fused(x.d, v, acc);
  }
  static EDGELLM_ARM_INLINE float reduce(const Acc& a) { return a; }
};

template <class D>
struct KQ4_K : K4Base<D> {
  using WBlock = BlockQ4_K;
  static EDGELLM_ARM_INLINE void prefetch(const WBlock* b) { arm::prefetch(b + 4); }
  static EDGELLM_ARM_INLINE void decode(const WBlock* b, K4W& w) {
    decode_k4_scales(b->scales, b->d, b->dmin, w);
    const uint8x16_t m4 = vdupq_n_u8(0x0F);
    for (int g = 0; g < 4; ++g) {
      const uint8x16_t a = vld1q_u8(b->qs + 32 * g), c = vld1q_u8(b->qs + 32 * g + 16);
      w.q[4 * g + 0] = vreinterpretq_s8_u8(vandq_u8(a, m4));
      w.q[4 * g + 1] = vreinterpretq_s8_u8(vandq_u8(c, m4));
      w.q[4 * g + 2] = vreinterpretq_s8_u8(vshrq_n_u8(a, 4));
      w.q[4 * g + 3] = vreinterpretq_s8_u8(vshrq_n_u8(c, 4));
    }
  }
};

template <class D>
struct KQ5_K : K4Base<D> {
  using WBlock = BlockQ5_K;
  static EDGELLM_ARM_INLINE void prefetch(const WBlock* b) { arm::prefetch(b + 4); }
  static EDGELLM_ARM_INLINE void decode(const WBlock* b, K4W& w) {
    decode_k4_scales(b->scales, b->d, b->dmin, w);
    const uint8x16_t m4 = vdupq_n_u8(0x0F), one = vdupq_n_u8(1), two = vdupq_n_u8(2);
    uint8x16_t h0 = vld1q_u8(b->qh), h1 = vld1q_u8(b->qh + 16);  // bit 2g / 2g+1: group g
    for (int g = 0; g < 4; ++g) {
      const uint8x16_t a = vld1q_u8(b->qs + 32 * g), c = vld1q_u8(b->qs + 32 * g + 16);
      w.q[4 * g + 0] = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(a, m4), vshlq_n_u8(vandq_u8(h0, one), 4)));
      w.q[4 * g + 1] = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(c, m4), vshlq_n_u8(vandq_u8(h1, one), 4)));
      w.q[4 * g + 2] = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(a, 4), vshlq_n_u8(vandq_u8(h0, two), 3)));
      w.q[4 * g + 3] = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(c, 4), vshlq_n_u8(vandq_u8(h1, two), 3)));
      h0 = vshrq_n_u8(h0, 2);
      h1 = vshrq_n_u8(h1, 2);
    }
  }
};

struct K6W {
  int8x16_t q[16];    // code - 32 in [-32, 31], element order
  int32_t scale[16];  // int8 scale of elements 16k..16k+15
  float d;
};

// Q6_K half h (128 elements) from ql[64h..64h+63], qh[32h..32h+31]: element l (l < 32) takes the
// low nibble of ql[l] and bits 0-1 of qh[l]; l+32: low nibble of ql[l+32], bits 2-3; l+64: high
// nibble of ql[l], bits 4-5; l+96: high nibble of ql[l+32], bits 6-7.
EDGELLM_ARM_INLINE void decode_q6k(const BlockQ6_K* b, K6W& w) {
  const uint8x16_t m4 = vdupq_n_u8(0x0F), m2 = vdupq_n_u8(0x30);
  const int8x16_t off = vdupq_n_s8(32);
  for (int h = 0; h < 2; ++h) {
    const uint8_t* ql = b->ql + 64 * h;
    const uint8x16_t l0 = vld1q_u8(ql), l1 = vld1q_u8(ql + 16), l2 = vld1q_u8(ql + 32), l3 = vld1q_u8(ql + 48);
    const uint8x16_t h0 = vld1q_u8(b->qh + 32 * h), h1 = vld1q_u8(b->qh + 32 * h + 16);
    int8x16_t* q = w.q + 8 * h;
    const auto code = [&](uint8x16_t low4, uint8x16_t high2) {
      return vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(low4, high2)), off);
    };
    q[0] = code(vandq_u8(l0, m4), vandq_u8(vshlq_n_u8(h0, 4), m2));
    q[1] = code(vandq_u8(l1, m4), vandq_u8(vshlq_n_u8(h1, 4), m2));
    q[2] = code(vandq_u8(l2, m4), vandq_u8(vshlq_n_u8(h0, 2), m2));
    q[3] = code(vandq_u8(l3, m4), vandq_u8(vshlq_n_u8(h1, 2), m2));
    q[4] = code(vshrq_n_u8(l0, 4), vandq_u8(h0, m2));
    q[5] = code(vshrq_n_u8(l1, 4), vandq_u8(h1, m2));
    q[6] = code(vshrq_n_u8(l2, 4), vandq_u8(vshrq_n_u8(h0, 2), m2));
    q[7] = code(vshrq_n_u8(l3, 4), vandq_u8(vshrq_n_u8(h1, 2), m2));
  }
  for (int k = 0; k < 16; ++k) w.scale[k] = b->scales[k];
  w.d = half_to_float(b->d);
}

template <class D>
struct KQ6_K {
  static constexpr int64_t kBlockElems = 256;
  using WBlock = BlockQ6_K;
  using XBlock = BlockQ8_K;
  using W = K6W;
  using X = Q8KX;
  using Acc = float;
  static EDGELLM_ARM_INLINE void prefetch(const WBlock* b) { arm::prefetch(b + 4); }
  static EDGELLM_ARM_INLINE void decode(const WBlock* b, W& w) { decode_q6k(b, w); }
  static EDGELLM_ARM_INLINE void load_x(const XBlock* b, X& x) {
    x.q = b->qs;
    x.d = b->d;
  }
  static EDGELLM_ARM_INLINE void zero(Acc& a) { a = 0.0f; }
  static EDGELLM_ARM_INLINE void madd(const W& w, const X& x, Acc& acc) {
    int32x4_t isum = vdupq_n_s32(0);
    for (int k = 0; k < 16; ++k) {
      isum = vmlaq_n_s32(isum, D::dot(vdupq_n_s32(0), w.q[k], vld1q_s8(x.q + 16 * k)), w.scale[k]);
    }
    const float dd = x.d * w.d;
    acc = fused(static_cast<float>(vaddvq_s32(isum)), dd, acc);
  }
  static EDGELLM_ARM_INLINE float reduce(const Acc& a) { return a; }
};

}  // namespace
}  // namespace edgellm::kernels::arm
