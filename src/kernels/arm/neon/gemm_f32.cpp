// NEON gemm_f32 (kernels.h): register tile 4 rows x 16 columns (four vectors) = 16 accumulators
// of the 32 registers. Each lane is the scalar reference's FMA chain over p (vfmaq_f32 is fused),
// from C or from 0, then * alpha, so results are bit-identical to it. Columns past the last 16-column
// tile run the same chain one element at a time.
#include <arm_neon.h>

#include "kernels/arm/arm_kernels.h"
#include "kernels/gemm_row_tiles.h"

namespace edgellm::kernels::neon {
namespace {

template <int MR>
void rows_tile(int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
               bool accumulate, float* c, int64_t ldc) {
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    float32x4_t s[MR][4];
    for (int r = 0; r < MR; ++r) {
      for (int v = 0; v < 4; ++v) s[r][v] = accumulate ? vld1q_f32(c + r * ldc + j + 4 * v) : vdupq_n_f32(0.0f);
    }
    const float* bp = b + j;
    for (int64_t p = 0; p < k; ++p, bp += ldb) {
      const float32x4_t b0 = vld1q_f32(bp), b1 = vld1q_f32(bp + 4), b2 = vld1q_f32(bp + 8), b3 = vld1q_f32(bp + 12);
      for (int r = 0; r < MR; ++r) {
        const float32x4_t x = vdupq_n_f32(a[r * lda + p]);
        s[r][0] = vfmaq_f32(s[r][0], x, b0);
        s[r][1] = vfmaq_f32(s[r][1], x, b1);
        s[r][2] = vfmaq_f32(s[r][2], x, b2);
        s[r][3] = vfmaq_f32(s[r][3], x, b3);
      }
    }
    for (int r = 0; r < MR; ++r) {
      float* cr = c + r * ldc + j;
      for (int v = 0; v < 4; ++v) {
        vst1q_f32(cr + 4 * v, accumulate ? s[r][v] : vmulq_n_f32(s[r][v], alpha));
      }
    }
  }
  for (; j < n; ++j) {
    for (int r = 0; r < MR; ++r) {
      float acc = accumulate ? c[r * ldc + j] : 0.0f;
      for (int64_t p = 0; p < k; ++p) acc = __builtin_fmaf(a[r * lda + p], b[p * ldb + j], acc);
      c[r * ldc + j] = accumulate ? acc : alpha * acc;
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

}  // namespace edgellm::kernels::neon
