// The AVX-512 (F/BW/VL/DQ + VNNI) kernels of the dispatch table, one line each (the macros:
// kernels/kernel_list_begin.h). Entries not listed keep the AVX2 version: the AVX-512 table starts
// as a copy of the AVX2 table, e.g. the activation quantizers and most element-wise ops, which
// are memory-bound at AVX2 width already (softmax and silu_mul are not: prompt attention at depth
// runs softmax over every score, and silu_mul's exp and divide are compute, so they have their own).
#include "kernels/kernel_list_begin.h"

// matmul_float.cpp (rows whose length is not a multiple of the ZMM block use the AVX2 kernel)
EDGELLM_MATMUL_FLOAT(F32, matmul_f32, KF32)
EDGELLM_MATMUL_FLOAT(F16, matmul_f16, KF16)
EDGELLM_MATMUL_FLOAT(BF16, matmul_bf16, KBF16)
// matmul_legacy.cpp (an odd number of 32-element blocks uses the AVX2 kernel)
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
EDGELLM_MATMUL_PACKED(Q4_0_X16, matmul_q4_0_x16, Legacy<Legacy4::kQ4_0>)
EDGELLM_MATMUL_PACKED(Q8_0_X16, matmul_q8_0_x16, Legacy<Legacy4::kQ8_0>)
EDGELLM_MATMUL_PACKED(Q4_K_X16, matmul_q4_k_x16, Q4K)
EDGELLM_MATMUL_PACKED(Q5_K_X16, matmul_q5_k_x16, Q5K)
EDGELLM_MATMUL_PACKED(Q5_0_X16, matmul_q5_0_x16, Legacy<Legacy4::kQ5_0>)
EDGELLM_MATMUL_PACKED(Q6_K_X16, matmul_q6_k_x16, Q6K)
// vector_ops.cpp, gemm_f32.cpp
EDGELLM_VECTOR_OP(dot_f32)
EDGELLM_VECTOR_OP(dot_f16_f32)
EDGELLM_VECTOR_OP(axpy_f32)
EDGELLM_VECTOR_OP(axpy_f16)
EDGELLM_VECTOR_OP(gemm_f32)
EDGELLM_VECTOR_OP(softmax)
EDGELLM_VECTOR_OP(silu_mul)

#include "kernels/kernel_list_end.h"
