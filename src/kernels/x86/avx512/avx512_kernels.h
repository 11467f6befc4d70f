// Internal: the AVX-512 (F, BW, VL, DQ, VNNI) kernels that install_avx512() puts into the table.
#pragma once

#include <cstddef>
#include <cstdint>

namespace edgellm::kernels::avx512 {

float dot_f32(const float* a, const float* b, int64_t n);
float dot_f16_f32(const uint16_t* a, const float* b, int64_t n);
void axpy_f32(float a, const float* x, float* y, int64_t n);
void axpy_f16(float a, const uint16_t* x, float* y, int64_t n);
void softmax(float* x, int64_t n);
void gemm_f32(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
              bool accumulate, float* c, int64_t ldc);

#define EDGELLM_AVX512_MATMUL(name)                                                                        \
  void name(int64_t n, const void* w, size_t w_row_bytes, int64_t r0, int64_t r1, const void* xq, size_t xq_row_bytes, \
            int64_t n_tokens, float* y, int64_t y_stride)
EDGELLM_AVX512_MATMUL(matmul_f32);
EDGELLM_AVX512_MATMUL(matmul_f16);
EDGELLM_AVX512_MATMUL(matmul_bf16);
EDGELLM_AVX512_MATMUL(matmul_q4_0);
EDGELLM_AVX512_MATMUL(matmul_q4_1);
EDGELLM_AVX512_MATMUL(matmul_q5_0);
EDGELLM_AVX512_MATMUL(matmul_q5_1);
EDGELLM_AVX512_MATMUL(matmul_q8_0);
EDGELLM_AVX512_MATMUL(matmul_q4_k);
EDGELLM_AVX512_MATMUL(matmul_q5_k);
EDGELLM_AVX512_MATMUL(matmul_q6_k);
EDGELLM_AVX512_MATMUL(matmul_q4_0_x16);
EDGELLM_AVX512_MATMUL(matmul_q8_0_x16);
EDGELLM_AVX512_MATMUL(matmul_q4_k_x16);
EDGELLM_AVX512_MATMUL(matmul_q5_0_x16);
EDGELLM_AVX512_MATMUL(matmul_q6_k_x16);
#undef EDGELLM_AVX512_MATMUL

}  // namespace edgellm::kernels::avx512
