// AVX-512 VNNI matmul for the 16-row interleaved Q4_0 / Q5_0 / Q8_0 / Q4_K / Q5_K / Q6_K _X16 weights
// (layouts and the reason for them in kernels/repack.h).
//
// One ZMM of codes holds 4 consecutive elements of 16 rows (lane r = row r of the group). For a
// token, vpdpbusd with the token's 4 activation bytes broadcast to every lane adds those 4
// products to each row's int32 partial; 8 of them cover a 32-element block. The codes are
// unsigned (Q4_0 nibbles 0..15, Q8_0 bytes + 128) and the activations signed, which is exactly
// vpdpbusd's operand order; the offset comes off through the seed -off * sum(x), known from the
// activation block. Then one convert and one FMA with d_w[16] * d_x finish the block for 16 rows.
//
// Tiles: 16 rows x kTokens tokens. The 8 code vectors of a block are decoded once and reused for
// every token of the tile; the result of a tile is kTokens stores of 16 contiguous floats.
//
// kPrefetchEveryTile: the weight stream is prefetched for tiles of every token count, not only
// for decode. A batch of 2-8 tokens (continuous batching: one decode token per running sequence)
// makes one tile pass per weight chunk, so it streams the weights from DRAM exactly like decode;
// without the software prefetch that pass ran at ~1/3 of decode's bandwidth (Qwen2.5-0.5B Q4_0,
// pp4 ~35 ms against ~10 ms for one token). For long prompts the later passes over a chunk hit
// L2, where a prefetch costs an issue slot: ~3 prefetches per 64 vpdpbusd of an 8-token tile.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "kernels/blocks.h"
#include "kernels/repack.h"
#include "kernels/packed_driver.h"
#include "kernels/tile_driver.h"
#include "kernels/x86/avx512/avx512_kernels.h"
#include "kernels/x86/packed_prefetch.h"

namespace edgellm::kernels::avx512 {
namespace {

using x86::prefetch_line;

enum class Legacy4 { kQ4_0, kQ5_0, kQ8_0 };

// Moves bit `from` of every byte to bit `to` (other bits are garbage, masked by the caller). A
// 16-bit shift by at most 4 left or 3 right never carries a neighbour byte's bit into bit 4 or 5.
template <int kFrom, int kTo>
EDGELLM_ALWAYS_INLINE __m512i move_bits(__m512i v) {
  if constexpr (kFrom < kTo) return _mm512_slli_epi16(v, kTo - kFrom);
  else if constexpr (kFrom > kTo) return _mm512_srli_epi16(v, kFrom - kTo);
  else return v;
}

// (a & mask) | b in one instruction: ternary-logic truth table of A & B | C.
EDGELLM_ALWAYS_INLINE __m512i and_or(__m512i a, __m512i mask, __m512i b) {
  return _mm512_ternarylogic_epi32(a, mask, b, 0xEA);
}

template <Legacy4 kKind>
struct Format {
  // Code bytes per block column (Q5_0: 256 of nibbles + 64 of fifth bits) and the code offset.
  static constexpr int64_t kCodeBytes = kKind == Legacy4::kQ8_0 ? kPackRows * kQK8_0
                                        : kKind == Legacy4::kQ5_0 ? kPackRows * (kQK5_0 / 2 + 4)
                                                                  : kPackRows * (kQK4_0 / 2);
  static constexpr int32_t kOffset = kKind == Legacy4::kQ8_0 ? 128 : kKind == Legacy4::kQ5_0 ? 16 : 8;

  template <int J>
  static EDGELLM_ALWAYS_INLINE __m512i fifth_bits(__m512i high, __m512i bit4, __m512i nibbles) {
    return and_or(move_bits<J, 4>(high), bit4, nibbles);
  }

  static EDGELLM_ALWAYS_INLINE void load_codes(const uint8_t* cb, __m512i w[8]) {
    if constexpr (kKind == Legacy4::kQ8_0) {
      for (int j = 0; j < 8; ++j) w[j] = _mm512_loadu_si512(cb + 64 * j);
    } else {
      const __m512i mask = _mm512_set1_epi8(0x0F);
      for (int j = 0; j < 4; ++j) {
        const __m512i v = _mm512_loadu_si512(cb + 64 * j);
        w[j] = _mm512_and_si512(v, mask);                            // elements 4j .. 4j+3
        w[j + 4] = _mm512_and_si512(_mm512_srli_epi16(v, 4), mask);  // elements 16+4j ..
      }
      if constexpr (kKind == Legacy4::kQ5_0) {
        // Bit j of each byte of `high` is the fifth bit of code vector j's element.
        const __m512i high = _mm512_loadu_si512(cb + 256), bit4 = _mm512_set1_epi8(0x10);
        w[0] = fifth_bits<0>(high, bit4, w[0]);
        w[1] = fifth_bits<1>(high, bit4, w[1]);
        w[2] = fifth_bits<2>(high, bit4, w[2]);
        w[3] = fifth_bits<3>(high, bit4, w[3]);
        w[4] = fifth_bits<4>(high, bit4, w[4]);
        w[5] = fifth_bits<5>(high, bit4, w[5]);
        w[6] = fifth_bits<6>(high, bit4, w[6]);
        w[7] = fifth_bits<7>(high, bit4, w[7]);
      }
    }
  }
};

EDGELLM_ALWAYS_INLINE __m512i bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// Code vector j of a block pairs with activation bytes 4j .. 4j+3 in both formats (for Q4_0 the
// high-nibble vectors j = 4..7 hold elements 16+4(j-4) = 4j).
// Block column b of a group for TT tokens, accumulated into acc[TT].
template <Legacy4 kKind, int TT>
EDGELLM_ALWAYS_INLINE void block_legacy(const uint8_t* group, int64_t nb, int64_t b, const uint8_t* x, size_t x_row_bytes,
                                        __m512* acc) {
  using F = Format<kKind>;
  const auto* scales = reinterpret_cast<const uint16_t*>(group + nb * F::kCodeBytes);
  const uint8_t* cb = group + b * F::kCodeBytes;
  const auto xblock = [&](int t) -> const BlockQ8_0S& {
    return reinterpret_cast<const BlockQ8_0S*>(x + static_cast<size_t>(t) * x_row_bytes)[b];
  };
  x86::prefetch_legacy_column<F::kCodeBytes>(group, nb, b);  // every tile size: see kPrefetchEveryTile
  const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales + b * kPackRows)));
  if constexpr (TT == 1 && kKind == Legacy4::kQ4_0) {
    // Decode: the high nibbles stay in place (v & 0xF0 = 16 x code), saving a shift per
    // vector; their chain is exactly 16 x its true sum, so an arithmetic >> 4 undoes it.
    const BlockQ8_0S& xb = xblock(0);
    const __m512i lo_mask = _mm512_set1_epi8(0x0F), hi_mask = _mm512_set1_epi8(static_cast<char>(0xF0));
    __m512i p0 = _mm512_set1_epi32(-F::kOffset * xb.sum);
    __m512i p1 = _mm512_setzero_si512();
    for (int j = 0; j < 4; ++j) {
      const __m512i v = _mm512_loadu_si512(cb + 64 * j);
      p0 = _mm512_dpbusd_epi32(p0, _mm512_and_si512(v, lo_mask), bcast4(xb.qs + 4 * j));
      p1 = _mm512_dpbusd_epi32(p1, _mm512_and_si512(v, hi_mask), bcast4(xb.qs + 16 + 4 * j));
    }
    const __m512i p = _mm512_add_epi32(p0, _mm512_srai_epi32(p1, 4));
    acc[0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(dw, _mm512_set1_ps(xb.d)), acc[0]);
    return;
  }
  __m512i w[8];
  F::load_codes(cb, w);
  for (int t = 0; t < TT; ++t) {
    const BlockQ8_0S& xb = xblock(t);
    if constexpr (TT == 1) {
      // A lone token: two independent chains so consecutive vpdpbusd do not wait on each other.
      __m512i p0 = _mm512_set1_epi32(-F::kOffset * xb.sum);
      __m512i p1 = _mm512_setzero_si512();
      for (int j = 0; j < 8; j += 2) {
        p0 = _mm512_dpbusd_epi32(p0, w[j], bcast4(xb.qs + 4 * j));
        p1 = _mm512_dpbusd_epi32(p1, w[j + 1], bcast4(xb.qs + 4 * j + 4));
      }
      const __m512i p = _mm512_add_epi32(p0, p1);
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(dw, _mm512_set1_ps(xb.d)), acc[t]);
    } else {
      __m512i p = _mm512_set1_epi32(-F::kOffset * xb.sum);
      for (int j = 0; j < 8; ++j) p = _mm512_dpbusd_epi32(p, w[j], bcast4(xb.qs + 4 * j));
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(dw, _mm512_set1_ps(xb.d)), acc[t]);
    }
  }
}

// 16 rows x TT tokens: every block column of the group (Block::run<TT> accumulates one).
template <class Block, int TT>
EDGELLM_ALWAYS_INLINE void tile(const uint8_t* group, int64_t nb, const uint8_t* x, size_t x_row_bytes, float* y,
                                int64_t y_stride) {
  __m512 acc[TT];
#pragma GCC unroll 16
  for (int t = 0; t < TT; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) Block::template run<TT>(group, nb, b, x, x_row_bytes, acc);
#pragma GCC unroll 16
  for (int t = 0; t < TT; ++t) _mm512_storeu_ps(y + t * y_stride, acc[t]);
}

// A packed_driver.h policy from a block function.
template <class Block, int64_t kElems, int kTileTokens>
struct Policy {
  static constexpr int64_t kBlockElems = kElems;
  static constexpr int kTokens = kTileTokens;
  template <int TT>
  static EDGELLM_ALWAYS_INLINE void group(const uint8_t* g, int64_t nb, const uint8_t* x, size_t xrb, float* y,
                                          int64_t ys) {
    tile<Block, TT>(g, nb, x, xrb, y, ys);
  }
  // Decode, two groups side by side (packed_driver.h: decode_groups).
  static EDGELLM_ALWAYS_INLINE void group_pair(const uint8_t* ga, const uint8_t* gb, int64_t nb, const uint8_t* x,
                                               float* ya, float* yb) {
    __m512 a[1] = {_mm512_setzero_ps()}, b[1] = {_mm512_setzero_ps()};
    for (int64_t c = 0; c < nb; ++c) {
      Block::template run<1>(ga, nb, c, x, 0, a);
      Block::template run<1>(gb, nb, c, x, 0, b);
    }
    _mm512_storeu_ps(ya, a[0]);
    _mm512_storeu_ps(yb, b[0]);
  }
};

template <Legacy4 kKind>
struct LegacyBlock {
  template <int TT>
  static EDGELLM_ALWAYS_INLINE void run(const uint8_t* g, int64_t nb, int64_t b, const uint8_t* x, size_t xrb,
                                        __m512* acc) {
    block_legacy<kKind, TT>(g, nb, b, x, xrb, acc);
  }
};
// 8 code vectors + 8 accumulators + 8 partial sums in flight fit the 32 ZMM registers.
template <Legacy4 kKind>
using Legacy = Policy<LegacyBlock<kKind>, kQK8_0, 8>;

// ---------------------------------------------------------------- Q4_K_X16
// Per super-block column b of a group (layout in repack.h), per token: the 8 sub-blocks' integer
// dot products (8 vpdpbusd each, lanes = rows), each times its 6-bit scale in int32 (vpmulld;
// exact: |sum| <= 8 x 63 x 32 x 15 x 127 < 2^31) into one int32 total, as the scalar twin sums
// them; then one convert + FMA with d_r * d_x, and the mins term -dmin_r * d_x * sum_j m_j *
// sum_j(x) from 4 vpdpwssd on (m_2i, m_2i+1) int16 pairs (Q4KSide, finish_q4_k_column).
//
// Prefill (TT > 1, block_q4_k_tokens) works one sub-block at a time: its 8 code vectors are held
// while the TT tokens' dot products advance side by side (k outer, t inner: consecutive vpdpbusd
// are independent). Every loop over tokens is unrolled explicitly: the kernel before this one
// (F32 scale per sub-block) had its token loop left rolled by GCC with the accumulators on the
// stack. Single core, 2048 x 2048 x 512 tokens, % of the int8 probe's peak: 38 % before, 62-64 %
// now (the same form token by token: 62 %).
//
// Decode (TT == 1) computes the same integer total with a sub-block pair's two chains side by
// side, and ends the column with the same F32 operations, so that a token's result does not
// depend on the tile it falls in: a prompt prefilled in chunks gives the logits of one pass, bit
// for bit (Repack.BatchedMatmulEqualsTokenByToken). The scalar twin rounds the end differently,
// dx * (d * tot - dmin * msum), within the tests' tolerance.
constexpr int kKTokens = 8;

// A column's F32 scales and its mins as int16 pairs, loaded once for every token of a tile.
struct Q4KSide {
  __m512 d, dmin;
  __m512i mins[4];
};
EDGELLM_ALWAYS_INLINE Q4KSide load_q4_k_side(const uint8_t* cb) {
  Q4KSide side;
  side.d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(cb + kQ4KX16D)));
  side.dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(cb + kQ4KX16Dmin)));
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    side.mins[i] = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(cb + kQ4KX16Mins + i * 32)));
  }
  return side;
}

// acc + d_r d_x tot - dmin_r d_x sum_j m_j sum_j(x) for one token.
EDGELLM_ALWAYS_INLINE __m512 finish_q4_k_column(const Q4KSide& side, const BlockQ8_KS& xv, __m512i tot, __m512 acc) {
  __m512i m = _mm512_setzero_si512();
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    int32_t pair;
    std::memcpy(&pair, xv.sums + 2 * i, 4);
    m = _mm512_dpwssd_epi32(m, side.mins[i], _mm512_set1_epi32(pair));
  }
  const __m512 dx = _mm512_set1_ps(xv.d);
  acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(tot), _mm512_mul_ps(side.d, dx), acc);
  return _mm512_fnmadd_ps(_mm512_cvtepi32_ps(m), _mm512_mul_ps(side.dmin, dx), acc);
}

// Q5_K_X16 (kQ5) is a Q4_K_X16 column plus a fifth bit per value (repack.h): sub-block j's code
// vector k gains 16 where bit j of high vector k is set (vptestmb, then a masked add).
template <bool kQ5>
constexpr int64_t k4_column_bytes() {
  return kQ5 ? kQ5KX16ColumnBytes : kQ4KX16ColumnBytes;
}

template <bool kQ5>
EDGELLM_ALWAYS_INLINE __m512i add_fifth_bits(__m512i codes, const uint8_t* cb, int k, int j) {
  if constexpr (!kQ5) {
    return codes;
  } else {
    const __m512i high = _mm512_loadu_si512(cb + kQ5KX16High + k * 64);
    const __mmask64 m = _mm512_test_epi8_mask(high, _mm512_set1_epi8(static_cast<char>(1 << j)));
    return _mm512_mask_add_epi8(codes, m, codes, _mm512_set1_epi8(16));
  }
}

template <bool kQ5, int TT>
EDGELLM_ALWAYS_INLINE void block_q4_k_tokens(const uint8_t* group, int64_t b, const uint8_t* x, size_t x_row_bytes,
                                             __m512* acc) {
  constexpr int64_t kColumnBytes = k4_column_bytes<kQ5>();
  // The column's lines spread over its 8 sub-blocks (Q4_K: 37 lines, 5 per sub-block; Q5_K: 45, 6).
  constexpr int64_t kSpan = (kColumnBytes / 64 + 7) / 8 * 64;
  const uint8_t* cb = group + b * kColumnBytes;
  const uint8_t* scales = cb + kQ4KX16Scales;
  const uint8_t* xb = x + static_cast<size_t>(b) * sizeof(BlockQ8_KS);
  const auto xt = [&](int t) -> const BlockQ8_KS& {
    return *reinterpret_cast<const BlockQ8_KS*>(xb + static_cast<size_t>(t) * x_row_bytes);
  };
  const __m512i mask = _mm512_set1_epi8(0x0F);
  __m512i tot[TT];
#pragma GCC unroll 16
  for (int t = 0; t < TT; ++t) tot[t] = _mm512_setzero_si512();
#pragma GCC unroll 1
  for (int j = 0; j < 8; ++j) {
    // Every tile size prefetches (kPrefetchEveryTile): the column's 37 lines spread over the
    // sub-blocks, 5 lines each (2 for the last).
    for (int64_t off = j * kSpan; off < (j + 1) * kSpan && off < kColumnBytes; off += 64) prefetch_line(cb + off);
    const int g = j >> 1;
    const int shift = (j & 1) * 4;
    __m512i c[8];
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
      const __m512i v = _mm512_loadu_si512(cb + (g * 8 + k) * 64);
      c[k] = add_fifth_bits<kQ5>(_mm512_and_si512(_mm512_srl_epi16(v, _mm_cvtsi32_si128(shift)), mask), cb, k, j);
    }
    __m512i p[TT];
#pragma GCC unroll 16
    for (int t = 0; t < TT; ++t) p[t] = _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
#pragma GCC unroll 16
      for (int t = 0; t < TT; ++t) p[t] = _mm512_dpbusd_epi32(p[t], c[k], bcast4(xt(t).qs + 32 * j + 4 * k));
    }
    const __m512i sc = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + j * kPackRows)));
#pragma GCC unroll 16
    for (int t = 0; t < TT; ++t) tot[t] = _mm512_add_epi32(tot[t], _mm512_mullo_epi32(p[t], sc));
  }
  const Q4KSide side = load_q4_k_side(cb);
#pragma GCC unroll 16
  for (int t = 0; t < TT; ++t) acc[t] = finish_q4_k_column(side, xt(t), tot[t], acc[t]);
}

template <bool kQ5, int TT>
EDGELLM_ALWAYS_INLINE void block_q4_k(const uint8_t* group, int64_t /*nb: a column is self-contained*/, int64_t b,
                                      const uint8_t* x, size_t x_row_bytes, __m512* acc) {
  constexpr int64_t kColumnBytes = k4_column_bytes<kQ5>();
  if constexpr (TT > 1) {
    block_q4_k_tokens<kQ5, TT>(group, b, x, x_row_bytes, acc);
  } else {
    // Decode: the integer sums of block_q4_k_tokens (exact, so in any order) with a sub-block
    // pair's two chains side by side; the high nibbles stay in place (v & 0xF0 = 16 x code) and
    // their exact 16x sum is shifted back before the scale. Q5_K's high halves (up to 31) do not
    // fit that way: they are shifted down first.
    const uint8_t* cb = group + b * kColumnBytes;  // codes, then the side data (repack.h)
    const uint8_t* scales = cb + kQ4KX16Scales;
    const BlockQ8_KS& xv = reinterpret_cast<const BlockQ8_KS*>(x)[b];
    const __m512i mask = _mm512_set1_epi8(0x0F), hi_mask = _mm512_set1_epi8(static_cast<char>(0xF0));
    __m512i tot = _mm512_setzero_si512();
    for (int g = 0; g < 4; ++g) {
      {  // every tile size: see kPrefetchEveryTile
        // All 37 lines of the column, spread over the sub-block pairs (a burst of 37 prefetches
        // would wait for fill buffers): 8 code lines per pair, the 5 side lines with the last.
        for (int j = g * 512; j < (g + 1) * 512; j += 64) prefetch_line(cb + j);
        if (g == 3) {
          for (int64_t j = kQ4KX16Scales; j < kColumnBytes; j += 64) prefetch_line(cb + j);
        }
      }
      __m512i p = _mm512_setzero_si512(), q = _mm512_setzero_si512();
      for (int k = 0; k < 8; ++k) {
        const __m512i v = _mm512_loadu_si512(cb + (g * 8 + k) * 64);
        p = _mm512_dpbusd_epi32(p, add_fifth_bits<kQ5>(_mm512_and_si512(v, mask), cb, k, 2 * g),
                                bcast4(xv.qs + 64 * g + 4 * k));
        const __m512i hi = kQ5 ? add_fifth_bits<kQ5>(_mm512_and_si512(_mm512_srli_epi16(v, 4), mask), cb, k, 2 * g + 1)
                               : _mm512_and_si512(v, hi_mask);
        q = _mm512_dpbusd_epi32(q, hi, bcast4(xv.qs + 64 * g + 32 + 4 * k));
      }
      const auto scale_of = [&](int j) {
        return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + j * kPackRows)));
      };
      tot = _mm512_add_epi32(tot, _mm512_mullo_epi32(p, scale_of(2 * g)));
      tot = _mm512_add_epi32(tot, _mm512_mullo_epi32(kQ5 ? q : _mm512_srai_epi32(q, 4), scale_of(2 * g + 1)));
    }
    acc[0] = finish_q4_k_column(load_q4_k_side(cb), xv, tot, acc[0]);
  }
}

template <bool kQ5>
struct K4Block {
  template <int TT>
  static EDGELLM_ALWAYS_INLINE void run(const uint8_t* g, int64_t nb, int64_t b, const uint8_t* x, size_t xrb,
                                        __m512* acc) {
    block_q4_k<kQ5, TT>(g, nb, b, x, xrb, acc);
  }
};
using Q4K = Policy<K4Block<false>, kQK_K, kKTokens>;
using Q5K = Policy<K4Block<true>, kQK_K, kKTokens>;

// ---------------------------------------------------------------- Q6_K_X16
// Per super-block column b and 32-element chunk c: 4 ql vectors and the 2 qh vectors of
// sub-blocks 2c, 2c+1 give 8 code vectors (values 0..63, lanes = rows), reused for every token.
// Per token and sub-block j: 4 vpdpbusd seeded with -32 * bsum_j (Q8_K's 16-element sums)
// give sum (q - 32) x per row; vpmulld by the rows' int8 scales and an add keep the super-block
// exact in int32 (|sum| <= 16 x 16 x 32 x 128 x 128 < 2^31), then one convert and one FMA with
// d_r * d_x per super-block.
constexpr int64_t kQ6ColumnBytes = 2048 + 1024 + 256;

template <int TT>
EDGELLM_ALWAYS_INLINE void block_q6_k(const uint8_t* group, int64_t nb, int64_t b, const uint8_t* x, size_t x_row_bytes,
                                      __m512* acc) {
  const auto* dd = reinterpret_cast<const uint16_t*>(group + nb * kQ6ColumnBytes);
  const BlockQ8_K* xt[TT];
  for (int t = 0; t < TT; ++t) xt[t] = reinterpret_cast<const BlockQ8_K*>(x + static_cast<size_t>(t) * x_row_bytes);
  const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
  const uint8_t* col = group + b * kQ6ColumnBytes;
  x86::prefetch_d_array<kQ6ColumnBytes>(group, nb, b);  // every tile size: see kPrefetchEveryTile
  __m512i tot[TT];
  for (int t = 0; t < TT; ++t) tot[t] = _mm512_setzero_si512();
  for (int c = 0; c < 8; ++c) {
    {  // every tile size: see kPrefetchEveryTile
      // Spread over the chunks: a burst of 52 prefetches would wait for line fill buffers.
      for (int j = c * (kQ6ColumnBytes / 8); j < (c + 1) * (kQ6ColumnBytes / 8); j += 64) {
        prefetch_line(col + j);
      }
    }
    const __m512i ha = _mm512_loadu_si512(col + 2048 + (2 * c) * 64);
    const __m512i hb = _mm512_loadu_si512(col + 2048 + (2 * c + 1) * 64);
    __m512i qa[4], qb[4];
    const auto decode = [&](auto s_const) {
      constexpr int s = decltype(s_const)::value;
      const __m512i v = _mm512_loadu_si512(col + (4 * c + s) * 64);
      qa[s] = and_or(move_bits<2 * s, 4>(ha), m30, _mm512_and_si512(v, m4));
      qb[s] = and_or(move_bits<2 * s, 4>(hb), m30, _mm512_and_si512(_mm512_srli_epi16(v, 4), m4));
    };
    decode(std::integral_constant<int, 0>{});
    decode(std::integral_constant<int, 1>{});
    decode(std::integral_constant<int, 2>{});
    decode(std::integral_constant<int, 3>{});
    const __m512i sca = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(col + 3072 + 2 * c * 16)));
    const __m512i scb =
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(col + 3072 + (2 * c + 1) * 16)));
    if constexpr (TT == 1) {
      const BlockQ8_K& xb = xt[0][b];
      __m512i pa = _mm512_set1_epi32(-32 * xb.bsums[2 * c]);
      __m512i pb = _mm512_set1_epi32(-32 * xb.bsums[2 * c + 1]);
      for (int s = 0; s < 4; ++s) {
        pa = _mm512_dpbusd_epi32(pa, qa[s], bcast4(xb.qs + 32 * c + 4 * s));
        pb = _mm512_dpbusd_epi32(pb, qb[s], bcast4(xb.qs + 32 * c + 16 + 4 * s));
      }
      tot[0] = _mm512_add_epi32(tot[0], _mm512_add_epi32(_mm512_mullo_epi32(pa, sca), _mm512_mullo_epi32(pb, scb)));
    } else {
      // Prefill: the tokens' chains side by side, one sub-block at a time (as block_q4_k_tokens).
      const auto sub_block = [&](const __m512i* q, int half, __m512i sc) {
        __m512i p[TT];
#pragma GCC unroll 16
        for (int t = 0; t < TT; ++t) p[t] = _mm512_set1_epi32(-32 * xt[t][b].bsums[2 * c + half]);
#pragma GCC unroll 4
        for (int s = 0; s < 4; ++s) {
#pragma GCC unroll 16
          for (int t = 0; t < TT; ++t) {
            p[t] = _mm512_dpbusd_epi32(p[t], q[s], bcast4(xt[t][b].qs + 32 * c + 16 * half + 4 * s));
          }
        }
#pragma GCC unroll 16
        for (int t = 0; t < TT; ++t) tot[t] = _mm512_add_epi32(tot[t], _mm512_mullo_epi32(p[t], sc));
      };
      sub_block(qa, 0, sca);
      sub_block(qb, 1, scb);
    }
  }
  const __m512 dvec = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(dd + b * kPackRows)));
#pragma GCC unroll 16
  for (int t = 0; t < TT; ++t) {
    acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(tot[t]), _mm512_mul_ps(dvec, _mm512_set1_ps(xt[t][b].d)), acc[t]);
  }
}

struct Q6KBlock {
  template <int TT>
  static EDGELLM_ALWAYS_INLINE void run(const uint8_t* g, int64_t nb, int64_t b, const uint8_t* x, size_t xrb,
                                        __m512* acc) {
    block_q6_k<TT>(g, nb, b, x, xrb, acc);
  }
};
// 8 code vectors, 2 scale vectors, 6 int32 + 6 float accumulators and the partials fit 32 ZMM.
using Q6K = Policy<Q6KBlock, kQK_K, 6>;

}  // namespace

// The trampolines of kernel_list.h's packed group.
#define EDGELLM_MATMUL_PACKED(type, fn, K) \
  void fn(EDGELLM_MATMUL_PARAMS) { packed::matmul<K>(EDGELLM_MATMUL_ARGS); }
#include "kernels/x86/avx512/kernel_list.h"

}  // namespace edgellm::kernels::avx512
