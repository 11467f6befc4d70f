// The dotprod (armv8.2-a+dotprod+fp16) kernels of the dispatch table, one line each (the macros:
// kernels/kernel_list_begin.h): SDOT replaces the widening-multiply + pairwise-add sequence of
// the integer block products. Everything else (float matmuls, the other activation quantizers,
// vector ops) is inherited from the NEON table below it.
#include "kernels/kernel_list_begin.h"

// matmul_quant.cpp
EDGELLM_MATMUL_LEGACY(Q4_0, matmul_q4_0, arm::KQ4_0<DotSdot>)
EDGELLM_MATMUL_LEGACY(Q4_1, matmul_q4_1, arm::KQ4_1<DotSdot>)
EDGELLM_MATMUL_LEGACY(Q5_0, matmul_q5_0, arm::KQ5_0<DotSdot>)
EDGELLM_MATMUL_LEGACY(Q5_1, matmul_q5_1, arm::KQ5_1<DotSdot>)
EDGELLM_MATMUL_LEGACY(Q8_0, matmul_q8_0, arm::KQ8_0<DotSdot>)
EDGELLM_MATMUL_KQUANT(Q4_K, matmul_q4_k, arm::KQ4_K<DotSdot>)
EDGELLM_MATMUL_KQUANT(Q5_K, matmul_q5_k, arm::KQ5_K<DotSdot>)
EDGELLM_MATMUL_KQUANT(Q6_K, matmul_q6_k, arm::KQ6_K<DotSdot>)
// matmul_packed.cpp: repacked 16-row interleaved weights (kernels/repack.h), SDOT by lane, 4 rows
// per instruction
EDGELLM_MATMUL_PACKED(Q4_0_X16, matmul_q4_0_x16, Legacy<Block32::kQ4_0>)
EDGELLM_MATMUL_PACKED(Q8_0_X16, matmul_q8_0_x16, Legacy<Block32::kQ8_0>)
EDGELLM_MATMUL_PACKED(Q4_K_X16, matmul_q4_k_x16, KQuant4)
EDGELLM_MATMUL_PACKED(Q5_K_X16, matmul_q5_k_x16, KQuant5)
EDGELLM_MATMUL_PACKED(Q5_0_X16, matmul_q5_0_x16, Legacy<Block32::kQ5_0>)
EDGELLM_MATMUL_PACKED(Q6_K_X16, matmul_q6_k_x16, KQuant6)
// quantize_packed.cpp: their BlockQ8_0S / BlockQ8_KS activations (bit-identical to the scalar
// reference; Q6_K_X16 takes plain Q8_K, the NEON quantizer inherited)
EDGELLM_QUANTIZE(Q4_0_X16, quantize_q8_0s)
EDGELLM_QUANTIZE(Q8_0_X16, quantize_q8_0s)
EDGELLM_QUANTIZE(Q4_K_X16, quantize_q8_ks)
EDGELLM_QUANTIZE(Q5_K_X16, quantize_q8_ks)
EDGELLM_QUANTIZE(Q5_0_X16, quantize_q8_0s)

#include "kernels/kernel_list_end.h"
