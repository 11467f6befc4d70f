// AVX2 matmul for the 16-row interleaved layouts Q4_0_X16, Q5_0_X16, Q4_K_X16, Q5_K_X16 and Q6_K_X16
// (kernels/repack.h). A 64-byte code vector of the layout is two YMM halves of 8 rows each; each
// half is a separate 8-row tile for prefill, while decode runs both halves in one pass over the
// weights (one core, Q4_0 / Q5_0 / Q4_K / Q6_K: 9.4 / 8.8 / 8.8 / 7.8 GB/s half by half,
// 13.4 / 12.7 / 11.9 / 12.7 GB/s in one pass). Without VNNI the 4-byte dot is vpmaddubsw (codes x
// broadcast activation bytes -> int16 pair sums) then vpmaddwd (-> int32). Four pair sums of
// 5-bit codes fit an int16 (4 * 2 * 31 * 127 = 31496), so for Q4_0 / Q5_0 / Q4_K vpmaddwd with
// ones runs once per four vpmaddubsw; 6-bit codes allow two (2 * 2 * 63 * 127 = 32004), and
// Q6_K's vpmaddwd multiplies by the sub-block scale instead of ones.
// Q8_0_X16 (codes w + 128 up to 255) would overflow vpmaddubsw's int16 pairs: it restores the
// signed w and multiplies |w| by the activations with w's sign (the sign trick).
#include <immintrin.h>

#include <cstring>

#include "kernels/blocks.h"
#include "kernels/packed_driver.h"
#include "kernels/repack.h"
#include "kernels/x86/avx2/avx2_kernels.h"
#include "kernels/x86/avx2/avx2_util.h"
#include "kernels/x86/packed_prefetch.h"

namespace edgellm::kernels::avx2 {
namespace {

inline __m256i bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// sum over 4 code vectors c[0..3] of c[k] . x[4k..4k+3] per int32 lane (8 rows).
inline __m256i dot4(const __m256i* c, const int8_t* x) {
  __m256i s = _mm256_maddubs_epi16(c[0], bcast4(x));
  s = _mm256_add_epi16(s, _mm256_maddubs_epi16(c[1], bcast4(x + 4)));
  s = _mm256_add_epi16(s, _mm256_maddubs_epi16(c[2], bcast4(x + 8)));
  s = _mm256_add_epi16(s, _mm256_maddubs_epi16(c[3], bcast4(x + 12)));
  return _mm256_madd_epi16(s, _mm256_set1_epi16(1));
}


// Moves bit `from` of every byte to bit `to` (the caller masks): a 16-bit shift by at most 4
// left or 3 right never brings a neighbour byte's bit into bits 4-5.
template <int kFrom, int kTo>
inline __m256i move_bits(__m256i v) {
  if constexpr (kFrom < kTo) return _mm256_slli_epi16(v, kTo - kFrom);
  else if constexpr (kFrom > kTo) return _mm256_srli_epi16(v, kFrom - kTo);
  else return v;
}

// Q5_0: bit J of every byte of `high` is the fifth bit of code vector J's element.
template <int J>
inline __m256i add_fifth_bit(__m256i codes, __m256i high, __m256i bit4) {
  return _mm256_or_si256(codes, _mm256_and_si256(move_bits<J, 4>(high), bit4));
}

// Q5_K_X16: bit j of every byte of `high` is the fifth bit of sub-block j's code (j < 8 known
// only at run time: a 16-bit shift by at most 4 left or 3 right, as move_bits).
inline __m256i add_fifth_bit_k(__m256i codes, const uint8_t* high, int j, __m256i bit4) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(high));
  const __m256i moved = j <= 4 ? _mm256_sll_epi16(h, _mm_cvtsi32_si128(4 - j)) : _mm256_srl_epi16(h, _mm_cvtsi32_si128(j - 4));
  return _mm256_or_si256(codes, _mm256_and_si256(moved, bit4));
}

// ---------------------------------------------------------------- Q4_0_X16 / Q5_0_X16
// Rows h*8 .. h*8+7 of a group, TT tokens.
template <bool kQ5, int TT>
inline void tile_q4_0(const uint8_t* group, int64_t nb, int h, const uint8_t* x, size_t x_row_bytes, float* y,
                      int64_t y_stride) {
  // Q5_0 appends 64 bytes of fifth bits to each block column's 256 bytes of nibbles.
  constexpr int64_t kCodeBytes = kPackRows * (kQK4_0 / 2) + (kQ5 ? kPackRows * 4 : 0);
  constexpr int32_t kOffset = kQ5 ? 16 : 8;
  const auto* scales = reinterpret_cast<const uint16_t*>(group + nb * kCodeBytes);
  const __m256i mask = _mm256_set1_epi8(0x0F);
  __m256 acc[TT];
  for (int t = 0; t < TT; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* cb = group + b * kCodeBytes;
    __m256i w[8];
    for (int j = 0; j < 4; ++j) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(cb + 64 * j + 32 * h));
      w[j] = _mm256_and_si256(v, mask);                          // elements 4j .. 4j+3
      w[j + 4] = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);  // elements 16+4j ..
    }
    if constexpr (kQ5) {
      const __m256i high = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(cb + 256 + 32 * h));
      const __m256i bit4 = _mm256_set1_epi8(0x10);
      w[0] = add_fifth_bit<0>(w[0], high, bit4);
      w[1] = add_fifth_bit<1>(w[1], high, bit4);
      w[2] = add_fifth_bit<2>(w[2], high, bit4);
      w[3] = add_fifth_bit<3>(w[3], high, bit4);
      w[4] = add_fifth_bit<4>(w[4], high, bit4);
      w[5] = add_fifth_bit<5>(w[5], high, bit4);
      w[6] = add_fifth_bit<6>(w[6], high, bit4);
      w[7] = add_fifth_bit<7>(w[7], high, bit4);
    }
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + b * kPackRows + 8 * h)));
    for (int t = 0; t < TT; ++t) {
      const BlockQ8_0S& xb = reinterpret_cast<const BlockQ8_0S*>(x + static_cast<size_t>(t) * x_row_bytes)[b];
      __m256i p = _mm256_add_epi32(dot4(w, xb.qs), dot4(w + 4, xb.qs + 16));
      p = _mm256_add_epi32(p, _mm256_set1_epi32(-kOffset * xb.sum));
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_mul_ps(dw, _mm256_set1_ps(xb.d)), acc[t]);
    }
  }
  for (int t = 0; t < TT; ++t) _mm256_storeu_ps(y + t * y_stride, acc[t]);
}

// ---------------------------------------------------------------- Q8_0_X16
// The codes are w + 128 (0..255), too large for vpmaddubsw's unsigned operand next to int8
// activations (255 x 127 x 2 overflows its int16 pairs). XOR 0x80 restores the signed w, and
// vpmaddubsw(|w|, sign(x, w)) = w x pairwise with |w| <= 128, |x| <= 127 (pairs <= 32512); one
// vpmaddwd by ones per code vector then widens to int32. No offset term is needed.
inline __m256i q8_dot(__m256i w, __m256i aw, __m256i x) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(aw, _mm256_sign_epi8(x, w)), _mm256_set1_epi16(1));
}

// Rows h*8 .. h*8+7 of a group, TT tokens: code vector j outermost, so the registers hold one
// vector (and its |w|) plus the tokens' int32 sums.
template <int TT>
inline void tile_q8_0(const uint8_t* group, int64_t nb, int h, const uint8_t* x, size_t x_row_bytes, float* y,
                      int64_t y_stride) {
  constexpr int64_t kCodeBytes = kPackRows * kQK8_0;
  const auto* scales = reinterpret_cast<const uint16_t*>(group + nb * kCodeBytes);
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  __m256 acc[TT];
  for (int t = 0; t < TT; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* cb = group + b * kCodeBytes;
    __m256i p[TT];
    for (int t = 0; t < TT; ++t) p[t] = _mm256_setzero_si256();
    for (int j = 0; j < 8; ++j) {
      const __m256i w =
          _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(cb + 64 * j + 32 * h)), flip);
      const __m256i aw = _mm256_abs_epi8(w);
      for (int t = 0; t < TT; ++t) {
        const BlockQ8_0S& xb = reinterpret_cast<const BlockQ8_0S*>(x + static_cast<size_t>(t) * x_row_bytes)[b];
        p[t] = _mm256_add_epi32(p[t], q8_dot(w, aw, bcast4(xb.qs + 4 * j)));
      }
    }
    const __m256 dw = load_f16x8(scales + b * kPackRows + 8 * h);
    for (int t = 0; t < TT; ++t) {
      const BlockQ8_0S& xb = reinterpret_cast<const BlockQ8_0S*>(x + static_cast<size_t>(t) * x_row_bytes)[b];
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p[t]), _mm256_mul_ps(dw, _mm256_set1_ps(xb.d)), acc[t]);
    }
  }
  for (int t = 0; t < TT; ++t) _mm256_storeu_ps(y + t * y_stride, acc[t]);
}

// ---------------------------------------------------------------- Q4_K_X16 / Q5_K_X16
// Q5_K_X16 (kQ5) is a Q4_K_X16 column plus the fifth bits (repack.h): codes 0..31, whose four
// vpmaddubsw pair sums still fit an int16.
template <bool kQ5, int TT>
inline void tile_q4_k(const uint8_t* group, int64_t nb, int h, const uint8_t* x, size_t x_row_bytes, float* y,
                      int64_t y_stride) {
  constexpr int64_t kColumnBytes = kQ5 ? kQ5KX16ColumnBytes : kQ4KX16ColumnBytes;
  const __m256i mask = _mm256_set1_epi8(0x0F), bit4 = _mm256_set1_epi8(0x10);
  __m256 acc[TT];
  for (int t = 0; t < TT; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* cb = group + b * kColumnBytes;  // codes, then the side data (repack.h)
    const uint8_t* scales = cb + kQ4KX16Scales;
    const uint8_t* mins = cb + kQ4KX16Mins;
    const auto* dd = reinterpret_cast<const uint16_t*>(cb + kQ4KX16D);
    const auto* dm = reinterpret_cast<const uint16_t*>(cb + kQ4KX16Dmin);
    const __m256 dvec = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(dd + 8 * h)));
    for (int j = 0; j < 8; ++j) {  // sub-block j = pair g = j/2, low (even j) or high nibbles
      const int g = j / 2;
      __m256i c[8];
      for (int k = 0; k < 8; ++k) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(cb + (g * 8 + k) * 64 + 32 * h));
        c[k] = _mm256_and_si256(j % 2 == 0 ? v : _mm256_srli_epi16(v, 4), mask);
        if constexpr (kQ5) c[k] = add_fifth_bit_k(c[k], cb + kQ5KX16High + k * 64 + 32 * h, j, bit4);
      }
      const __m128i s8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(scales + j * kPackRows + 8 * h));
      const __m256 sc = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(s8)), dvec);
      for (int t = 0; t < TT; ++t) {
        const BlockQ8_KS& xb = reinterpret_cast<const BlockQ8_KS*>(x + static_cast<size_t>(t) * x_row_bytes)[b];
        const __m256i p = _mm256_add_epi32(dot4(c, xb.qs + 32 * j), dot4(c + 4, xb.qs + 32 * j + 16));
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_mul_ps(sc, _mm256_set1_ps(xb.d)), acc[t]);
      }
    }
    const __m256 dminv = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(dm + 8 * h)));
    __m256i mp[4];
    for (int i = 0; i < 4; ++i) {
      mp[i] = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(mins + i * 32 + 16 * h)));
    }
    for (int t = 0; t < TT; ++t) {
      const BlockQ8_KS& xb = reinterpret_cast<const BlockQ8_KS*>(x + static_cast<size_t>(t) * x_row_bytes)[b];
      __m256i m = _mm256_setzero_si256();
      for (int i = 0; i < 4; ++i) {
        int32_t pair;
        std::memcpy(&pair, xb.sums + 2 * i, 4);
        m = _mm256_add_epi32(m, _mm256_madd_epi16(mp[i], _mm256_set1_epi32(pair)));
      }
      acc[t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(m), _mm256_mul_ps(dminv, _mm256_set1_ps(xb.d)), acc[t]);
    }
  }
  for (int t = 0; t < TT; ++t) _mm256_storeu_ps(y + t * y_stride, acc[t]);
}

// ---------------------------------------------------------------- Q6_K_X16
// Rows h*8 .. h*8+7, TT tokens. Per sub-block j (16 elements): 4 code vectors (ql nibbles of
// chunk j/2 | qh bit pair s of vector j), two vpmaddubsw summed per int16 pair, then vpmaddwd by
// the rows' scale sc_j (int16, both halves of the row's lane) accumulates sc_j * sum q x in
// int32; the offset comes off as 32 * sc_j * bsum_j from Q8_K's 16-element sums.
constexpr int64_t kQ6ColumnBytes = 2048 + 1024 + 256;

// Sub-block j of rows h*8 .. h*8+7: its 4 code vectors (values 0..63: ql nibble | qh bit pair
// << 4) and its 8 int8 scales, each duplicated into both int16 halves of its row's lane.
inline void q6_subblock(const uint8_t* col, int j, int h, __m256i q[4], __m256i& sc) {
  const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
  const int c = j / 2;
  const __m256i hv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(col + 2048 + j * 64 + 32 * h));
  for (int s = 0; s < 4; ++s) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(col + (4 * c + s) * 64 + 32 * h));
    q[s] = _mm256_and_si256(j % 2 == 0 ? v : _mm256_srli_epi16(v, 4), m4);
  }
  q[0] = _mm256_or_si256(q[0], _mm256_and_si256(move_bits<0, 4>(hv), m30));
  q[1] = _mm256_or_si256(q[1], _mm256_and_si256(move_bits<2, 4>(hv), m30));
  q[2] = _mm256_or_si256(q[2], _mm256_and_si256(hv, m30));
  q[3] = _mm256_or_si256(q[3], _mm256_and_si256(move_bits<6, 4>(hv), m30));
  const __m128i s8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(col + 3072 + j * kPackRows + 8 * h));
  sc = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(s8, s8));
}

// sc_j * sum over the sub-block of (q - 32) x, per row (int32): two vpmaddubsw per int16 pair
// sum, vpmaddwd by the scale, and 32 * sc_j * bsum_j off.
inline __m256i q6_dot(const __m256i q[4], __m256i sc, const int8_t* xs, int16_t bsum) {
  const __m256i s01 = _mm256_add_epi16(_mm256_maddubs_epi16(q[0], bcast4(xs)), _mm256_maddubs_epi16(q[1], bcast4(xs + 4)));
  const __m256i s23 =
      _mm256_add_epi16(_mm256_maddubs_epi16(q[2], bcast4(xs + 8)), _mm256_maddubs_epi16(q[3], bcast4(xs + 12)));
  const __m256i off = _mm256_madd_epi16(sc, _mm256_set1_epi32(static_cast<uint16_t>(bsum)));
  return _mm256_sub_epi32(_mm256_add_epi32(_mm256_madd_epi16(s01, sc), _mm256_madd_epi16(s23, sc)),
                          _mm256_slli_epi32(off, 5));
}

template <int TT>
inline void tile_q6_k(const uint8_t* group, int64_t nb, int h, const uint8_t* x, size_t x_row_bytes, float* y,
                      int64_t y_stride) {
  const auto* dd = reinterpret_cast<const uint16_t*>(group + nb * kQ6ColumnBytes);
  __m256 acc[TT];
  for (int t = 0; t < TT; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* col = group + b * kQ6ColumnBytes;
    __m256i tot[TT];
    for (int t = 0; t < TT; ++t) tot[t] = _mm256_setzero_si256();
    for (int j = 0; j < 16; ++j) {
      __m256i q[4], sc;
      q6_subblock(col, j, h, q, sc);
      for (int t = 0; t < TT; ++t) {
        const BlockQ8_K& xb = reinterpret_cast<const BlockQ8_K*>(x + static_cast<size_t>(t) * x_row_bytes)[b];
        tot[t] = _mm256_add_epi32(tot[t], q6_dot(q, sc, xb.qs + 16 * j, xb.bsums[j]));
      }
    }
    const __m256 dvec = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(dd + b * kPackRows + 8 * h)));
    for (int t = 0; t < TT; ++t) {
      const BlockQ8_K& xb = reinterpret_cast<const BlockQ8_K*>(x + static_cast<size_t>(t) * x_row_bytes)[b];
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(tot[t]), _mm256_mul_ps(dvec, _mm256_set1_ps(xb.d)), acc[t]);
    }
  }
  for (int t = 0; t < TT; ++t) _mm256_storeu_ps(y + t * y_stride, acc[t]);
}

// ---------------------------------------------------------------- decode (one token)
// Both 8-row halves of a group in one pass: every weight line is read once, straight from the
// prefetched stream (the prefill tiles above run the halves one after the other and re-read the
// group from L2, which decode cannot afford). Prefetch as in the AVX-512 file
// (x86/packed_prefetch.h).
using x86::prefetch_line;

// A legacy block column's int32 sums of rows 0-7 (p0) and 8-15 (p1), scaled by the rows' F16 d
// (16 of them at d) and the token's scale dx, into the accumulators.
inline void add_block(__m256i p0, __m256i p1, const uint16_t* d, float dx, __m256& acc0, __m256& acc1) {
  const __m256 vdx = _mm256_set1_ps(dx);
  acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p0), _mm256_mul_ps(load_f16x8(d), vdx), acc0);
  acc1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p1), _mm256_mul_ps(load_f16x8(d + 8), vdx), acc1);
}

// Q4_0 / Q5_0 code vector J (elements 4J .. 4J+3 and, high nibbles, 16+4J ..) of both halves:
// adds its int16 pair sums with the token's bytes into s0 (rows 0-7) and s1 (rows 8-15).
template <bool kQ5, int J>
inline void q4_0_step(const uint8_t* cb, __m256i high0, __m256i high1, const BlockQ8_0S& xb, __m256i& s0, __m256i& s1) {
  const __m256i mask = _mm256_set1_epi8(0x0F);
  const __m256i v0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(cb + 64 * J));
  const __m256i v1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(cb + 64 * J + 32));
  __m256i lo0 = _mm256_and_si256(v0, mask), hi0 = _mm256_and_si256(_mm256_srli_epi16(v0, 4), mask);
  __m256i lo1 = _mm256_and_si256(v1, mask), hi1 = _mm256_and_si256(_mm256_srli_epi16(v1, 4), mask);
  if constexpr (kQ5) {
    const __m256i bit4 = _mm256_set1_epi8(0x10);
    lo0 = add_fifth_bit<J>(lo0, high0, bit4);
    hi0 = add_fifth_bit<J + 4>(hi0, high0, bit4);
    lo1 = add_fifth_bit<J>(lo1, high1, bit4);
    hi1 = add_fifth_bit<J + 4>(hi1, high1, bit4);
  }
  const __m256i a_lo = bcast4(xb.qs + 4 * J), a_hi = bcast4(xb.qs + 16 + 4 * J);
  s0 = _mm256_add_epi16(s0, _mm256_add_epi16(_mm256_maddubs_epi16(lo0, a_lo), _mm256_maddubs_epi16(hi0, a_hi)));
  s1 = _mm256_add_epi16(s1, _mm256_add_epi16(_mm256_maddubs_epi16(lo1, a_lo), _mm256_maddubs_epi16(hi1, a_hi)));
}

template <bool kQ5>
inline void decode_q4_0(const uint8_t* group, int64_t nb, const uint8_t* x, float* y) {
  constexpr int64_t kCodeBytes = kPackRows * (kQK4_0 / 2) + (kQ5 ? kPackRows * 4 : 0);
  constexpr int32_t kOffset = kQ5 ? 16 : 8;
  const auto* scales = reinterpret_cast<const uint16_t*>(group + nb * kCodeBytes);
  const auto* xs = reinterpret_cast<const BlockQ8_0S*>(x);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* cb = group + b * kCodeBytes;
    x86::prefetch_legacy_column<kCodeBytes>(group, nb, b);
    const BlockQ8_0S& xb = xs[b];
    __m256i high0 = _mm256_setzero_si256(), high1 = _mm256_setzero_si256();
    if constexpr (kQ5) {
      high0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(cb + 256));
      high1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(cb + 288));
    }
    // int16 pair sums: 8 products of 4-bit codes fit (8 x 2 x 15 x 128 < 2^15), 5-bit codes 4.
    __m256i p0 = _mm256_set1_epi32(-kOffset * xb.sum), p1 = p0;
    __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
    q4_0_step<kQ5, 0>(cb, high0, high1, xb, s0, s1);
    q4_0_step<kQ5, 1>(cb, high0, high1, xb, s0, s1);
    if constexpr (kQ5) {
      p0 = _mm256_add_epi32(p0, _mm256_madd_epi16(s0, ones));
      p1 = _mm256_add_epi32(p1, _mm256_madd_epi16(s1, ones));
      s0 = _mm256_setzero_si256();
      s1 = _mm256_setzero_si256();
    }
    q4_0_step<kQ5, 2>(cb, high0, high1, xb, s0, s1);
    q4_0_step<kQ5, 3>(cb, high0, high1, xb, s0, s1);
    p0 = _mm256_add_epi32(p0, _mm256_madd_epi16(s0, ones));
    p1 = _mm256_add_epi32(p1, _mm256_madd_epi16(s1, ones));
    add_block(p0, p1, scales + b * kPackRows, xb.d, acc0, acc1);
  }
  _mm256_storeu_ps(y, acc0);
  _mm256_storeu_ps(y + 8, acc1);
}

inline void decode_q8_0(const uint8_t* group, int64_t nb, const uint8_t* x, float* y) {
  constexpr int64_t kCodeBytes = kPackRows * kQK8_0;
  const auto* scales = reinterpret_cast<const uint16_t*>(group + nb * kCodeBytes);
  const auto* xs = reinterpret_cast<const BlockQ8_0S*>(x);
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* cb = group + b * kCodeBytes;
    x86::prefetch_legacy_column<kCodeBytes>(group, nb, b);
    const BlockQ8_0S& xb = xs[b];
    __m256i p0 = _mm256_setzero_si256(), p1 = _mm256_setzero_si256();
    for (int j = 0; j < 8; ++j) {
      const __m256i a = bcast4(xb.qs + 4 * j);
      const __m256i w0 = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(cb + 64 * j)), flip);
      const __m256i w1 = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(cb + 64 * j + 32)), flip);
      p0 = _mm256_add_epi32(p0, q8_dot(w0, _mm256_abs_epi8(w0), a));
      p1 = _mm256_add_epi32(p1, q8_dot(w1, _mm256_abs_epi8(w1), a));
    }
    add_block(p0, p1, scales + b * kPackRows, xb.d, acc0, acc1);
  }
  _mm256_storeu_ps(y, acc0);
  _mm256_storeu_ps(y + 8, acc1);
}

template <bool kQ5>
inline void decode_q4_k(const uint8_t* group, int64_t nb, const uint8_t* x, float* y) {
  constexpr int64_t kColumnBytes = kQ5 ? kQ5KX16ColumnBytes : kQ4KX16ColumnBytes;
  const auto* xs = reinterpret_cast<const BlockQ8_KS*>(x);
  const __m256i mask = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1), bit4 = _mm256_set1_epi8(0x10);
  __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* cb = group + b * kColumnBytes;  // codes, then the side data (repack.h)
    const uint8_t* scales = cb + kQ4KX16Scales;
    const uint8_t* mins = cb + kQ4KX16Mins;
    const auto* dd = reinterpret_cast<const uint16_t*>(cb + kQ4KX16D);
    const auto* dm = reinterpret_cast<const uint16_t*>(cb + kQ4KX16Dmin);
    const BlockQ8_KS& xb = xs[b];
    const __m256 dx = _mm256_set1_ps(xb.d);
    const __m256 dvec[2] = {load_f16x8(dd), load_f16x8(dd + 8)};
    for (int g = 0; g < 4; ++g) {  // sub-blocks 2g (low nibbles) and 2g+1 (high nibbles)
      // All 37 lines of the column: 8 code lines per pair, the 5 side lines (Q5_K: and the 8
      // lines of fifth bits) with the last.
      for (int off = g * 512; off < (g + 1) * 512; off += 64) prefetch_line(cb + off);
      if (g == 3) {
        for (int64_t off = kQ4KX16Scales; off < kColumnBytes; off += 64) prefetch_line(cb + off);
      }
      __m256i p[2][2];  // [half][low / high]
      for (int h = 0; h < 2; ++h) p[h][0] = p[h][1] = _mm256_setzero_si256();
      for (int k0 = 0; k0 < 8; k0 += 4) {  // 4 pair sums of nibbles fit an int16
        __m256i s[2][2];
        for (int h = 0; h < 2; ++h) s[h][0] = s[h][1] = _mm256_setzero_si256();
        for (int k = k0; k < k0 + 4; ++k) {
          const __m256i a_lo = bcast4(xb.qs + 64 * g + 4 * k), a_hi = bcast4(xb.qs + 64 * g + 32 + 4 * k);
          for (int h = 0; h < 2; ++h) {
            const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(cb + (g * 8 + k) * 64 + 32 * h));
            __m256i lo = _mm256_and_si256(v, mask), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
            if constexpr (kQ5) {
              const uint8_t* high = cb + kQ5KX16High + k * 64 + 32 * h;
              lo = add_fifth_bit_k(lo, high, 2 * g, bit4);
              hi = add_fifth_bit_k(hi, high, 2 * g + 1, bit4);
            }
            s[h][0] = _mm256_add_epi16(s[h][0], _mm256_maddubs_epi16(lo, a_lo));
            s[h][1] = _mm256_add_epi16(s[h][1], _mm256_maddubs_epi16(hi, a_hi));
          }
        }
        for (int h = 0; h < 2; ++h) {
          p[h][0] = _mm256_add_epi32(p[h][0], _mm256_madd_epi16(s[h][0], ones));
          p[h][1] = _mm256_add_epi32(p[h][1], _mm256_madd_epi16(s[h][1], ones));
        }
      }
      for (int h = 0; h < 2; ++h) {
        for (int half = 0; half < 2; ++half) {
          const int j = 2 * g + half;
          const __m128i s8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(scales + j * kPackRows + 8 * h));
          const __m256 sc = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(s8)), dvec[h]);
          acc[h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p[h][half]), _mm256_mul_ps(sc, dx), acc[h]);
        }
      }
    }
    for (int h = 0; h < 2; ++h) {
      __m256i m = _mm256_setzero_si256();
      for (int i = 0; i < 4; ++i) {
        const __m256i mp = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(mins + i * 32 + 16 * h)));
        int32_t pair;
        std::memcpy(&pair, xb.sums + 2 * i, 4);
        m = _mm256_add_epi32(m, _mm256_madd_epi16(mp, _mm256_set1_epi32(pair)));
      }
      const __m256 dmin = load_f16x8(dm + 8 * h);
      acc[h] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(m), _mm256_mul_ps(dmin, dx), acc[h]);
    }
  }
  _mm256_storeu_ps(y, acc[0]);
  _mm256_storeu_ps(y + 8, acc[1]);
}

inline void decode_q6_k(const uint8_t* group, int64_t nb, const uint8_t* x, float* y) {
  const auto* dd = reinterpret_cast<const uint16_t*>(group + nb * kQ6ColumnBytes);
  const auto* xs = reinterpret_cast<const BlockQ8_K*>(x);
  __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* col = group + b * kQ6ColumnBytes;
    x86::prefetch_d_array<kQ6ColumnBytes>(group, nb, b);
    const BlockQ8_K& xb = xs[b];
    __m256i tot[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
    for (int j = 0; j < 16; ++j) {
      // Spread the column's 52 lines over its 16 sub-blocks.
      for (int off = j * 208; off < (j + 1) * 208; off += 64) prefetch_line(col + off);
      for (int h = 0; h < 2; ++h) {
        __m256i q[4], sc;
        q6_subblock(col, j, h, q, sc);
        tot[h] = _mm256_add_epi32(tot[h], q6_dot(q, sc, xb.qs + 16 * j, xb.bsums[j]));
      }
    }
    const __m256 dx = _mm256_set1_ps(xb.d);
    for (int h = 0; h < 2; ++h) {
      acc[h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(tot[h]), _mm256_mul_ps(load_f16x8(dd + b * kPackRows + 8 * h), dx),
                               acc[h]);
    }
  }
  _mm256_storeu_ps(y, acc[0]);
  _mm256_storeu_ps(y + 8, acc[1]);
}

// Policy for packed_driver.h: a group is its two 8-row halves (decode: both in one pass).
enum class Layout { kQ4_0, kQ5_0, kQ8_0, kQ4_K, kQ5_K, kQ6_K };

template <Layout kLayout>
struct Halves {
  static constexpr int64_t kBlockElems =
      kLayout == Layout::kQ4_K || kLayout == Layout::kQ5_K || kLayout == Layout::kQ6_K ? kQK_K : kQK4_0;
  static constexpr int kTokens = 4;  // 8 code YMM + 4 accumulators + temporaries = 16 YMM
  template <int TT>
  static inline void group(const uint8_t* g, int64_t nb, const uint8_t* x, size_t xrb, float* y, int64_t ys) {
    if constexpr (TT == 1) {
      if constexpr (kLayout == Layout::kQ4_K || kLayout == Layout::kQ5_K) {
        decode_q4_k<kLayout == Layout::kQ5_K>(g, nb, x, y);
      } else if constexpr (kLayout == Layout::kQ6_K) {
        decode_q6_k(g, nb, x, y);
      } else if constexpr (kLayout == Layout::kQ8_0) {
        decode_q8_0(g, nb, x, y);
      } else {
        decode_q4_0<kLayout == Layout::kQ5_0>(g, nb, x, y);
      }
      return;
    }
    for (int h = 0; h < 2; ++h) {
      if constexpr (kLayout == Layout::kQ4_K || kLayout == Layout::kQ5_K) {
        tile_q4_k<kLayout == Layout::kQ5_K, TT>(g, nb, h, x, xrb, y + 8 * h, ys);
      } else if constexpr (kLayout == Layout::kQ6_K) {
        tile_q6_k<TT>(g, nb, h, x, xrb, y + 8 * h, ys);
      } else if constexpr (kLayout == Layout::kQ8_0) {
        tile_q8_0<TT>(g, nb, h, x, xrb, y + 8 * h, ys);
      } else {
        tile_q4_0<kLayout == Layout::kQ5_0, TT>(g, nb, h, x, xrb, y + 8 * h, ys);
      }
    }
  }
};

}  // namespace

// The trampolines of kernel_list.h's packed group.
#define EDGELLM_MATMUL_PACKED(type, fn, K) \
  void fn(EDGELLM_MATMUL_PARAMS) { packed::matmul<K>(EDGELLM_MATMUL_ARGS); }
#include "kernels/x86/avx2/kernel_list.h"

}  // namespace edgellm::kernels::avx2
