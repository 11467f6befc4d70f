// The NEON (armv8-a baseline) kernels of the dispatch table, one line each (the macros:
// kernels/kernel_list_begin.h). NEON is mandatory on ARM64, so every matmul, the activation
// quantizers and every vector op are specialised; the dotprod and i8mm tables start from this one.
#include "kernels/kernel_list_begin.h"

// quantize.cpp: the activation row formats of each weight type (bit-identical to the scalar
// reference)
EDGELLM_QUANTIZE(Q4_0, quantize_q8_0)
EDGELLM_QUANTIZE(Q5_0, quantize_q8_0)
EDGELLM_QUANTIZE(Q8_0, quantize_q8_0)
EDGELLM_QUANTIZE(Q4_1, quantize_q8_1)
EDGELLM_QUANTIZE(Q5_1, quantize_q8_1)
EDGELLM_QUANTIZE(Q4_K, quantize_q8_k)
EDGELLM_QUANTIZE(Q5_K, quantize_q8_k)
EDGELLM_QUANTIZE(Q6_K, quantize_q8_k)
EDGELLM_QUANTIZE(Q6_K_X16, quantize_q8_k)
// matmul_float.cpp (rows whose length is not a multiple of the NEON block use the scalar kernel)
EDGELLM_MATMUL_FLOAT(F32, matmul_f32, KF32)
EDGELLM_MATMUL_FLOAT(F16, matmul_f16, KF16)
EDGELLM_MATMUL_FLOAT(BF16, matmul_bf16, KBF16)
// matmul_quant.cpp: widening multiplies + pairwise adds
EDGELLM_MATMUL_LEGACY(Q4_0, matmul_q4_0, arm::KQ4_0<DotNeon>)
EDGELLM_MATMUL_LEGACY(Q4_1, matmul_q4_1, arm::KQ4_1<DotNeon>)
EDGELLM_MATMUL_LEGACY(Q5_0, matmul_q5_0, arm::KQ5_0<DotNeon>)
EDGELLM_MATMUL_LEGACY(Q5_1, matmul_q5_1, arm::KQ5_1<DotNeon>)
EDGELLM_MATMUL_LEGACY(Q8_0, matmul_q8_0, arm::KQ8_0<DotNeon>)
EDGELLM_MATMUL_KQUANT(Q4_K, matmul_q4_k, arm::KQ4_K<DotNeon>)
EDGELLM_MATMUL_KQUANT(Q5_K, matmul_q5_k, arm::KQ5_K<DotNeon>)
EDGELLM_MATMUL_KQUANT(Q6_K, matmul_q6_k, arm::KQ6_K<DotNeon>)
// vector_ops.cpp (dequantize_f16: the F16 dequantize entry), gemm_f32.cpp
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
