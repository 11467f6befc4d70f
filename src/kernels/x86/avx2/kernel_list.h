// The AVX2 (+FMA, F16C, BMI2) kernels of the dispatch table, one line each (the macros:
// kernels/kernel_list_begin.h). Entries not listed stay scalar.
#include "kernels/kernel_list_begin.h"

// quantize.cpp: the activation row formats of each weight type (bit-identical to the scalar
// reference)
EDGELLM_QUANTIZE(Q4_0, quantize_q8_0)
EDGELLM_QUANTIZE(Q5_0, quantize_q8_0)
EDGELLM_QUANTIZE(Q8_0, quantize_q8_0)
EDGELLM_QUANTIZE(Q4_0_X16, quantize_q8_0s)
EDGELLM_QUANTIZE(Q8_0_X16, quantize_q8_0s)
EDGELLM_QUANTIZE(Q4_K_X16, quantize_q8_ks)
EDGELLM_QUANTIZE(Q5_K_X16, quantize_q8_ks)
EDGELLM_QUANTIZE(Q5_0_X16, quantize_q8_0s)
EDGELLM_QUANTIZE(Q4_1, quantize_q8_1)
EDGELLM_QUANTIZE(Q5_1, quantize_q8_1)
EDGELLM_QUANTIZE(Q4_K, quantize_q8_k)
EDGELLM_QUANTIZE(Q5_K, quantize_q8_k)
EDGELLM_QUANTIZE(Q6_K, quantize_q8_k)
EDGELLM_QUANTIZE(Q6_K_X16, quantize_q8_k)
// matmul_float.cpp (rows whose length is not a multiple of the YMM block use the scalar kernel)
EDGELLM_MATMUL_FLOAT(F32, matmul_f32, KF32)
EDGELLM_MATMUL_FLOAT(F16, matmul_f16, KF16)
EDGELLM_MATMUL_FLOAT(BF16, matmul_bf16, KBF16)
// matmul_legacy.cpp
EDGELLM_MATMUL_LEGACY(Q4_0, matmul_q4_0, KQ4_0)
EDGELLM_MATMUL_LEGACY(Q4_1, matmul_q4_1, KQ4_1)
EDGELLM_MATMUL_LEGACY(Q5_0, matmul_q5_0, KQ5_0)
EDGELLM_MATMUL_LEGACY(Q5_1, matmul_q5_1, KQ5_1)
EDGELLM_MATMUL_LEGACY(Q8_0, matmul_q8_0, KQ8_0)
// matmul_kquants.cpp
EDGELLM_MATMUL_KQUANT(Q4_K, matmul_q4_k, KQ4_K)
EDGELLM_MATMUL_KQUANT(Q5_K, matmul_q5_k, KQ5_K)
EDGELLM_MATMUL_KQUANT(Q6_K, matmul_q6_k, KQ6_K)
// matmul_packed.cpp
EDGELLM_MATMUL_PACKED(Q4_0_X16, matmul_q4_0_x16, Halves<Layout::kQ4_0>)
EDGELLM_MATMUL_PACKED(Q8_0_X16, matmul_q8_0_x16, Halves<Layout::kQ8_0>)
EDGELLM_MATMUL_PACKED(Q4_K_X16, matmul_q4_k_x16, Halves<Layout::kQ4_K>)
EDGELLM_MATMUL_PACKED(Q5_K_X16, matmul_q5_k_x16, Halves<Layout::kQ5_K>)
EDGELLM_MATMUL_PACKED(Q5_0_X16, matmul_q5_0_x16, Halves<Layout::kQ5_0>)
EDGELLM_MATMUL_PACKED(Q6_K_X16, matmul_q6_k_x16, Halves<Layout::kQ6_K>)
// vector_ops.cpp (dequantize_f16: F16 rows widened by F16C), gemm_f32.cpp
EDGELLM_DEQUANTIZE(F16, dequantize_f16)
EDGELLM_VECTOR_OP(dot_f32)
EDGELLM_VECTOR_OP(dot_f16_f32)
EDGELLM_VECTOR_OP(axpy_f32)
EDGELLM_VECTOR_OP(axpy_f16)
EDGELLM_VECTOR_OP(scale_f32)
EDGELLM_VECTOR_OP(add_f32)
EDGELLM_VECTOR_OP(fp32_to_fp16_row)
EDGELLM_VECTOR_OP(fp16_to_fp32_row)
EDGELLM_VECTOR_OP(rms_norm)
EDGELLM_VECTOR_OP(softmax)
EDGELLM_VECTOR_OP(gemm_f32)
EDGELLM_VECTOR_OP(silu_mul)

#include "kernels/kernel_list_end.h"
