// AVX-512 (VNNI + VBMI) form of the int8-weighted V sum over Q4_0 rows (kernels/attention.h,
// AttentionValueWeightsFn / AttentionAccumulateWeightedFn); the scalar twin is in
// kernels/scalar/attention_scalar.cpp and this file computes the same bits.
//
// value_weights, per group of 64 rows: the scales of block b are gathered (one dword per row,
// low half F16) and widened; per head and block, w = p * d for the 64 rows (four registers), its
// largest magnitude m by a horizontal max; then 127 / m for all of the group's (head, block)
// pairs by one vdivps, and each pair's 64 weights rounded to int8 (vcvtps2dq, round to nearest
// even; saturating packs and one vpermb), their sum by a horizontal add.
//
// accumulate_weighted, per block b and four rows s .. s + 3: the rows' 16 code bytes go into
// the four 128-bit lanes of one register and one vpermb interleaves them, so dword j holds byte j
// of each of the four rows; the low nibbles are elements 32b + j, the high nibbles 32b + 16 + j,
// as unsigned bytes 0 .. 15. One vpdpbusd per head and half block adds the four rows' products
// with their int8 weights (one dword, broadcast from memory) to 16 int32 lanes: 64 multiply-adds
// per instruction, against 16 for an F32 FMA and 32 for vdpbf16ps. At the end of each group of
// 64 rows the integer sums become one F32 FMA per element: out = fma(isum - 8 * qsum, S, out).
// Accumulators: up to 8 heads x 2 half blocks of int32 in registers over one group.
//
// GCC 12 reports -Wmaybe-uninitialized inside its own AVX-512 intrinsic headers (the
// _mm512_undefined_* pass-through operands, GCC PR105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernels/attention.h"
#include "kernels/attention_head_groups.h"
#include "kernels/attention_impl.h"
#include "kernels/blocks.h"

namespace edgellm::kernels::attention_avx512_vbmi {
namespace {

#define EDGELLM_UNROLL _Pragma("GCC unroll 16")

constexpr int64_t kGroup = kValueWeightGroupRows;  // 64
// How far value_weights prefetches ahead: the engine's distance for the other attention loops
// (engine/forward_attention.cpp).
constexpr size_t kAheadBytes = 8192;

inline __mmask16 lane_mask(int64_t n) {
  return n >= 16 ? static_cast<__mmask16>(0xFFFF) : n <= 0 ? static_cast<__mmask16>(0) : static_cast<__mmask16>((1u << n) - 1u);
}

// vpermb index: output byte 4j + r takes byte 16r + j (row r's code byte j, 128-bit lane r).
__m512i quad_index() {
  alignas(64) static const uint8_t kIndex[64] = {
      0,  16, 32, 48, 1,  17, 33, 49, 2,  18, 34, 50, 3,  19, 35, 51, 4,  20, 36, 52, 5,  21,
      37, 53, 6,  22, 38, 54, 7,  23, 39, 55, 8,  24, 40, 56, 9,  25, 41, 57, 10, 26, 42, 58,
      11, 27, 43, 59, 12, 28, 44, 60, 13, 29, 45, 61, 14, 30, 46, 62, 15, 31, 47, 63};
  return _mm512_load_si512(kIndex);
}

// reduce16(v, op)[k] = op over the 16 lanes of v[k], by a tree that halves the vectors and the
// lanes at each level (15 ops plus 30 shuffles instead of 16 separate horizontal reductions).
// op must be associative and commutative on the values it sees (max of non-NaN floats, integer
// add). After the four levels, lane 4L + e of the result holds v[kOrder[4L + e]]; the last
// vpermps puts vector k's lane at k.
template <class Op>
__m512 reduce16(const __m512 v[16], Op op) {
  __m512 t[8], u[4], w2[2];
  for (int i = 0; i < 8; ++i)  // 128-bit lanes 0, 1: v[i]; 2, 3: v[i + 8]
    t[i] = op(_mm512_shuffle_f32x4(v[i], v[i + 8], 0x44), _mm512_shuffle_f32x4(v[i], v[i + 8], 0xEE));
  for (int i = 0; i < 4; ++i)  // lanes: v[i], v[i + 8], v[i + 4], v[i + 12]
    u[i] = op(_mm512_shuffle_f32x4(t[i], t[i + 4], 0x88), _mm512_shuffle_f32x4(t[i], t[i + 4], 0xDD));
  for (int i = 0; i < 2; ++i)  // each 128-bit lane: elements 0, 1 of u[i]'s vector, 2, 3 of u[i + 2]'s
    w2[i] = op(_mm512_shuffle_ps(u[i], u[i + 2], 0x44), _mm512_shuffle_ps(u[i], u[i + 2], 0xEE));
  const __m512 r = op(_mm512_shuffle_ps(w2[0], w2[1], 0x88), _mm512_shuffle_ps(w2[0], w2[1], 0xDD));
  // r lane j holds vector kOrder[j] = 0 2 1 3 | 8 10 9 11 | 4 6 5 7 | 12 14 13 15; the inverse:
  return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 2, 1, 3, 8, 10, 9, 11, 4, 6, 5, 7, 12, 14, 13, 15), r);
}

// Block b of NH heads (h0 .. h0 + NH - 1 of g) over all cnt rows, group by group.
template <int NH>
void accumulate_block(const uint8_t* const* tiles, size_t row_bytes, int64_t cnt, int64_t b, const uint8_t* w, int64_t h0,
                      int64_t g, int64_t nb, float* out, int64_t out_stride) {
  const __m512i index = quad_index(), low4 = _mm512_set1_epi8(0x0F);
  const size_t qs_off = static_cast<size_t>(b) * sizeof(BlockQ4_0) + offsetof(BlockQ4_0, qs);
  const ValueWeightGroup group_at(g, nb);
  const __m128i zero = _mm_setzero_si128();
  for (int64_t s0 = 0; s0 < cnt; s0 += kGroup) {
    const uint8_t* grp = w + (s0 / kGroup) * group_at.bytes;
    const int64_t rows = cnt - s0 < kGroup ? cnt - s0 : kGroup;
    __m512i acc[NH][2];
    EDGELLM_UNROLL
    for (int h = 0; h < NH; ++h) acc[h][0] = acc[h][1] = _mm512_setzero_si512();
    const auto quad = [&](int64_t j, __m512i codes) {
      const __m512i x = _mm512_permutexvar_epi8(index, codes);
      const __m512i lo = _mm512_and_si512(x, low4);
      const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(x, 4), low4);
      EDGELLM_UNROLL
      for (int h = 0; h < NH; ++h) {
        int32_t four;
        std::memcpy(&four, grp + group_at.weights_offset(h0 + h, b) + j, sizeof four);
        const __m512i wq = _mm512_set1_epi32(four);
        acc[h][0] = _mm512_dpbusd_epi32(acc[h][0], lo, wq);
        acc[h][1] = _mm512_dpbusd_epi32(acc[h][1], hi, wq);
      }
    };
    // Rows s0 + j .. s0 + j + 3 (four rows never straddle a tile: 16 rows, groups start at
    // multiples of 16), one per 128-bit lane; rows from `present` on are zero codes (their weights
    // are 0 too), never read.
    const auto codes_at = [&](int64_t j, int64_t present) {
      const uint8_t* r =
          tiles[(s0 + j) / kValueTileRows] + static_cast<size_t>((s0 + j) % kValueTileRows) * row_bytes + qs_off;
      const auto row = [&](int64_t k) {
        return k < present ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(r + k * row_bytes)) : zero;
      };
      __m512i codes = _mm512_castsi128_si512(row(0));
      codes = _mm512_inserti32x4(codes, row(1), 1);
      codes = _mm512_inserti32x4(codes, row(2), 2);
      return _mm512_inserti32x4(codes, row(3), 3);
    };
    int64_t j = 0;
    for (; j + 4 <= rows; j += 4) quad(j, codes_at(j, 4));
    if (j < rows) quad(j, codes_at(j, rows - j));  // 1 - 3 rows left
    EDGELLM_UNROLL
    for (int h = 0; h < NH; ++h) {
      float scale;
      int32_t offset;
      std::memcpy(&scale, grp + group_at.scale_offset(h0 + h, b), sizeof scale);
      std::memcpy(&offset, grp + group_at.offset_offset(h0 + h, b), sizeof offset);
      const __m512i off = _mm512_set1_epi32(offset);
      const __m512 sc = _mm512_set1_ps(scale);
      float* o = out + h * out_stride + b * 32;
      _mm512_storeu_ps(o, _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(acc[h][0], off)), sc, _mm512_loadu_ps(o)));
      _mm512_storeu_ps(o + 16,
                       _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(acc[h][1], off)), sc, _mm512_loadu_ps(o + 16)));
    }
  }
}

}  // namespace

void value_weights_q4_0(const uint8_t* const* tiles, size_t rb, int64_t cnt, int64_t hd, const float* p, int64_t ps,
                        int64_t g, uint8_t* w) {
  constexpr int kQuarters = static_cast<int>(kGroup / kValueTileRows);  // 16-row tiles per group
  static_assert(kQuarters == 4, "the byte packing below takes four vectors per pair");
  const int64_t nb = hd / 32, pairs = g * nb;
  const ValueWeightGroup group_at(g, nb);
  const __m512i rows = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                          _mm512_set1_epi32(static_cast<int>(rb)));
  const __m512i abs_bits = _mm512_set1_epi32(0x7FFFFFFF);
  const __m512 min_max = _mm512_set1_ps(kValueWeightMinMax);
  const __m512 flt_max = _mm512_set1_ps(std::numeric_limits<float>::max());
  const auto max_ps = [](__m512 a, __m512 b) { return _mm512_max_ps(a, b); };
  const auto add_epi32 = [](__m512 a, __m512 b) {
    return _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(a), _mm512_castps_si512(b)));
  };
  const auto abs_ps = [&](__m512 v) { return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v), abs_bits)); };
  alignas(64) float x[16][kGroup];  // one chunk of pairs' products p * d
  // After packs_epi32 of (q0, q1) and (q2, q3), then packs_epi16 of the two, 128-bit lane L holds
  // elements 4L .. 4L + 3 of q0, q1, q2, q3 in turn; output byte 16P + e (quarter P, element e)
  // comes from byte 16 (e / 4) + 4P + e % 4.
  alignas(64) static const uint8_t kPackOrder[64] = {
      0, 1, 2, 3, 16, 17, 18, 19, 32, 33, 34, 35, 48, 49, 50, 51, 4, 5, 6, 7, 20, 21, 22, 23, 36, 37, 38, 39, 52, 53, 54, 55,
      8, 9, 10, 11, 24, 25, 26, 27, 40, 41, 42, 43, 56, 57, 58, 59, 12, 13, 14, 15, 28, 29, 30, 31, 44, 45, 46, 47, 60, 61, 62, 63};
  const __m512i pack_order = _mm512_load_si512(kPackOrder);
  for (int64_t s0 = 0; s0 < cnt; s0 += kGroup) {
    // Quarter t: rows s0 + 16t .. of tile s0 / 16 + t (only the tiles that hold rows are read).
    __mmask16 mq[kQuarters];
    const uint8_t* tile[kQuarters];
    for (int t = 0; t < kQuarters; ++t) {
      mq[t] = lane_mask(cnt - s0 - 16 * t);
      tile[t] = mq[t] != 0 ? tiles[s0 / kValueTileRows + t] : tiles[s0 / kValueTileRows];
    }
    uint8_t* grp = w + (s0 / kGroup) * group_at.bytes;
    // The first pass over these rows: fetch their tiles kAheadBytes on (a hint, harmless past the
    // rows; the address is made as an integer, never a pointer past the object). Within a run of
    // KV blocks that is where later groups' rows are.
    for (int t = 0; t < kQuarters; ++t) {
      if (mq[t] == 0) continue;
      const uintptr_t ahead = reinterpret_cast<uintptr_t>(tile[t]) + kAheadBytes;
      for (size_t off = 0; off < kValueTileRows * rb; off += 64) __builtin_prefetch(reinterpret_cast<const void*>(ahead + off), 0, 3);
    }
    // The scales of block b of the group's rows (0 for rows past cnt): one dword per row, F16 in
    // its low half.
    const auto scales_of = [&](int64_t b, __m512 d[kQuarters]) {
      const size_t at = static_cast<size_t>(b) * sizeof(BlockQ4_0);
      for (int t = 0; t < kQuarters; ++t) {
        d[t] = _mm512_cvtph_ps(
            _mm512_cvtepi32_epi16(_mm512_mask_i32gather_epi32(_mm512_setzero_si512(), mq[t], rows, tile[t] + at, 1)));
      }
    };
    // The first blocks' scales stay in registers (pairs go head by head, block by block within).
    constexpr int64_t kCachedBlocks = 2;
    __m512 dc[kCachedBlocks][kQuarters];
    for (int64_t b = 0; b < nb && b < kCachedBlocks; ++b) scales_of(b, dc[b]);
    // Pairs (h, b), index h * nb + b, sixteen at a time: their products and maxima, 127 / m and S
    // for all sixteen at once, then the int8 weights and their sums.
    for (int64_t i0 = 0; i0 < pairs; i0 += 16) {
      const int64_t n = pairs - i0 < 16 ? pairs - i0 : 16;
      __m512 amax[16];
      int64_t h = i0 / nb, b = i0 % nb;  // pair i0 + k, stepped without a division per pair
      for (int64_t k = 0; k < 16; ++k, b = b + 1 == nb ? (++h, 0) : b + 1) {
        if (k >= n) {
          amax[k] = _mm512_setzero_ps();
          continue;
        }
        __m512 dn[kQuarters];
        const __m512* d = dc[0];
        if (b < kCachedBlocks) {
          d = dc[b];
        } else {
          scales_of(b, dn);
          d = dn;
        }
        __m512 a = _mm512_setzero_ps();
        for (int t = 0; t < kQuarters; ++t) {
          const __m512 xt = _mm512_mul_ps(_mm512_maskz_loadu_ps(mq[t], p + h * ps + s0 + 16 * t), d[t]);
          _mm512_store_ps(x[k] + 16 * t, xt);
          a = _mm512_max_ps(a, abs_ps(xt));
        }
        amax[k] = a;
      }
      const __mmask16 mk = lane_mask(n);
      const __m512 m = reduce16(amax, max_ps);  // lane k: m of pair i0 + k
      const __mmask16 ok = _mm512_cmp_ps_mask(m, min_max, _CMP_GE_OQ) & _mm512_cmp_ps_mask(m, flt_max, _CMP_LE_OQ);
      const __mmask16 small = _mm512_cmp_ps_mask(m, min_max, _CMP_LT_OQ);
      alignas(64) float inv[16];
      _mm512_store_ps(inv, _mm512_maskz_div_ps(ok, _mm512_set1_ps(127.0f), m));
      // Scale slots of pairs i0 .. i0 + n - 1 are contiguous.
      _mm512_mask_storeu_ps(grp + group_at.scale_offset(0, 0) + i0 * 4, mk,
                            _mm512_maskz_div_ps(static_cast<__mmask16>(~small), m, _mm512_set1_ps(127.0f)));
      // Per pair: its four vectors of int32 codes packed to bytes by saturating packs (the same
      // saturation as vpmovsdb) and put in order by one vpermb, one 64-byte store: 4 shuffles
      // where vpmovsdb takes 8.
      __m512 qsum[16];
      for (int64_t k = 0; k < 16; ++k) {
        if (k >= n) {
          qsum[k] = _mm512_setzero_ps();
          continue;
        }
        const __m512 kinv = _mm512_set1_ps(inv[k]);
        __m512i q[kQuarters];
        // A NaN product converts to INT_MIN (saturated to -128 below): unspecified, not undefined.
        for (int t = 0; t < kQuarters; ++t) q[t] = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_load_ps(x[k] + 16 * t), kinv));
        const __m512i bytes = _mm512_permutexvar_epi8(
            pack_order, _mm512_packs_epi16(_mm512_packs_epi32(q[0], q[1]), _mm512_packs_epi32(q[2], q[3])));
        _mm512_storeu_si512(grp + (i0 + k) * kGroup, bytes);  // weights_offset(h, b) of pair i0 + k
        qsum[k] = _mm512_castsi512_ps(_mm512_add_epi32(_mm512_add_epi32(q[0], q[1]), _mm512_add_epi32(q[2], q[3])));
      }
      const __m512i offsets = _mm512_slli_epi32(_mm512_castps_si512(reduce16(qsum, add_epi32)), 3);  // 8 * sum
      _mm512_mask_storeu_epi32(grp + group_at.offset_offset(0, 0) + i0 * 4, mk, offsets);
    }
  }
}

void accumulate_weighted_q4_0(const uint8_t* const* tiles, size_t rb, int64_t cnt, int64_t hd, const uint8_t* w,
                              int64_t g, float* out, int64_t os) {
  const int64_t nb = hd / 32;
  attention::for_head_groups(g, [&](auto nh, int64_t h0) {
    constexpr int NH = decltype(nh)::kValue;
    for (int64_t b = 0; b < nb; ++b) accumulate_block<NH>(tiles, rb, cnt, b, w, h0, g, nb, out + h0 * os, os);
  });
}

}  // namespace edgellm::kernels::attention_avx512_vbmi
