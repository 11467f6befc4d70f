// AVX-512 gemm_f32 (kernels.h) for the prefill attention tiles: C = alpha * (A . B) (+ C).
//
// Register tile: 6 rows of A x 32 columns of B (two vectors) = 12 accumulators, more
// independent FMA chains than a latency of 4 at two FMAs per cycle needs (4 rows, exactly 8,
// measured ~6% slower on 112 x 64 x 64). Per step p: two loads of B's row p, six broadcasts of
// A[i][p], twelve FMAs. Each lane keeps the scalar reference's order (one FMA chain over p from C
// or from 0, then * alpha), so results are bit-identical to it.
// Columns past n are masked; rows past m are a smaller instantiation.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include "kernels/gemm_row_tiles.h"
#include "kernels/x86/avx512/avx512_kernels.h"

namespace edgellm::kernels::avx512 {
namespace {

inline __mmask16 columns_mask(int64_t left) {
  return left >= 16  ? static_cast<__mmask16>(0xFFFF)
         : left <= 0 ? static_cast<__mmask16>(0)
                     : static_cast<__mmask16>((1u << left) - 1u);
}

template <int MR>
void rows_tile(int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
               bool accumulate, float* c, int64_t ldc) {
  const __m512 va = _mm512_set1_ps(alpha);
  for (int64_t j = 0; j < n; j += 32) {
    const __mmask16 m0 = columns_mask(n - j), m1 = columns_mask(n - j - 16);
    __m512 s0[MR], s1[MR];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      if (accumulate) {
        s0[r] = _mm512_maskz_loadu_ps(m0, c + r * ldc + j);
        s1[r] = _mm512_maskz_loadu_ps(m1, c + r * ldc + j + 16);
      } else {
        s0[r] = s1[r] = _mm512_setzero_ps();
      }
    }
    const float* bp = b + j;
    for (int64_t p = 0; p < k; ++p, bp += ldb) {
      const __m512 b0 = _mm512_maskz_loadu_ps(m0, bp);
      const __m512 b1 = _mm512_maskz_loadu_ps(m1, bp + 16);
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
        const __m512 x = _mm512_set1_ps(a[r * lda + p]);
        s0[r] = _mm512_fmadd_ps(x, b0, s0[r]);
        s1[r] = _mm512_fmadd_ps(x, b1, s1[r]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      float* cr = c + r * ldc + j;
      const __m512 r0 = accumulate ? s0[r] : _mm512_mul_ps(va, s0[r]);
      const __m512 r1 = accumulate ? s1[r] : _mm512_mul_ps(va, s1[r]);
      _mm512_mask_storeu_ps(cr, m0, r0);
      _mm512_mask_storeu_ps(cr + 16, m1, r1);
    }
  }
}

}  // namespace

void gemm_f32(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
              bool accumulate, float* c, int64_t ldc) {
  gemm::for_row_tiles<6>(m, [&](auto rows, int64_t i) {
    rows_tile<decltype(rows)::kValue>(n, k, alpha, a + i * lda, lda, b, ldb, accumulate, c + i * ldc, ldc);
  });
}

}  // namespace edgellm::kernels::avx512
