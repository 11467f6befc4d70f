// Internal: the AVX2 (+FMA, F16C, BMI2) kernels that install_avx2() puts into the table.
#pragma once

#include <cstddef>
#include <cstdint>

namespace edgellm::kernels::avx2 {

float dot_f32(const float* a, const float* b, int64_t n);
float dot_f16_f32(const uint16_t* a, const float* b, int64_t n);
void axpy_f32(float a, const float* x, float* y, int64_t n);
void axpy_f16(float a, const uint16_t* x, float* y, int64_t n);
void scale_f32(float* x, float s, int64_t n);
void add_f32(const float* a, const float* b, float* y, int64_t n);
void fp32_to_fp16_row(const float* x, uint16_t* y, int64_t n);
void fp16_to_fp32_row(const uint16_t* x, float* y, int64_t n);
// The F16 entry of the dequantize table (F16 rows widened by F16C).
void dequantize_f16(const void* src, float* dst, int64_t n);
void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps);
void softmax(float* x, int64_t n);
void gemm_f32(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
              bool accumulate, float* c, int64_t ldc);
void silu_mul(const float* gate, const float* up, float* out, int64_t n);

// Activation quantizers (bit-identical to the scalar reference).
void quantize_q8_0(const float* x, void* dst, int64_t n);
void quantize_q8_0s(const float* x, void* dst, int64_t n);
void quantize_q8_ks(const float* x, void* dst, int64_t n);
void quantize_q8_1(const float* x, void* dst, int64_t n);
void quantize_q8_k(const float* x, void* dst, int64_t n);

// matmul per weight type (kernel_table.h MatmulFn contract).
#define EDGELLM_AVX2_MATMUL(name)                                                                          \
  void name(int64_t n, const void* w, size_t w_row_bytes, int64_t r0, int64_t r1, const void* xq, size_t xq_row_bytes, \
            int64_t n_tokens, float* y, int64_t y_stride)
EDGELLM_AVX2_MATMUL(matmul_f32);
EDGELLM_AVX2_MATMUL(matmul_f16);
EDGELLM_AVX2_MATMUL(matmul_bf16);
EDGELLM_AVX2_MATMUL(matmul_q4_0);
EDGELLM_AVX2_MATMUL(matmul_q4_1);
EDGELLM_AVX2_MATMUL(matmul_q5_0);
EDGELLM_AVX2_MATMUL(matmul_q5_1);
EDGELLM_AVX2_MATMUL(matmul_q8_0);
EDGELLM_AVX2_MATMUL(matmul_q4_k);
EDGELLM_AVX2_MATMUL(matmul_q5_k);
EDGELLM_AVX2_MATMUL(matmul_q6_k);
EDGELLM_AVX2_MATMUL(matmul_q4_0_x16);
EDGELLM_AVX2_MATMUL(matmul_q8_0_x16);
EDGELLM_AVX2_MATMUL(matmul_q4_k_x16);
EDGELLM_AVX2_MATMUL(matmul_q5_0_x16);
EDGELLM_AVX2_MATMUL(matmul_q6_k_x16);
#undef EDGELLM_AVX2_MATMUL

}  // namespace edgellm::kernels::avx2
