// AVX2 gemm_f32 (kernels.h): the AVX-512 version's scheme at 8 lanes. Register tile 4 rows x 16
// columns (two vectors) = 8 accumulators; each lane is the scalar reference's FMA chain over p,
// from C or from 0, then * alpha, so results are bit-identical to it. Columns past the last full vector
// use masked loads and stores.
#include <immintrin.h>

#include "kernels/gemm_row_tiles.h"
#include "kernels/x86/avx2/avx2_kernels.h"

namespace edgellm::kernels::avx2 {
namespace {

// Lane mask for `left` valid columns (clamped to 0..8).
inline __m256i columns_mask(int64_t left) {
  const int v = left <= 0 ? 0 : left >= 8 ? 8 : static_cast<int>(left);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(v), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

template <int MR>
void rows_tile(int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
               bool accumulate, float* c, int64_t ldc) {
  const __m256 va = _mm256_set1_ps(alpha);
  for (int64_t j = 0; j < n; j += 16) {
    const __m256i m0 = columns_mask(n - j), m1 = columns_mask(n - j - 8);
    __m256 s0[MR], s1[MR];
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r) {
      if (accumulate) {
        s0[r] = _mm256_maskload_ps(c + r * ldc + j, m0);
        s1[r] = _mm256_maskload_ps(c + r * ldc + j + 8, m1);
      } else {
        s0[r] = s1[r] = _mm256_setzero_ps();
      }
    }
    const float* bp = b + j;
    for (int64_t p = 0; p < k; ++p, bp += ldb) {
      const __m256 b0 = _mm256_maskload_ps(bp, m0);
      const __m256 b1 = _mm256_maskload_ps(bp + 8, m1);
#pragma GCC unroll 4
      for (int r = 0; r < MR; ++r) {
        const __m256 x = _mm256_broadcast_ss(a + r * lda + p);
        s0[r] = _mm256_fmadd_ps(x, b0, s0[r]);
        s1[r] = _mm256_fmadd_ps(x, b1, s1[r]);
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r) {
      float* cr = c + r * ldc + j;
      const __m256 r0 = accumulate ? s0[r] : _mm256_mul_ps(va, s0[r]);
      const __m256 r1 = accumulate ? s1[r] : _mm256_mul_ps(va, s1[r]);
      _mm256_maskstore_ps(cr, m0, r0);
      _mm256_maskstore_ps(cr + 8, m1, r1);
    }
  }
}

}  // namespace

void gemm_f32(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
              bool accumulate, float* c, int64_t ldc) {
  gemm::for_row_tiles<4>(m, [&](auto rows, int64_t i) {
    rows_tile<decltype(rows)::kValue>(n, k, alpha, a + i * lda, lda, b, ldb, accumulate, c + i * ldc, ldc);
  });
}

}  // namespace edgellm::kernels::avx2
