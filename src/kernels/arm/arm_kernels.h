// Internal: the ARM64 kernels that install_neon / install_dotprod / install_i8mm put into the
// dispatch table (kernel_table.h). Each namespace is compiled with its own -march flags
// (CMakeLists.txt): neon = armv8-a baseline, dotprod = armv8.2-a+dotprod+fp16,
// i8mm = armv8.6-a+dotprod+i8mm+fp16. Only dispatch.cpp calls the install functions, and only
// after cpu_features() confirmed the CPU has the extension.
#pragma once

#include <cstddef>
#include <cstdint>

namespace edgellm::kernels {

struct KernelTable;

void install_neon(KernelTable& table);
void install_dotprod(KernelTable& table);
void install_i8mm(KernelTable& table);

#define EDGELLM_ARM_MATMUL(name)                                                                             \
  void name(int64_t n, const void* w, size_t w_row_bytes, int64_t r0, int64_t r1, const void* xq, size_t xq_row_bytes, \
            int64_t n_tokens, float* y, int64_t y_stride)

namespace neon {
float dot_f32(const float* a, const float* b, int64_t n);
float dot_f16_f32(const uint16_t* a, const float* b, int64_t n);
void axpy_f32(float a, const float* x, float* y, int64_t n);
void axpy_f16(float a, const uint16_t* x, float* y, int64_t n);
void scale_f32(float* x, float s, int64_t n);
void add_f32(const float* a, const float* b, float* y, int64_t n);
void fp32_to_fp16_row(const float* x, uint16_t* y, int64_t n);
void fp16_to_fp32_row(const uint16_t* x, float* y, int64_t n);
void dequantize_f16(const void* src, float* dst, int64_t n);  // the F16 dequantize entry
void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps);
void softmax(float* x, int64_t n);
void gemm_f32(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
              bool accumulate, float* c, int64_t ldc);
void silu_mul(const float* gate, const float* up, float* out, int64_t n);

// Activation quantizers (bit-identical to the scalar reference).
void quantize_q8_0(const float* x, void* dst, int64_t n);
void quantize_q8_1(const float* x, void* dst, int64_t n);
void quantize_q8_k(const float* x, void* dst, int64_t n);

EDGELLM_ARM_MATMUL(matmul_f32);
EDGELLM_ARM_MATMUL(matmul_f16);
EDGELLM_ARM_MATMUL(matmul_bf16);
EDGELLM_ARM_MATMUL(matmul_q4_0);
EDGELLM_ARM_MATMUL(matmul_q4_1);
EDGELLM_ARM_MATMUL(matmul_q5_0);
EDGELLM_ARM_MATMUL(matmul_q5_1);
EDGELLM_ARM_MATMUL(matmul_q8_0);
EDGELLM_ARM_MATMUL(matmul_q4_k);
EDGELLM_ARM_MATMUL(matmul_q5_k);
EDGELLM_ARM_MATMUL(matmul_q6_k);
}  // namespace neon

// SDOT replaces the widening-multiply + pairwise-add sequence of the integer block products.
namespace dotprod {
EDGELLM_ARM_MATMUL(matmul_q4_0);
EDGELLM_ARM_MATMUL(matmul_q4_1);
EDGELLM_ARM_MATMUL(matmul_q5_0);
EDGELLM_ARM_MATMUL(matmul_q5_1);
EDGELLM_ARM_MATMUL(matmul_q8_0);
EDGELLM_ARM_MATMUL(matmul_q4_k);
EDGELLM_ARM_MATMUL(matmul_q5_k);
EDGELLM_ARM_MATMUL(matmul_q6_k);
// Repacked 16-row interleaved weights (kernels/repack.h): SDOT by lane, 4 rows per instruction.
EDGELLM_ARM_MATMUL(matmul_q4_0_x16);
EDGELLM_ARM_MATMUL(matmul_q5_0_x16);
EDGELLM_ARM_MATMUL(matmul_q8_0_x16);
EDGELLM_ARM_MATMUL(matmul_q4_k_x16);
EDGELLM_ARM_MATMUL(matmul_q6_k_x16);
// BlockQ8_0S / BlockQ8_KS activations of the repacked weights (bit-identical to the scalar
// reference).
void quantize_q8_0s(const float* x, void* dst, int64_t n);
void quantize_q8_ks(const float* x, void* dst, int64_t n);
}  // namespace dotprod

// SMMLA computes a 2x2 block of (row, token) int8 dot products per instruction: prefill tiles
// pair two weight rows with two tokens; single tokens and odd leftovers use the dotprod kernels.
namespace i8mm {
EDGELLM_ARM_MATMUL(matmul_q4_0);
EDGELLM_ARM_MATMUL(matmul_q4_1);
EDGELLM_ARM_MATMUL(matmul_q5_0);
EDGELLM_ARM_MATMUL(matmul_q5_1);
EDGELLM_ARM_MATMUL(matmul_q8_0);
EDGELLM_ARM_MATMUL(matmul_q4_k);
EDGELLM_ARM_MATMUL(matmul_q5_k);
EDGELLM_ARM_MATMUL(matmul_q6_k);
}  // namespace i8mm

#undef EDGELLM_ARM_MATMUL

}  // namespace edgellm::kernels
