// Internal: the portable reference kernels. Every SIMD path is tested against these, and
// install_scalar() puts them into the dispatch table. n is always a multiple of the block size
// (checked by kernels.cpp before dispatch).
#pragma once

#include <cstddef>
#include <cstdint>

namespace edgellm {
struct BlockQ8_K;
struct BlockQ8_KS;
}  // namespace edgellm

namespace edgellm::kernels::scalar {

// ---- dequantize (src: n / block_size blocks) -> n floats
void dequantize_f32(const void* src, float* dst, int64_t n);
void dequantize_f16(const void* src, float* dst, int64_t n);
void dequantize_bf16(const void* src, float* dst, int64_t n);
void dequantize_q4_0(const void* src, float* dst, int64_t n);
void dequantize_q4_1(const void* src, float* dst, int64_t n);
void dequantize_q5_0(const void* src, float* dst, int64_t n);
void dequantize_q5_1(const void* src, float* dst, int64_t n);
void dequantize_q8_0(const void* src, float* dst, int64_t n);
void dequantize_q8_1(const void* src, float* dst, int64_t n);
void dequantize_q4_k(const void* src, float* dst, int64_t n);
void dequantize_q5_k(const void* src, float* dst, int64_t n);
void dequantize_q6_k(const void* src, float* dst, int64_t n);
void dequantize_q8_k(const void* src, float* dst, int64_t n);

// ---- reference quantizers (ggml-compatible bytes for the legacy types)
void quantize_f32(const float* src, void* dst, int64_t n);
void quantize_f16(const float* src, void* dst, int64_t n);
void quantize_bf16(const float* src, void* dst, int64_t n);
void quantize_q4_0(const float* src, void* dst, int64_t n);
void quantize_q4_1(const float* src, void* dst, int64_t n);
void quantize_q5_0(const float* src, void* dst, int64_t n);
void quantize_q5_1(const float* src, void* dst, int64_t n);
void quantize_q8_0(const float* src, void* dst, int64_t n);
void quantize_q8_1(const float* src, void* dst, int64_t n);
void quantize_q4_k(const float* src, void* dst, int64_t n);
void quantize_q5_k(const float* src, void* dst, int64_t n);
void quantize_q6_k(const float* src, void* dst, int64_t n);
void quantize_q8_k(const float* src, void* dst, int64_t n);

// ---- dot of one weight row with one activation row (activation in the format the weight
// type multiplies with, see kernels::activation_type)
float vec_dot_f32(int64_t n, const void* w, const void* x);
float vec_dot_f16(int64_t n, const void* w, const void* x);
float vec_dot_bf16(int64_t n, const void* w, const void* x);
float vec_dot_q4_0(int64_t n, const void* w, const void* x);
float vec_dot_q4_1(int64_t n, const void* w, const void* x);
float vec_dot_q5_0(int64_t n, const void* w, const void* x);
float vec_dot_q5_1(int64_t n, const void* w, const void* x);
float vec_dot_q8_0(int64_t n, const void* w, const void* x);
float vec_dot_q4_k(int64_t n, const void* w, const void* x);
float vec_dot_q5_k(int64_t n, const void* w, const void* x);
float vec_dot_q6_k(int64_t n, const void* w, const void* x);

using VecDotFn = float (*)(int64_t n, const void* w, const void* x);

// ---- 16-row interleaved weights (kernels/repack.h) and their BlockQ8_0S activations
void quantize_q8_0s(const float* src, void* dst, int64_t n);
void matmul_q4_0_x16(int64_t n, const void* w, size_t w_row_bytes, int64_t r0, int64_t r1, const void* xq,
                     size_t xq_row_bytes, int64_t n_tokens, float* y, int64_t y_stride);
void matmul_q8_0_x16(int64_t n, const void* w, size_t w_row_bytes, int64_t r0, int64_t r1, const void* xq,
                     size_t xq_row_bytes, int64_t n_tokens, float* y, int64_t y_stride);
void quantize_q8_ks(const float* src, void* dst, int64_t n);
// The Q8_K_S block of a Q8_K block (shared by the SIMD quantizers, which produce Q8_K).
void q8_k_to_q8_ks(const BlockQ8_K& q, BlockQ8_KS& out);
void matmul_q4_k_x16(int64_t n, const void* w, size_t w_row_bytes, int64_t r0, int64_t r1, const void* xq,
                     size_t xq_row_bytes, int64_t n_tokens, float* y, int64_t y_stride);
void matmul_q5_k_x16(int64_t n, const void* w, size_t w_row_bytes, int64_t r0, int64_t r1, const void* xq,
                     size_t xq_row_bytes, int64_t n_tokens, float* y, int64_t y_stride);
void matmul_q6_k_x16(int64_t n, const void* w, size_t w_row_bytes, int64_t r0, int64_t r1, const void* xq,
                     size_t xq_row_bytes, int64_t n_tokens, float* y, int64_t y_stride);
void matmul_q5_0_x16(int64_t n, const void* w, size_t w_row_bytes, int64_t r0, int64_t r1, const void* xq,
                     size_t xq_row_bytes, int64_t n_tokens, float* y, int64_t y_stride);

// Row-by-token loop over a vec_dot: the matmul reference.
void matmul_with(VecDotFn dot, int64_t n, const void* w, size_t w_row_bytes, int64_t r0, int64_t r1, const void* xq,
                 size_t xq_row_bytes, int64_t n_tokens, float* y, int64_t y_stride);

// ---- vector ops
float dot_f32(const float* a, const float* b, int64_t n);
float dot_f16_f32(const uint16_t* a, const float* b, int64_t n);
void axpy_f32(float a, const float* x, float* y, int64_t n);
void axpy_f16(float a, const uint16_t* x, float* y, int64_t n);
void scale_f32(float* x, float s, int64_t n);
void add_f32(const float* a, const float* b, float* y, int64_t n);
void fp32_to_fp16_row(const float* x, uint16_t* y, int64_t n);
void fp16_to_fp32_row(const uint16_t* x, float* y, int64_t n);
void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps);
void softmax(float* x, int64_t n);
void gemm_f32(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
              bool accumulate, float* c, int64_t ldc);
void silu_mul(const float* gate, const float* up, float* out, int64_t n);

}  // namespace edgellm::kernels::scalar
