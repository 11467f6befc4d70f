// i8mm (armv8.6-a+i8mm) matmul for every quantized weight type, for prefill (n_tokens >= 2).
//
// SMMLA (vmmlaq_s32) multiplies a 2x8 int8 matrix by an 8x2 one into a 2x2 int32 tile:
//   acc[0] += row0 . col0, acc[1] += row0 . col1, acc[2] += row1 . col0, acc[3] += row1 . col1
// where the first operand holds 8 bytes of weight row r and 8 bytes of row r+1, and the second
// 8 bytes of token t and 8 of token t+1 (both built with 64-bit zips). One instruction does the
// work of four SDOTs on half the data: half the multiply instructions per output of the dotprod
// kernels. Tiles are 2 rows x 2 or 4 tokens; decode (one token), an odd last row and an odd last
// token go through the dotprod kernels, whose per-output float arithmetic is the same as one
// lane here (quant_policies.h), so results are bit-identical however rows and tokens are tiled.
// Output lanes of a tile, everywhere below: [r0 t0, r0 t1, r1 t0, r1 t1].
#include <arm_neon.h>

#include <type_traits>

#include "kernels/arm/arm_kernels.h"
#include "kernels/arm/quant_policies.h"
#include "kernels/tile_driver.h"

namespace edgellm::kernels::i8mm {
namespace {

using arm::Q32W;
using arm::Q32X;

// Decoding only: the policies' dot primitive is never called here.
struct NoDot {
  static EDGELLM_ARM_INLINE int32x4_t dot(int32x4_t acc, int8x16_t, int8x16_t) { return acc; }
};

EDGELLM_ARM_INLINE int8x16_t zip_lo(int8x16_t a, int8x16_t b) {
  return vreinterpretq_s8_s64(vzip1q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b)));
}
EDGELLM_ARM_INLINE int8x16_t zip_hi(int8x16_t a, int8x16_t b) {
  return vreinterpretq_s8_s64(vzip2q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b)));
}

// {a, a, b, b}: a per-row value spread over the tile lanes.
EDGELLM_ARM_INLINE float32x4_t rows2(float a, float b) { return vcombine_f32(vdup_n_f32(a), vdup_n_f32(b)); }
EDGELLM_ARM_INLINE int32x4_t rows2(int32_t a, int32_t b) { return vcombine_s32(vdup_n_s32(a), vdup_n_s32(b)); }
// {a, b, a, b}: a per-token value.
EDGELLM_ARM_INLINE float32x4_t cols2(float a, float b) {
  const float32x2_t ab = vset_lane_f32(b, vdup_n_f32(a), 1);
  return vcombine_f32(ab, ab);
}

EDGELLM_ARM_INLINE void store_tile(float32x4_t v, float* y, int64_t ys) {
  y[0] = vgetq_lane_f32(v, 0);
  y[ys] = vgetq_lane_f32(v, 1);
  y[1] = vgetq_lane_f32(v, 2);
  y[ys + 1] = vgetq_lane_f32(v, 3);
}

// ---------------------------------------------------------------- 32-element legacy blocks
// K: a quant_policies.h policy (decode / load_x); P token pairs per tile.
template <class K, int P>
void tile_legacy(int64_t nb, const uint8_t* w, size_t wrb, const uint8_t* x, size_t xrb, float* y, int64_t ys) {
  constexpr bool kMin = std::is_same_v<typename K::XBlock, BlockQ8_1>;
  using WB = typename K::WBlock;
  using XB = typename K::XBlock;
  const auto* w0 = reinterpret_cast<const WB*>(w);
  const auto* w1 = reinterpret_cast<const WB*>(w + wrb);
  const XB* xt[2 * P];
  for (int t = 0; t < 2 * P; ++t) xt[t] = reinterpret_cast<const XB*>(x + t * xrb);
  float32x4_t acc[P], macc[P];
  for (int p = 0; p < P; ++p) acc[p] = macc[p] = vdupq_n_f32(0.0f);
  for (int64_t b = 0; b < nb; ++b) {
    K::prefetch(w0 + b);
    K::prefetch(w1 + b);
    Q32W a, c;
    K::decode(w0 + b, a);
    K::decode(w1 + b, c);
    const int8x16_t a0 = zip_lo(a.lo, c.lo), a1 = zip_hi(a.lo, c.lo), a2 = zip_lo(a.hi, c.hi), a3 = zip_hi(a.hi, c.hi);
    const float32x4_t dw = rows2(a.d, c.d);
    for (int p = 0; p < P; ++p) {
      Q32X u, v;
      K::load_x(xt[2 * p] + b, u);
      K::load_x(xt[2 * p + 1] + b, v);
      int32x4_t s = vmmlaq_s32(vdupq_n_s32(0), a0, zip_lo(u.lo, v.lo));
      s = vmmlaq_s32(s, a1, zip_hi(u.lo, v.lo));
      s = vmmlaq_s32(s, a2, zip_lo(u.hi, v.hi));
      s = vmmlaq_s32(s, a3, zip_hi(u.hi, v.hi));
      // Per lane exactly the neon/dotprod arithmetic (quant_policies.h): bit-identical results.
      acc[p] = vfmaq_f32(acc[p], vcvtq_f32_s32(s), vmulq_f32(dw, cols2(u.d, v.d)));
      if constexpr (kMin) macc[p] = vfmaq_f32(macc[p], rows2(a.m, c.m), cols2(u.s, v.s));
    }
  }
  for (int p = 0; p < P; ++p) store_tile(kMin ? vaddq_f32(acc[p], macc[p]) : acc[p], y + 2 * p * ys, ys);
}

template <class K>
struct Legacy {
  static constexpr int64_t kBlockElems = 32;
  template <int P>
  static void tile(int64_t nb, const uint8_t* w, size_t wrb, const uint8_t* x, size_t xrb, float* y, int64_t ys) {
    tile_legacy<K, P>(nb, w, wrb, x, xrb, y, ys);
  }
};

// ---------------------------------------------------------------- K-quants
// Two decoded rows re-packed as SMMLA operands: chunk k of 8 elements -> a[k] (32 per block).
struct KPair {
  int8x16_t a[32];
};

EDGELLM_ARM_INLINE void pack_rows(const int8x16_t* q0, const int8x16_t* q1, KPair& pk) {
  for (int k = 0; k < 16; ++k) {
    pk.a[2 * k] = zip_lo(q0[k], q1[k]);
    pk.a[2 * k + 1] = zip_hi(q0[k], q1[k]);
  }
}

// Token-pair activation chunks of one Q8_K block, same layout as KPair.
EDGELLM_ARM_INLINE void pack_tokens(const int8_t* x0, const int8_t* x1, KPair& pk) {
  for (int k = 0; k < 16; ++k) {
    const int8x16_t u = vld1q_s8(x0 + 16 * k), v = vld1q_s8(x1 + 16 * k);
    pk.a[2 * k] = zip_lo(u, v);
    pk.a[2 * k + 1] = zip_hi(u, v);
  }
}

// Q4_K / Q5_K: 8 sub-blocks of 32 (4 chunks each) with 6-bit scales; mins via bsums.
template <class K>
void tile_k4(int64_t nb, const uint8_t* w, size_t wrb, const uint8_t* x, size_t xrb, float* y, int64_t ys, int P) {
  using WB = typename K::WBlock;
  const auto* w0 = reinterpret_cast<const WB*>(w);
  const auto* w1 = reinterpret_cast<const WB*>(w + wrb);
  float32x4_t acc[2] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
  for (int64_t b = 0; b < nb; ++b) {
    K::prefetch(w0 + b);
    K::prefetch(w1 + b);
    arm::K4W d0, d1;
    K::decode(w0 + b, d0);
    K::decode(w1 + b, d1);
    KPair wp;
    pack_rows(d0.q, d1.q, wp);
    int32x4_t sc[8];
    for (int j = 0; j < 8; ++j) sc[j] = rows2(d0.scale[j], d1.scale[j]);
    const float32x4_t dw = rows2(d0.d, d1.d), dmin = rows2(d0.dmin, d1.dmin);
    for (int p = 0; p < P; ++p) {
      const auto* xa = reinterpret_cast<const BlockQ8_K*>(x + (2 * p) * xrb) + b;
      const auto* xb = reinterpret_cast<const BlockQ8_K*>(x + (2 * p + 1) * xrb) + b;
      KPair xp;
      pack_tokens(xa->qs, xb->qs, xp);
      int32x4_t isum = vdupq_n_s32(0);
      for (int j = 0; j < 8; ++j) {
        int32x4_t s = vmmlaq_s32(vdupq_n_s32(0), wp.a[4 * j], xp.a[4 * j]);
        s = vmmlaq_s32(s, wp.a[4 * j + 1], xp.a[4 * j + 1]);
        s = vmmlaq_s32(s, wp.a[4 * j + 2], xp.a[4 * j + 2]);
        s = vmmlaq_s32(s, wp.a[4 * j + 3], xp.a[4 * j + 3]);
        isum = vmlaq_s32(isum, s, sc[j]);
      }
      arm::Q8KX ua, ub;
      arm::load_q8k(xa, ua);
      arm::load_q8k(xb, ub);
      int32_t m[4] = {arm::min_term(d0.mins, ua.bsum_pairs), arm::min_term(d0.mins, ub.bsum_pairs),
                      arm::min_term(d1.mins, ua.bsum_pairs), arm::min_term(d1.mins, ub.bsum_pairs)};
      const float32x4_t msum = vcvtq_f32_s32(vld1q_s32(m));
      const float32x4_t v = vfmsq_f32(vmulq_f32(dw, vcvtq_f32_s32(isum)), dmin, msum);
      acc[p] = vfmaq_f32(acc[p], cols2(ua.d, ub.d), v);
    }
  }
  for (int p = 0; p < P; ++p) store_tile(acc[p], y + 2 * p * ys, ys);
}

// Q6_K: 16 groups of 16 (2 chunks each) with int8 scales; codes already centred (-32).
void tile_q6k(int64_t nb, const uint8_t* w, size_t wrb, const uint8_t* x, size_t xrb, float* y, int64_t ys, int P) {
  const auto* w0 = reinterpret_cast<const BlockQ6_K*>(w);
  const auto* w1 = reinterpret_cast<const BlockQ6_K*>(w + wrb);
  float32x4_t acc[2] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
  for (int64_t b = 0; b < nb; ++b) {
    arm::prefetch(w0 + b + 4);
    arm::prefetch(w1 + b + 4);
    arm::K6W d0, d1;
    arm::decode_q6k(w0 + b, d0);
    arm::decode_q6k(w1 + b, d1);
    KPair wp;
    pack_rows(d0.q, d1.q, wp);
    int32x4_t sc[16];
    for (int k = 0; k < 16; ++k) sc[k] = rows2(d0.scale[k], d1.scale[k]);
    const float32x4_t dw = rows2(d0.d, d1.d);
    for (int p = 0; p < P; ++p) {
      const auto* xa = reinterpret_cast<const BlockQ8_K*>(x + (2 * p) * xrb) + b;
      const auto* xb = reinterpret_cast<const BlockQ8_K*>(x + (2 * p + 1) * xrb) + b;
      KPair xp;
      pack_tokens(xa->qs, xb->qs, xp);
      int32x4_t isum = vdupq_n_s32(0);
      for (int k = 0; k < 16; ++k) {
        const int32x4_t s = vmmlaq_s32(vmmlaq_s32(vdupq_n_s32(0), wp.a[2 * k], xp.a[2 * k]), wp.a[2 * k + 1],
                                       xp.a[2 * k + 1]);
        isum = vmlaq_s32(isum, s, sc[k]);
      }
      acc[p] = vfmaq_f32(acc[p], vcvtq_f32_s32(isum), vmulq_f32(cols2(xa->d, xb->d), dw));
    }
  }
  for (int p = 0; p < P; ++p) store_tile(acc[p], y + 2 * p * ys, ys);
}

template <class K>
struct KQuant4 {
  static constexpr int64_t kBlockElems = 256;
  template <int P>
  static void tile(int64_t nb, const uint8_t* w, size_t wrb, const uint8_t* x, size_t xrb, float* y, int64_t ys) {
    tile_k4<K>(nb, w, wrb, x, xrb, y, ys, P);
  }
};

struct KQuant6 {
  static constexpr int64_t kBlockElems = 256;
  template <int P>
  static void tile(int64_t nb, const uint8_t* w, size_t wrb, const uint8_t* x, size_t xrb, float* y, int64_t ys) {
    tile_q6k(nb, w, wrb, x, xrb, y, ys, P);
  }
};

using MatmulFn = void (*)(int64_t, const void*, size_t, int64_t, int64_t, const void*, size_t, int64_t, float*,
                          int64_t);

// Rows in L2-sized chunks (as tile_driver.h); inside a chunk, row pairs x token pairs.
template <class T>
void matmul_pairs(MatmulFn fallback, int64_t n, const void* w, size_t wrb, int64_t r0, int64_t r1, const void* xq,
                  size_t xrb, int64_t nt, float* y, int64_t ys) {
  if (nt < 2 || r1 - r0 < 2) return fallback(n, w, wrb, r0, r1, xq, xrb, nt, y, ys);
  const int64_t nb = n / T::kBlockElems;
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* xb = static_cast<const uint8_t*>(xq);
  const int64_t r_even = r0 + ((r1 - r0) & ~int64_t{1});
  for (int64_t rc = r0; rc < r_even; rc += tiled::kRowChunk) {
    const int64_t re = rc + tiled::kRowChunk < r_even ? rc + tiled::kRowChunk : r_even;
    int64_t t = 0;
    for (; t + 4 <= nt; t += 4) {
      for (int64_t r = rc; r < re; r += 2) {
        T::template tile<2>(nb, wb + static_cast<size_t>(r) * wrb, wrb, xb + static_cast<size_t>(t) * xrb, xrb,
                            y + t * ys + r, ys);
      }
    }
    for (; t + 2 <= nt; t += 2) {
      for (int64_t r = rc; r < re; r += 2) {
        T::template tile<1>(nb, wb + static_cast<size_t>(r) * wrb, wrb, xb + static_cast<size_t>(t) * xrb, xrb,
                            y + t * ys + r, ys);
      }
    }
    if (t < nt) fallback(n, w, wrb, rc, re, xb + static_cast<size_t>(t) * xrb, xrb, nt - t, y + t * ys, ys);
  }
  if (r_even < r1) fallback(n, w, wrb, r_even, r1, xq, xrb, nt, y, ys);
}

}  // namespace

// The trampolines of kernel_list.h's legacy and K-quant groups: SMMLA pairs, the dotprod kernel of
// the same name for the rest.
#define EDGELLM_MATMUL_LEGACY(type, fn, K) \
  void fn(EDGELLM_MATMUL_PARAMS) { matmul_pairs<K>(dotprod::fn, EDGELLM_MATMUL_ARGS); }
#define EDGELLM_MATMUL_KQUANT EDGELLM_MATMUL_LEGACY
#include "kernels/arm/i8mm/kernel_list.h"

}  // namespace edgellm::kernels::i8mm
