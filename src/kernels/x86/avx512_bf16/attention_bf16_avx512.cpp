// AVX-512 BF16 (with VBMI) form of the BF16-weighted V sum over Q4_0 rows (kernels/attention.h,
// AttentionValueWeightsFn / AttentionAccumulateWeightedFn); the scalar twin is in
// kernels/scalar/attention_scalar.cpp and this file computes the same bits.
//
// value_weights: per 16 rows, the scales of block b are gathered (one dword per row, low half)
// and widened; per head, p * d is flushed below FLT_MIN and converted by vcvtneps2bf16 (round to
// nearest even), the tile's 16 weights stored at once. It is the first pass over the rows, so it also
// prefetches them; accumulate_weighted then reads them from cache.
//
// accumulate_weighted: per block b and two rows s, s + 1, one vpermt2b interleaves the two rows'
// 16 code bytes into 32 words (word 2j: byte j of row s, word 2j + 1: byte j of row s + 1, upper
// bytes don't care), and vpermw looks each word's low 5 bits up in a 32-entry table of
// bf16((j & 15) - 8): the low nibbles directly, the high nibbles after a 4-bit word shift (the
// bits above them only pick the table's upper copy). That gives elements 32b .. 32b+15 and
// 32b+16 .. 32b+31 of both rows as BF16 pairs, and one vdpbf16ps per head and half block adds
// w_{s+1} x_{s+1} and w_s x_s to 16 lanes, with the pair of weights (one dword of w) broadcast
// from memory. The engine calls value_weights for a few hundred rows, then accumulate_weighted
// for them: a dword load right after a 32-byte store of the same bytes would wait for the store
// to commit (store forwarding does not split a store): 20 instead of 9 us per 4096 rows and 8
// heads when weights and sum were interleaved per 16 rows, measured.
// Accumulators: up to 8 heads x 2 half blocks in registers across all rows of a block.
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

#include "kernels/attention_head_groups.h"
#include "kernels/attention_impl.h"
#include "kernels/blocks.h"

namespace edgellm::kernels::attention_avx512_bf16 {
namespace {

#define EDGELLM_UNROLL _Pragma("GCC unroll 16")

constexpr float kFltMin = std::numeric_limits<float>::min();
// How far value_weights prefetches ahead: the engine's distance for the other attention loops
// (engine/forward_attention.cpp).
constexpr size_t kAheadBytes = 8192;

inline __mmask16 lane_mask(int64_t n) {
  return n >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << n) - 1u);
}

// Table word j = bf16((j & 15) - 8): the values -8 .. 7 are exact in BF16 (bits 0xC100 .. 0x40E0).
__m512i nibble_table() {
  alignas(64) static const uint16_t kTable[32] = {
      0xC100, 0xC0E0, 0xC0C0, 0xC0A0, 0xC080, 0xC040, 0xC000, 0xBF80, 0x0000, 0x3F80, 0x4000,
      0x4040, 0x4080, 0x40A0, 0x40C0, 0x40E0, 0xC100, 0xC0E0, 0xC0C0, 0xC0A0, 0xC080, 0xC040,
      0xC000, 0xBF80, 0x0000, 0x3F80, 0x4000, 0x4040, 0x4080, 0x40A0, 0x40C0, 0x40E0};
  return _mm512_load_si512(kTable);
}

// vpermt2b index: output word j takes byte j / 2 of row s (even j) or of row s + 1 (odd j, second
// source), in both of its bytes.
__m512i pair_index() {
  alignas(64) static const uint8_t kIndex[64] = {
      0,  0,  64, 64, 1,  1,  65, 65, 2,  2,  66, 66, 3,  3,  67, 67, 4,  4,  68, 68, 5,  5,
      69, 69, 6,  6,  70, 70, 7,  7,  71, 71, 8,  8,  72, 72, 9,  9,  73, 73, 10, 10, 74, 74,
      11, 11, 75, 75, 12, 12, 76, 76, 13, 13, 77, 77, 14, 14, 78, 78, 15, 15, 79, 79};
  return _mm512_load_si512(kIndex);
}

__m512 flush(__m512 x) {
  const __m512 mag = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7FFFFFFF)));
  const __mmask16 tiny = _mm512_cmp_ps_mask(mag, _mm512_set1_ps(kFltMin), _CMP_LT_OQ);  // false for NaN
  return _mm512_mask_mov_ps(x, tiny, _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x),
                                                                          _mm512_set1_epi32(static_cast<int>(0x80000000u)))));
}

// Block b of NH heads (h0 .. h0 + NH - 1 of g) over all cnt rows.
template <int NH>
void accumulate_block(const uint8_t* base, size_t row_bytes, int64_t cnt, int64_t b, const uint16_t* w, int64_t h0,
                      int64_t g, int64_t nb, float* out, int64_t out_stride) {
  const __m512i table = nibble_table(), index = pair_index();
  // The contract flushes the initial values; vdpbf16ps on Zen 5 treats a subnormal accumulator
  // as zero anyway (the flush test passes without this), the flush makes it so everywhere.
  __m512 acc[NH][2];
  EDGELLM_UNROLL
  for (int h = 0; h < NH; ++h) {
    acc[h][0] = flush(_mm512_loadu_ps(out + h * out_stride + b * 32));
    acc[h][1] = flush(_mm512_loadu_ps(out + h * out_stride + b * 32 + 16));
  }
  const size_t qs_off = static_cast<size_t>(b) * sizeof(BlockQ4_0) + offsetof(BlockQ4_0, qs);
  const int64_t tile_values = 16 * g * nb;
  // Weights of rows s, s + 1 (s even) for head h of this pass: one dword.
  const auto pair_at = [&](int h, int64_t s) {
    uint32_t pair;
    std::memcpy(&pair, w + (s / 16) * tile_values + ((h0 + h) * nb + b) * 16 + s % 16, sizeof pair);
    return pair;
  };
  const auto step = [&](const uint8_t* r0, __m512i second, int64_t s, uint32_t keep) {
    const __m512i first = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r0)));
    const __m512i words = _mm512_permutex2var_epi8(first, index, second);
    const __m512bh lo = (__m512bh)_mm512_permutexvar_epi16(words, table);
    const __m512bh hi = (__m512bh)_mm512_permutexvar_epi16(_mm512_srli_epi16(words, 4), table);
    EDGELLM_UNROLL
    for (int h = 0; h < NH; ++h) {
      const __m512bh wt = (__m512bh)_mm512_set1_epi32(static_cast<int>(pair_at(h, s) & keep));
      acc[h][0] = _mm512_dpbf16_ps(acc[h][0], lo, wt);
      acc[h][1] = _mm512_dpbf16_ps(acc[h][1], hi, wt);
    }
  };
  int64_t s = 0;
  for (; s + 2 <= cnt; s += 2) {
    const uint8_t* r0 = base + static_cast<size_t>(s) * row_bytes + qs_off;
    step(r0, _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r0 + row_bytes))), s,
         0xFFFFFFFFu);
  }
  if (s < cnt) {  // odd cnt: the missing row's codes are 8 (value 0) and its weight 0 (not read)
    const uint8_t* r0 = base + static_cast<size_t>(s) * row_bytes + qs_off;
    step(r0, _mm512_set1_epi8(static_cast<char>(0x88)), s, 0x0000FFFFu);
  }
  EDGELLM_UNROLL
  for (int h = 0; h < NH; ++h) {
    _mm512_storeu_ps(out + h * out_stride + b * 32, acc[h][0]);
    _mm512_storeu_ps(out + h * out_stride + b * 32 + 16, acc[h][1]);
  }
}

}  // namespace

void value_weights_q4_0(const void* v, size_t rb, int64_t cnt, int64_t hd, const float* p, int64_t ps, int64_t g,
                        uint16_t* w) {
  const auto* base = static_cast<const uint8_t*>(v);
  const int64_t nb = hd / 32;
  const __m512i rows = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                          _mm512_set1_epi32(static_cast<int>(rb)));
  for (int64_t s0 = 0; s0 < cnt; s0 += 16) {
    const __mmask16 m = lane_mask(cnt - s0);
    const uint8_t* tile = base + static_cast<size_t>(s0) * rb;
    uint16_t* dst = w + s0 * g * nb;  // this tile's [g * nb][16] weights
    // This is the first pass over the rows: fetch the tile kAheadBytes on so the gathers below
    // find their rows in cache. A hint, harmless past the rows (the address is made as an
    // integer, never a pointer past the object). Unlike the engine's for_runs it does not look
    // into the next run of blocks: a call covers at most 256 rows of one run.
    const uintptr_t ahead = reinterpret_cast<uintptr_t>(tile) + kAheadBytes;
    for (size_t off = 0; off < 16 * rb; off += 64) __builtin_prefetch(reinterpret_cast<const void*>(ahead + off), 0, 3);
    // Blocks in groups of up to 4: their scales gathered once (the dword at each row's block b
    // starts with its F16 scale), then each head's 16 probabilities loaded once for all of them.
    for (int64_t b0 = 0; b0 < nb; b0 += 4) {
      const int64_t nbg = nb - b0 < 4 ? nb - b0 : 4;
      __m512 d[4];
      for (int64_t j = 0; j < nbg; ++j) {
        const __m512i raw = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, rows,
                                                        tile + static_cast<size_t>(b0 + j) * sizeof(BlockQ4_0), 1);
        d[j] = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(raw));
      }
      for (int64_t h = 0; h < g; ++h) {
        const __m512 ph = _mm512_maskz_loadu_ps(m, p + h * ps + s0);
        for (int64_t j = 0; j < nbg; ++j) {
          const __m512 x = _mm512_mul_ps(ph, d[j]);
          const __mmask16 tiny = _mm512_cmp_ps_mask(
              _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7FFFFFFF))),
              _mm512_set1_ps(kFltMin), _CMP_LT_OQ);  // false for NaN
          // Lanes past cnt hold 0; the tile has room for all 16 (masked stores are slow on AMD).
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + (h * nb + b0 + j) * 16),
                              (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_mov_ps(static_cast<__mmask16>(~tiny), x)));
        }
      }
    }
  }
}

void accumulate_weighted_q4_0(const void* v, size_t rb, int64_t cnt, int64_t hd, const uint16_t* w, int64_t g,
                              float* out, int64_t os) {
  const auto* base = static_cast<const uint8_t*>(v);
  const int64_t nb = hd / 32;
  attention::for_head_groups(g, [&](auto nh, int64_t h0) {
    constexpr int NH = decltype(nh)::kValue;
    for (int64_t b = 0; b < nb; ++b) accumulate_block<NH>(base, rb, cnt, b, w, h0, g, nb, out + h0 * os, os);
  });
}

}  // namespace edgellm::kernels::attention_avx512_bf16
