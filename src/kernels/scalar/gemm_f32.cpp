// Scalar reference of gemm_f32 (kernels.h): every (i, j) is one fused multiply-add chain over
// p = 0 .. k-1 in order, starting from C (accumulate) or from 0 and then scaled by alpha. Every
// step is a single rounding written out (std::fma, one multiply), so no compiler contraction can
// change it, and the SIMD versions, which do the same per lane, match this reference bit for bit.
#include <cmath>

#include "kernels/scalar/scalar_kernels.h"

namespace edgellm::kernels::scalar {

void gemm_f32(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
              bool accumulate, float* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float acc = accumulate ? c[i * ldc + j] : 0.0f;
      for (int64_t p = 0; p < k; ++p) acc = std::fma(a[i * lda + p], b[p * ldb + j], acc);
      c[i * ldc + j] = accumulate ? acc : alpha * acc;
    }
  }
}

}  // namespace edgellm::kernels::scalar
