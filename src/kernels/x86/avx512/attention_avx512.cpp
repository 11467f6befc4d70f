// AVX-512 attention kernels (kernels/attention.h) over KV rows in their stored type.
//
// Scores: 16 rows at a time. For each 16-element chunk of the head dimension the 16 row chunks
// [16 rows, 16 dims] are widened to F32 (F16: vcvtph2ps; Q8_0: int8 -> int32 -> float times the
// block scale) and transposed in registers, so register i holds element i of all 16 rows. Each
// query element is then broadcast and multiply-added into one accumulator per head whose lanes
// are the 16 rows: no horizontal sums, and each row chunk is loaded and widened once for all the
// heads of the group (up to 8 accumulators; more heads run as further groups). With one or two
// heads the transpose costs more than it saves: those keep one accumulator per (row, head) and
// fold 8 of them at a time into scores (sum8).
//
// Accumulate: for a few 16-element chunks of the head dimension at a time the accumulators of
// every head [heads, chunks] stay in registers over all rows; each row chunk is widened once
// and multiply-added with the broadcast probability of every head.
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

#include "kernels/attention_head_groups.h"
#include "kernels/attention_impl.h"
#include "kernels/blocks.h"

namespace edgellm::kernels::attention_avx512 {
namespace {

// Fully unroll the loops over heads, chunks and transpose rows (compile-time bounds) so the
// accumulator arrays become registers; GCC otherwise keeps a stack copy updated every row.
#define EDGELLM_UNROLL _Pragma("GCC unroll 16")

constexpr int64_t kLanes = 16;

inline __mmask16 lane_mask(int64_t n) {
  return n >= kLanes ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << n) - 1u);
}

// Chunk c (elements [16c, 16c + 16), lanes beyond the row masked to 0) of a row, as 16 floats.
struct F32Rows {
  static __m512 load(const uint8_t* row, int64_t c, __mmask16 m) {
    return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(row) + c * kLanes);
  }
};
struct F16Rows {
  static __m512 load(const uint8_t* row, int64_t c, __mmask16 m) {
    const __m256i h = _mm256_maskz_loadu_epi16(m, reinterpret_cast<const uint16_t*>(row) + c * kLanes);
    return _mm512_maskz_cvtph_ps(0xFFFF, h);
  }
};
// Q8_0 rows are whole blocks (head_dim a multiple of 32): chunk c is half c % 2 of block c / 2.
// d * q in F32, exactly as dequantize_row computes it.
struct Q8_0Rows {
  static __m512 load(const uint8_t* row, int64_t c, __mmask16) {
    const BlockQ8_0* b = reinterpret_cast<const BlockQ8_0*>(row) + (c >> 1);
    const __m128i q8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->qs + kLanes * (c & 1)));
    return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q8)), _mm512_set1_ps(_cvtsh_ss(b->d)));
  }
};
// Q4_0 rows are whole blocks too: chunk c is half c % 2 of block c / 2, i.e. the low (half 0) or
// high (half 1) nibbles of the block's 16 bytes. (nibble - 8) * d in F32, as dequantize_row does.
// The 16 possible values d * (n - 8) form a one-register table (each exact in F32: an F16
// scale times a 4-bit integer), and vpermps looks every nibble up in it (it reads only the low 4
// bits of each index, so the high nibble needs no mask): 4 instructions per chunk after the
// table instead of 7 for mask / offset / two conversions / scale.
struct Q4_0Rows {
  static __m512 load(const uint8_t* row, int64_t c, __mmask16) {
    const BlockQ4_0* b = reinterpret_cast<const BlockQ4_0*>(row) + (c >> 1);
    __m128i q4 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->qs));
    if ((c & 1) != 0) q4 = _mm_srli_epi16(q4, 4);
    const __m512 codes = _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
    const __m512 table = _mm512_mul_ps(codes, _mm512_set1_ps(_cvtsh_ss(b->d)));
    return _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(q4), table);
  }
};

// In-place 16x16 transpose: r[j] lane i -> r[i] lane j. Stages: 2x2 blocks of floats (unpack ps),
// then of float pairs (unpack pd) inside each 128-bit lane, then the 4x4 grid of 128-bit lanes
// (two rounds of shuffle_f32x4).
inline void transpose16(__m512 r[16]) {
  __m512 t[16];
  EDGELLM_UNROLL
  for (int j = 0; j < 16; j += 2) {
    t[j] = _mm512_unpacklo_ps(r[j], r[j + 1]);      // lane-local rows j, j+1: elements 0, 1
    t[j + 1] = _mm512_unpackhi_ps(r[j], r[j + 1]);  // elements 2, 3
  }
  // u[4G + e]: rows 4G..4G+3 of element e of each 128-bit lane.
  __m512 u[16];
  EDGELLM_UNROLL
  for (int G = 0; G < 4; ++G) {
    const __m512d lo01 = _mm512_castps_pd(t[4 * G]), hi01 = _mm512_castps_pd(t[4 * G + 1]);
    const __m512d lo23 = _mm512_castps_pd(t[4 * G + 2]), hi23 = _mm512_castps_pd(t[4 * G + 3]);
    u[4 * G + 0] = _mm512_castpd_ps(_mm512_unpacklo_pd(lo01, lo23));
    u[4 * G + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(lo01, lo23));
    u[4 * G + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(hi01, hi23));
    u[4 * G + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(hi01, hi23));
  }
  EDGELLM_UNROLL
  for (int e = 0; e < 4; ++e) {
    // a/b: row groups 0,1; c/d: row groups 2,3 (128-bit lanes 0,2 / 1,3 of each).
    const __m512 a = _mm512_shuffle_f32x4(u[e], u[4 + e], _MM_SHUFFLE(2, 0, 2, 0));
    const __m512 b = _mm512_shuffle_f32x4(u[e], u[4 + e], _MM_SHUFFLE(3, 1, 3, 1));
    const __m512 c = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], _MM_SHUFFLE(2, 0, 2, 0));
    const __m512 d = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], _MM_SHUFFLE(3, 1, 3, 1));
    r[e] = _mm512_shuffle_f32x4(a, c, _MM_SHUFFLE(2, 0, 2, 0));
    r[8 + e] = _mm512_shuffle_f32x4(a, c, _MM_SHUFFLE(3, 1, 3, 1));
    r[4 + e] = _mm512_shuffle_f32x4(b, d, _MM_SHUFFLE(2, 0, 2, 0));
    r[12 + e] = _mm512_shuffle_f32x4(b, d, _MM_SHUFFLE(3, 1, 3, 1));
  }
}

// Chunk c of rows 0 .. nr-1 (all 16 when Full) widened into r[0..15], then transposed: r[i] lane
// j = element 16c + i of row j. Rows past nr are zero.
template <class Rows, bool Full>
EDGELLM_ALWAYS_INLINE void load_transposed_chunk(const uint8_t* base, size_t row_bytes, int64_t nr, int64_t c,
                                                 __mmask16 m, __m512 r[16]) {
  EDGELLM_UNROLL
  for (int j = 0; j < 16; ++j) {
    if (Full || j < nr) {
      r[j] = Rows::load(base + static_cast<size_t>(j) * row_bytes, c, m);
    } else {
      r[j] = _mm512_setzero_ps();
    }
  }
  transpose16(r);
}

// Independent accumulators per head so at least ~8 FMA chains are in flight (FMA latency 4,
// two per cycle) without exceeding the 32 registers (16 hold the transposed rows).
constexpr int partials_for(int nh) {
  return nh == 1 ? 8 : nh == 2 ? 4 : nh == 3 ? 3 : nh <= 6 ? 2 : 1;
}

// Query rows are repacked per call as [chunk][head][16] floats so that every broadcast in the
// inner loop is a constant offset from one base register (NH strided row pointers would spill
// general registers). Head dims above this use the rows in place.
constexpr int64_t kMaxPackedHd = 256;

// Element (h, c, i) of the query rows, i.e. q_h[16c + i]: packed (constant strides) or in place.
template <int NH, bool Packed>
struct QueryView {
  const float* base;
  int64_t q_stride;  // in-place only
  const float* at(int64_t c, int h) const {
    return Packed ? base + (c * NH + h) * kLanes : base + h * q_stride + c * kLanes;
  }
};

// Q4_0 rows, chunk c (blocks 2c and 2c + 1, the second zero when !pair), transposed straight from
// the packed nibbles: the 16 code bytes of each block are 4 dwords, so a row's chunk is 8 dwords,
// half of the 16 dwords a row widened to its 64 code bytes would take. Register j (j < 8) takes rows j and
// j + 8: 128-bit lanes [block 2c of row j, block 2c + 1 of row j, the same of row j + 8]. Two
// unpack stages and one vpermt2q per output give T[k] (k < 8) with lane m = code dword k of row
// m; its low nibbles are dims 4k' .. 4k' + 3 of its block (k' = k % 4) and its high nibbles dims
// 16 + 4k' .., which is r[] as scores_q8_block expects it (r[i] lane m = dims 4i .. 4i + 3 of row
// m, i < 8 block 2c, i >= 8 block 2c + 1): 24 inserts and 24 shuffles per 16 rows where widening
// each row (16 inserts, 16 variable shifts) and transpose16 took 64 shuffles more.
template <bool Full>
EDGELLM_ALWAYS_INLINE void transposed_q4_0_codes(const uint8_t* base, size_t row_bytes, int64_t nr, int64_t c,
                                                  bool pair, __m512i r[16]) {
  const auto qs = [&](int64_t j, int64_t blk) -> __m128i {
    if ((!Full && j >= nr) || (blk == 1 && !pair)) return _mm_setzero_si128();
    const BlockQ4_0* b = reinterpret_cast<const BlockQ4_0*>(base + static_cast<size_t>(j) * row_bytes) + 2 * c + blk;
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->qs));
  };
  __m512i z[8];
  EDGELLM_UNROLL
  for (int j = 0; j < 8; ++j) {
    z[j] = _mm512_castsi128_si512(qs(j, 0));
    z[j] = _mm512_inserti32x4(z[j], qs(j, 1), 1);
    z[j] = _mm512_inserti32x4(z[j], qs(j + 8, 0), 2);
    z[j] = _mm512_inserti32x4(z[j], qs(j + 8, 1), 3);
  }
  // a[2p], a[2p + 1]: per 128-bit lane, dwords (0, 1) and (2, 3) of z[2p] and z[2p + 1] interleaved.
  __m512i a[8];
  EDGELLM_UNROLL
  for (int p = 0; p < 4; ++p) {
    a[2 * p] = _mm512_unpacklo_epi32(z[2 * p], z[2 * p + 1]);
    a[2 * p + 1] = _mm512_unpackhi_epi32(z[2 * p], z[2 * p + 1]);
  }
  // b[e][G]: per 128-bit lane, dword e of that lane in rows 4G .. 4G + 3 (lanes: block 2c of rows
  // 0-7 group, block 2c + 1 of them, block 2c of rows 8-15 group, block 2c + 1 of them).
  __m512i b[4][2];
  EDGELLM_UNROLL
  for (int G = 0; G < 2; ++G) {
    b[0][G] = _mm512_unpacklo_epi64(a[4 * G], a[4 * G + 2]);
    b[1][G] = _mm512_unpackhi_epi64(a[4 * G], a[4 * G + 2]);
    b[2][G] = _mm512_unpacklo_epi64(a[4 * G + 1], a[4 * G + 3]);
    b[3][G] = _mm512_unpackhi_epi64(a[4 * G + 1], a[4 * G + 3]);
  }
  // T[e] = [lane 0 of b[e][0], lane 0 of b[e][1], lane 2 of b[e][0], lane 2 of b[e][1]] (rows 0-3,
  // 4-7, 8-11, 12-15 of code dword e); T[4 + e] the same from lanes 1 and 3.
  const __m512i first = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13), second = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  EDGELLM_UNROLL
  for (int e = 0; e < 4; ++e) {
    const __m512i t0 = _mm512_permutex2var_epi64(b[e][0], first, b[e][1]);
    const __m512i t1 = _mm512_permutex2var_epi64(b[e][0], second, b[e][1]);
    r[e] = _mm512_and_si512(t0, low4);
    r[4 + e] = _mm512_and_si512(_mm512_srli_epi16(t0, 4), low4);
    r[8 + e] = _mm512_and_si512(t1, low4);
    r[12 + e] = _mm512_and_si512(_mm512_srli_epi16(t1, 4), low4);
  }
}

// Scores of nr <= 16 rows (Full: nr == 16) for NH heads.
template <class Rows, int NH, bool Full, bool Packed>
void scores_block(const uint8_t* base, size_t row_bytes, int64_t nr, int64_t hd, QueryView<NH, Packed> q, float scale,
                  float* out, int64_t out_stride) {
  constexpr int P = partials_for(NH);
  __m512 acc[NH][P];
  EDGELLM_UNROLL
  for (int h = 0; h < NH; ++h) {
    EDGELLM_UNROLL
    for (int k = 0; k < P; ++k) acc[h][k] = _mm512_setzero_ps();
  }
  const int64_t n_chunks = (hd + kLanes - 1) / kLanes;
  for (int64_t c = 0; c < n_chunks; ++c) {
    const int64_t width = hd - c * kLanes < kLanes ? hd - c * kLanes : kLanes;
    const __mmask16 m = lane_mask(width);
    __m512 r[16];
    load_transposed_chunk<Rows, Full>(base, row_bytes, nr, c, m, r);
    if (width == kLanes) {
      EDGELLM_UNROLL
      for (int i = 0; i < 16; ++i) {
        EDGELLM_UNROLL
        for (int h = 0; h < NH; ++h) {
          acc[h][i % P] = _mm512_fmadd_ps(r[i], _mm512_set1_ps(q.at(c, h)[i]), acc[h][i % P]);
        }
      }
    } else {
      for (int i = 0; i < width; ++i) {
        EDGELLM_UNROLL
        for (int h = 0; h < NH; ++h) acc[h][0] = _mm512_fmadd_ps(r[i], _mm512_set1_ps(q.at(c, h)[i]), acc[h][0]);
      }
    }
  }
  const __mmask16 store = lane_mask(nr);
  const __m512 vscale = _mm512_set1_ps(scale);
  EDGELLM_UNROLL
  for (int h = 0; h < NH; ++h) {
    __m512 s = acc[h][0];
    EDGELLM_UNROLL
    for (int k = 1; k < P; ++k) s = _mm512_add_ps(s, acc[h][k]);
    _mm512_mask_storeu_ps(out + h * out_stride, store, _mm512_mul_ps(s, vscale));
  }
}

template <class Rows, int NH, bool Packed>
void scores_rows(const uint8_t* base, size_t row_bytes, int64_t cnt, int64_t hd, QueryView<NH, Packed> q, float scale,
                 float* out, int64_t out_stride) {
  int64_t s0 = 0;
  for (; s0 + 16 <= cnt; s0 += 16) {
    scores_block<Rows, NH, true>(base + static_cast<size_t>(s0) * row_bytes, row_bytes, 16, hd, q, scale, out + s0,
                                 out_stride);
  }
  if (s0 < cnt) {
    scores_block<Rows, NH, false>(base + static_cast<size_t>(s0) * row_bytes, row_bytes, cnt - s0, hd, q, scale,
                                  out + s0, out_stride);
  }
}

// Sums of 8 vectors: lane j of the result (j < 8) is the sum of the 16 lanes of a[j]. Halves,
// then quarters are folded with 128-bit lane shuffles, the last 4 floats in-lane; 24 operations.
inline __m512 sum8(const __m512 a[8]) {
  __m512 s[4];  // s[k]: 256-bit halves hold partial sums of rows 2k, 2k+1
  EDGELLM_UNROLL
  for (int k = 0; k < 4; ++k) {
    s[k] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * k], a[2 * k + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_f32x4(a[2 * k], a[2 * k + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  }
  // t0: 128-bit lane L holds 4 partial sums of row L; t1 of row 4 + L.
  const __m512 t0 = _mm512_add_ps(_mm512_shuffle_f32x4(s[0], s[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                  _mm512_shuffle_f32x4(s[0], s[1], _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512 t1 = _mm512_add_ps(_mm512_shuffle_f32x4(s[2], s[3], _MM_SHUFFLE(2, 0, 2, 0)),
                                  _mm512_shuffle_f32x4(s[2], s[3], _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512 u = _mm512_add_ps(_mm512_unpacklo_ps(t0, t1), _mm512_unpackhi_ps(t0, t1));
  const __m512 w = _mm512_add_ps(u, _mm512_shuffle_ps(u, u, _MM_SHUFFLE(1, 0, 3, 2)));
  // w: lane 4L = row L, lane 4L + 1 = row 4 + L.
  return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 0, 0, 0, 0, 0, 0, 0), w);
}

// Few heads (NH <= 2): a transpose would cost more shuffles than it saves, so each of 8 rows
// gets one accumulator per head over the chunks (row chunk widened once, used by both heads)
// and sum8 folds them into scores.
template <class Rows, int NH>
void scores_rowdot(const uint8_t* base, size_t row_bytes, int64_t cnt, int64_t hd, const float* q, int64_t q_stride,
                   float scale, float* out, int64_t out_stride) {
  const int64_t n_chunks = (hd + kLanes - 1) / kLanes;
  const __m512 vscale = _mm512_set1_ps(scale);
  for (int64_t s0 = 0; s0 < cnt; s0 += 8) {
    const int64_t nr = cnt - s0 < 8 ? cnt - s0 : 8;
    const uint8_t* rows = base + static_cast<size_t>(s0) * row_bytes;
    __m512 acc[NH][8];
    EDGELLM_UNROLL
    for (int h = 0; h < NH; ++h) {
      EDGELLM_UNROLL
      for (int j = 0; j < 8; ++j) acc[h][j] = _mm512_setzero_ps();
    }
    for (int64_t c = 0; c < n_chunks; ++c) {
      const __mmask16 m = lane_mask(hd - c * kLanes);
      __m512 qc[NH];
      EDGELLM_UNROLL
      for (int h = 0; h < NH; ++h) qc[h] = _mm512_maskz_loadu_ps(m, q + h * q_stride + c * kLanes);
      EDGELLM_UNROLL
      for (int j = 0; j < 8; ++j) {
        if (j < nr) {
          const __m512 k = Rows::load(rows + static_cast<size_t>(j) * row_bytes, c, m);
          EDGELLM_UNROLL
          for (int h = 0; h < NH; ++h) acc[h][j] = _mm512_fmadd_ps(k, qc[h], acc[h][j]);
        }
      }
    }
    EDGELLM_UNROLL
    for (int h = 0; h < NH; ++h) {
      _mm512_mask_storeu_ps(out + h * out_stride + s0, lane_mask(nr), _mm512_mul_ps(sum8(acc[h]), vscale));
    }
  }
}

template <class Rows, int NH>
void scores_heads(const uint8_t* base, size_t row_bytes, int64_t cnt, int64_t hd, const float* q, int64_t q_stride,
                  float scale, float* out, int64_t out_stride) {
  if constexpr (NH <= 2) {
    scores_rowdot<Rows, NH>(base, row_bytes, cnt, hd, q, q_stride, scale, out, out_stride);
    return;
  }
  if (hd > kMaxPackedHd) {
    scores_rows<Rows, NH, false>(base, row_bytes, cnt, hd, QueryView<NH, false>{q, q_stride}, scale, out, out_stride);
    return;
  }
  alignas(64) float packed[NH * kMaxPackedHd];
  const int64_t n_chunks = (hd + kLanes - 1) / kLanes;
  for (int64_t c = 0; c < n_chunks; ++c) {
    const __mmask16 m = lane_mask(hd - c * kLanes);
    EDGELLM_UNROLL
    for (int h = 0; h < NH; ++h) {
      _mm512_store_ps(packed + (c * NH + h) * kLanes, _mm512_maskz_loadu_ps(m, q + h * q_stride + c * kLanes));
    }
  }
  scores_rows<Rows, NH, true>(base, row_bytes, cnt, hd, QueryView<NH, true>{packed, 0}, scale, out, out_stride);
}

template <class Rows>
void scores(const void* k_rows, size_t row_bytes, int64_t cnt, int64_t hd, const float* q, int64_t q_stride, int64_t g,
            float scale, float* out, int64_t out_stride) {
  const auto* base = static_cast<const uint8_t*>(k_rows);
  attention::for_head_groups(g, [&](auto nh, int64_t h0) {
    scores_heads<Rows, decltype(nh)::kValue>(base, row_bytes, cnt, hd, q + h0 * q_stride, q_stride, scale,
                                             out + h0 * out_stride, out_stride);
  });
}

// Scores against an int8 query (AttentionScoresQ8Fn). Per 64-value chunk (K blocks 2c and
// 2c + 1) the 16 rows' values as unsigned bytes (Q8_0: value + 128; Q4_0: the nibble, i.e.
// value + 8) are transposed to 16 registers: register i lane j = values 4i .. 4i+3 of row j
// (Bytes::transposed: Q8_0 loads each row's 64 bytes and transposes 16 x 16 dwords; Q4_0
// transposes its packed nibbles, transposed_q4_0_codes).
// Per head, vpdpbusd with query dword i broadcast adds those 4 products into row j's lane; 8 of
// them cover a block. The start value -offset * q.sum cancels the offset, so each lane holds the
// exact isum of the definition in kernels/attention.h, and the F32 steps are the scalar twin's.
// Per 16 rows and 7 heads: one transpose and 7 x 16 vpdpbusd, against the F32 path's four
// transposes, 64 widenings and 7 x 64 FMAs.
struct Q8_0Bytes {
  static constexpr int32_t kOffset = 128;
  static constexpr size_t kBlockBytes = sizeof(BlockQ8_0);
  // Chunk c of rows 0 .. nr-1 (all 16 when Full; the other rows, and block 2c + 1 when !pair,
  // are zero), as r[] of scores_q8_block.
  template <bool Full>
  EDGELLM_ALWAYS_INLINE static void transposed(const uint8_t* base, size_t row_bytes, int64_t nr, int64_t c,
                                               bool pair, __m512i r[16]) {
    __m512 rf[16];
    EDGELLM_UNROLL
    for (int j = 0; j < 16; ++j) {
      if (!Full && j >= nr) {
        rf[j] = _mm512_setzero_ps();
        continue;
      }
      const BlockQ8_0* b = reinterpret_cast<const BlockQ8_0*>(base + static_cast<size_t>(j) * row_bytes) + 2 * c;
      const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[0].qs));
      const __m256i hi = pair ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[1].qs)) : _mm256_setzero_si256();
      rf[j] = _mm512_castsi512_ps(
          _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1), _mm512_set1_epi8(-128)));
    }
    transpose16(rf);
    EDGELLM_UNROLL
    for (int j = 0; j < 16; ++j) r[j] = _mm512_castps_si512(rf[j]);
  }
};
struct Q4_0Bytes {
  static constexpr int32_t kOffset = 8;
  static constexpr size_t kBlockBytes = sizeof(BlockQ4_0);
  template <bool Full>
  EDGELLM_ALWAYS_INLINE static void transposed(const uint8_t* base, size_t row_bytes, int64_t nr, int64_t c,
                                               bool pair, __m512i r[16]) {
    transposed_q4_0_codes<Full>(base, row_bytes, nr, c, pair, r);
  }
};

inline __m512i broadcast_dword(const int8_t* p) {
  int32_t w;
  __builtin_memcpy(&w, p, sizeof w);
  return _mm512_set1_epi32(w);
}

// Scores of nr <= 16 rows (Full: nr == 16) for NH heads.
template <class Bytes, int NH, bool Full>
void scores_q8_block(const uint8_t* base, size_t row_bytes, int64_t nr, int64_t hd, const QueryBlockQ8* q,
                     int64_t q_stride, float* out, int64_t out_stride) {
  __m512 acc[NH];
  EDGELLM_UNROLL
  for (int h = 0; h < NH; ++h) acc[h] = _mm512_setzero_ps();
  const int64_t nb = hd / 32;
  // The blocks' scales of the 16 rows by masked dword gathers (the F16 scale is the low half of
  // the dword at each block's start): 14.8 instead of 16.2 us per 4096 Q4_0 rows (with the
  // transposed nibbles) against 32 scalar loads through a stack array.
  const __mmask16 rows = Full ? static_cast<__mmask16>(0xFFFF) : lane_mask(nr);
  const __m512i offs = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                          _mm512_set1_epi32(static_cast<int>(row_bytes)));
  const auto scales = [&](int64_t block) {
    const uint8_t* at = base + static_cast<size_t>(block) * Bytes::kBlockBytes;
    return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_mask_i32gather_epi32(_mm512_setzero_si512(), rows, offs, at, 1)));
  };
  for (int64_t c = 0; 2 * c < nb; ++c) {
    const bool pair = 2 * c + 1 < nb;
    const __m512 k0 = scales(2 * c);
    const __m512 k1 = pair ? scales(2 * c + 1) : _mm512_setzero_ps();
    __m512i r[16];
    Bytes::template transposed<Full>(base, row_bytes, nr, c, pair, r);
    EDGELLM_UNROLL
    for (int h = 0; h < NH; ++h) {
      const QueryBlockQ8* qb = q + h * q_stride + 2 * c;
      __m512i s0 = _mm512_set1_epi32(-Bytes::kOffset * qb[0].sum);
      EDGELLM_UNROLL
      for (int i = 0; i < 8; ++i) s0 = _mm512_dpbusd_epi32(s0, r[i], broadcast_dword(qb[0].qs + 4 * i));
      acc[h] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s0), _mm512_mul_ps(k0, _mm512_set1_ps(qb[0].d)), acc[h]);
      if (pair) {
        __m512i s1 = _mm512_set1_epi32(-Bytes::kOffset * qb[1].sum);
        EDGELLM_UNROLL
        for (int i = 0; i < 8; ++i) s1 = _mm512_dpbusd_epi32(s1, r[8 + i], broadcast_dword(qb[1].qs + 4 * i));
        acc[h] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s1), _mm512_mul_ps(k1, _mm512_set1_ps(qb[1].d)), acc[h]);
      }
    }
  }
  const __mmask16 store = lane_mask(nr);
  EDGELLM_UNROLL
  for (int h = 0; h < NH; ++h) _mm512_mask_storeu_ps(out + h * out_stride, store, acc[h]);
}

template <class Bytes>
void scores_q8(const void* k_rows, size_t row_bytes, int64_t cnt, int64_t hd, const QueryBlockQ8* q, int64_t q_stride,
               int64_t g, float* out, int64_t out_stride) {
  const auto* base = static_cast<const uint8_t*>(k_rows);
  attention::for_head_groups(g, [&](auto nh, int64_t h0) {
    constexpr int NH = decltype(nh)::kValue;
    const QueryBlockQ8* qh = q + h0 * q_stride;
    float* oh = out + h0 * out_stride;
    int64_t s0 = 0;
    for (; s0 + 16 <= cnt; s0 += 16) {
      scores_q8_block<Bytes, NH, true>(base + static_cast<size_t>(s0) * row_bytes, row_bytes, 16, hd, qh, q_stride,
                                       oh + s0, out_stride);
    }
    if (s0 < cnt) {
      scores_q8_block<Bytes, NH, false>(base + static_cast<size_t>(s0) * row_bytes, row_bytes, cnt - s0, hd, qh,
                                        q_stride, oh + s0, out_stride);
    }
  });
}

// out[h][chunks c0 .. c0+CH) += sum_s p[h][s] * v_s[those chunks], NH heads; the NH x CH
// accumulators stay in registers over all cnt rows.
template <class Rows, int NH, int CH>
void accumulate_chunks(const uint8_t* base, size_t row_bytes, int64_t cnt, int64_t c0, int64_t hd, const float* p,
                       int64_t p_stride, float* out, int64_t out_stride) {
  __mmask16 m[CH];
  __m512 acc[NH][CH];
  EDGELLM_UNROLL
  for (int k = 0; k < CH; ++k) m[k] = lane_mask(hd - (c0 + k) * kLanes);
  EDGELLM_UNROLL
  for (int h = 0; h < NH; ++h) {
    EDGELLM_UNROLL
    for (int k = 0; k < CH; ++k) acc[h][k] = _mm512_maskz_loadu_ps(m[k], out + h * out_stride + (c0 + k) * kLanes);
  }
  for (int64_t s = 0; s < cnt; ++s) {
    const uint8_t* row = base + static_cast<size_t>(s) * row_bytes;
    __m512 v[CH];
    EDGELLM_UNROLL
    for (int k = 0; k < CH; ++k) v[k] = Rows::load(row, c0 + k, m[k]);
    EDGELLM_UNROLL
    for (int h = 0; h < NH; ++h) {
      const __m512 w = _mm512_set1_ps(p[h * p_stride + s]);
      EDGELLM_UNROLL
      for (int k = 0; k < CH; ++k) acc[h][k] = _mm512_fmadd_ps(w, v[k], acc[h][k]);
    }
  }
  EDGELLM_UNROLL
  for (int h = 0; h < NH; ++h) {
    EDGELLM_UNROLL
    for (int k = 0; k < CH; ++k) _mm512_mask_storeu_ps(out + h * out_stride + (c0 + k) * kLanes, m[k], acc[h][k]);
  }
}

// Chunks per pass: NH * CH accumulators + CH widened rows within the 32 registers, and enough
// independent chains for the FMA latency when there are few heads.
constexpr int chunks_for(int nh) {
  return nh <= 5 ? 4 : 2;
}

template <class Rows, int NH>
void accumulate_heads(const uint8_t* base, size_t row_bytes, int64_t cnt, int64_t hd, const float* p, int64_t p_stride,
                      float* out, int64_t out_stride) {
  constexpr int CH = chunks_for(NH);
  const int64_t n_chunks = (hd + kLanes - 1) / kLanes;
  int64_t c0 = 0;
  for (; c0 + CH <= n_chunks; c0 += CH) {
    accumulate_chunks<Rows, NH, CH>(base, row_bytes, cnt, c0, hd, p, p_stride, out, out_stride);
  }
  switch (n_chunks - c0) {
    case 0: break;
    case 1: accumulate_chunks<Rows, NH, 1>(base, row_bytes, cnt, c0, hd, p, p_stride, out, out_stride); break;
    case 2: accumulate_chunks<Rows, NH, 2>(base, row_bytes, cnt, c0, hd, p, p_stride, out, out_stride); break;
    default: accumulate_chunks<Rows, NH, 3>(base, row_bytes, cnt, c0, hd, p, p_stride, out, out_stride); break;
  }
}

template <class Rows>
void accumulate(const void* v_rows, size_t row_bytes, int64_t cnt, int64_t hd, const float* p, int64_t p_stride,
                int64_t g, float* out, int64_t out_stride) {
  const auto* base = static_cast<const uint8_t*>(v_rows);
  attention::for_head_groups(g, [&](auto nh, int64_t h0) {
    accumulate_heads<Rows, decltype(nh)::kValue>(base, row_bytes, cnt, hd, p + h0 * p_stride, p_stride,
                                                 out + h0 * out_stride, out_stride);
  });
}

// K^T tile for prefill (attention.h): per 16 rows x 16 dims, the row chunks are widened and
// transposed in registers (as in scores_block), then register i is stored as dims 16c + i of
// those 16 rows. Rows past cnt and dims past hd are masked off the stores.
template <class Rows>
void widen_transposed(const void* k_rows, size_t row_bytes, int64_t cnt, int64_t hd, float* kt, int64_t kt_stride) {
  const auto* base = static_cast<const uint8_t*>(k_rows);
  const int64_t n_chunks = (hd + kLanes - 1) / kLanes;
  for (int64_t s0 = 0; s0 < cnt; s0 += 16) {
    const int64_t nr = cnt - s0 < 16 ? cnt - s0 : 16;
    const __mmask16 rows_mask = lane_mask(nr);
    for (int64_t c = 0; c < n_chunks; ++c) {
      const int64_t width = hd - c * kLanes < kLanes ? hd - c * kLanes : kLanes;
      const __mmask16 m = lane_mask(width);
      __m512 r[16];
      load_transposed_chunk<Rows, false>(base + static_cast<size_t>(s0) * row_bytes, row_bytes, nr, c, m, r);
      EDGELLM_UNROLL
      for (int i = 0; i < 16; ++i) {
        if (i < width) _mm512_mask_storeu_ps(kt + (c * kLanes + i) * kt_stride + s0, rows_mask, r[i]);
      }
    }
  }
}

}  // namespace

// scores_<type>, accumulate_<type> and widen_transposed_<type> of every row type (attention_impl.h).
EDGELLM_ATTENTION_ROW_TYPES(EDGELLM_ATTENTION_TRAMPOLINES)
EDGELLM_ATTENTION_ROW_TYPES(EDGELLM_ATTENTION_WIDEN_TRAMPOLINES)

void scores_q8_q8_0(const void* k, size_t rb, int64_t cnt, int64_t hd, const QueryBlockQ8* q, int64_t qs, int64_t g,
                    float* s, int64_t ss) {
  scores_q8<Q8_0Bytes>(k, rb, cnt, hd, q, qs, g, s, ss);
}
void scores_q8_q4_0(const void* k, size_t rb, int64_t cnt, int64_t hd, const QueryBlockQ8* q, int64_t qs, int64_t g,
                    float* s, int64_t ss) {
  scores_q8<Q4_0Bytes>(k, rb, cnt, hd, q, qs, g, s, ss);
}

}  // namespace edgellm::kernels::attention_avx512
