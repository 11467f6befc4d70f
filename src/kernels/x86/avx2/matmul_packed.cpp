// AVX2 matmul for the 16-row interleaved nibble layouts Q4_0_X16 and Q4_K_X16 (kernels/repack.h).
// A 64-byte code vector of the layout is two YMM halves of 8 rows each; each half is a separate
// 8-row tile here. Without VNNI the 4-byte dot is vpmaddubsw (codes x broadcast activation bytes
// -> int16 pair sums) then vpmaddwd with ones (-> int32). Four pair sums of nibble codes fit an
// int16 (4 * 2 * 15 * 127 = 15240), so vpmaddwd runs once per four vpmaddubsw.
// Q8_0_X16 (codes up to 255) would overflow vpmaddubsw's int16 pairs and has no AVX2 kernel.
#include <immintrin.h>

#include <cstring>

#include "kernels/blocks.h"
#include "kernels/packed_driver.h"
#include "kernels/repack.h"
#include "kernels/x86/avx2/avx2_kernels.h"
#include "kernels/x86/avx2/avx2_util.h"

namespace edgellm::kernels::avx2 {
namespace {

constexpr int kPrefetchBytes = 6144;  // decode: see the AVX-512 file

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


// ---------------------------------------------------------------- Q4_0_X16
// Rows h*8 .. h*8+7 of a group, TT tokens.
template <int TT>
inline void tile_q4_0(const uint8_t* group, int64_t nb, int h, const uint8_t* x, size_t x_row_bytes, float* y,
                      int64_t y_stride) {
  constexpr int64_t kCodeBytes = kPackRows * (kQK4_0 / 2);
  const auto* scales = reinterpret_cast<const uint16_t*>(group + nb * kCodeBytes);
  const __m256i mask = _mm256_set1_epi8(0x0F);
  __m256 acc[TT];
  for (int t = 0; t < TT; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* cb = group + b * kCodeBytes;
    if (TT == 1) _mm_prefetch(reinterpret_cast<const char*>(cb) + kPrefetchBytes + 64 * h, _MM_HINT_T0);
    __m256i w[8];
    for (int j = 0; j < 4; ++j) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(cb + 64 * j + 32 * h));
      w[j] = _mm256_and_si256(v, mask);                          // elements 4j .. 4j+3
      w[j + 4] = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);  // elements 16+4j ..
    }
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + b * kPackRows + 8 * h)));
    for (int t = 0; t < TT; ++t) {
      const BlockQ8_0S& xb = reinterpret_cast<const BlockQ8_0S*>(x + static_cast<size_t>(t) * x_row_bytes)[b];
      __m256i p = _mm256_add_epi32(dot4(w, xb.qs), dot4(w + 4, xb.qs + 16));
      p = _mm256_add_epi32(p, _mm256_set1_epi32(-8 * xb.sum));
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_mul_ps(dw, _mm256_set1_ps(xb.d)), acc[t]);
    }
  }
  for (int t = 0; t < TT; ++t) _mm256_storeu_ps(y + t * y_stride, acc[t]);
}

// ---------------------------------------------------------------- Q4_K_X16
template <int TT>
inline void tile_q4_k(const uint8_t* group, int64_t nb, int h, const uint8_t* x, size_t x_row_bytes, float* y,
                      int64_t y_stride) {
  const uint8_t* codes = group;
  const uint8_t* scales = codes + nb * 2048;
  const uint8_t* mins = scales + nb * 128;
  const auto* dd = reinterpret_cast<const uint16_t*>(mins + nb * 128);
  const uint16_t* dm = dd + nb * kPackRows;
  const __m256i mask = _mm256_set1_epi8(0x0F);
  __m256 acc[TT];
  for (int t = 0; t < TT; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* cb = codes + b * 2048;
    if (TT == 1) {
      for (int j = 0; j < 2048; j += 128) _mm_prefetch(reinterpret_cast<const char*>(cb) + kPrefetchBytes + j + 32 * h, _MM_HINT_T0);
    }
    const __m256 dvec = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(dd + b * kPackRows + 8 * h)));
    for (int j = 0; j < 8; ++j) {  // sub-block j = pair g = j/2, low (even j) or high nibbles
      const int g = j / 2;
      __m256i c[8];
      for (int k = 0; k < 8; ++k) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(cb + (g * 8 + k) * 64 + 32 * h));
        c[k] = _mm256_and_si256(j % 2 == 0 ? v : _mm256_srli_epi16(v, 4), mask);
      }
      const __m128i s8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(scales + b * 128 + j * kPackRows + 8 * h));
      const __m256 sc = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(s8)), dvec);
      for (int t = 0; t < TT; ++t) {
        const BlockQ8_KS& xb = reinterpret_cast<const BlockQ8_KS*>(x + static_cast<size_t>(t) * x_row_bytes)[b];
        const __m256i p = _mm256_add_epi32(dot4(c, xb.qs + 32 * j), dot4(c + 4, xb.qs + 32 * j + 16));
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_mul_ps(sc, _mm256_set1_ps(xb.d)), acc[t]);
      }
    }
    const __m256 dminv = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(dm + b * kPackRows + 8 * h)));
    __m256i mp[4];
    for (int i = 0; i < 4; ++i) {
      mp[i] = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(mins + b * 128 + i * 32 + 16 * h)));
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

// Policy for packed_driver.h: a group is its two 8-row halves.
template <bool kQ4K>
struct Nibbles {
  static constexpr int64_t kBlockElems = kQ4K ? kQK_K : kQK4_0;
  static constexpr int kTokens = 4;  // 8 code YMM + 4 accumulators + temporaries = 16 YMM
  static constexpr int kMidTokens = 1;
  template <int TT>
  static inline void group(const uint8_t* g, int64_t nb, const uint8_t* x, size_t xrb, float* y, int64_t ys) {
    for (int h = 0; h < 2; ++h) {
      if (kQ4K) {
        tile_q4_k<TT>(g, nb, h, x, xrb, y + 8 * h, ys);
      } else {
        tile_q4_0<TT>(g, nb, h, x, xrb, y + 8 * h, ys);
      }
    }
  }
};

}  // namespace

void matmul_q4_0_x16(int64_t n, const void* w, size_t wrb, int64_t r0, int64_t r1, const void* x, size_t xrb,
                     int64_t nt, float* y, int64_t ys) {
  packed::matmul<Nibbles<false>>(n, w, wrb, r0, r1, x, xrb, nt, y, ys);
}

void matmul_q4_k_x16(int64_t n, const void* w, size_t wrb, int64_t r0, int64_t r1, const void* x, size_t xrb,
                     int64_t nt, float* y, int64_t ys) {
  packed::matmul<Nibbles<true>>(n, w, wrb, r0, r1, x, xrb, nt, y, ys);
}

}  // namespace edgellm::kernels::avx2
