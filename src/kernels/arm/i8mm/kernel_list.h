// The i8mm (armv8.6-a+dotprod+i8mm+fp16) kernels of the dispatch table, one line each (the
// macros: kernels/kernel_list_begin.h): SMMLA computes a 2x2 block of (row, token) int8 dot
// products per instruction, so prefill tiles pair two weight rows with two tokens; single tokens
// and odd leftovers use the dotprod kernel of the same name. Everything else is inherited from
// the dotprod table below it.
#include "kernels/kernel_list_begin.h"

// matmul_quant.cpp
EDGELLM_MATMUL_LEGACY(Q4_0, matmul_q4_0, Legacy<arm::KQ4_0<NoDot>>)
EDGELLM_MATMUL_LEGACY(Q4_1, matmul_q4_1, Legacy<arm::KQ4_1<NoDot>>)
EDGELLM_MATMUL_LEGACY(Q5_0, matmul_q5_0, Legacy<arm::KQ5_0<NoDot>>)
EDGELLM_MATMUL_LEGACY(Q5_1, matmul_q5_1, Legacy<arm::KQ5_1<NoDot>>)
EDGELLM_MATMUL_LEGACY(Q8_0, matmul_q8_0, Legacy<arm::KQ8_0<NoDot>>)
EDGELLM_MATMUL_KQUANT(Q4_K, matmul_q4_k, KQuant4<arm::KQ4_K<NoDot>>)
EDGELLM_MATMUL_KQUANT(Q5_K, matmul_q5_k, KQuant4<arm::KQ5_K<NoDot>>)
EDGELLM_MATMUL_KQUANT(Q6_K, matmul_q6_k, KQuant6)

#include "kernels/kernel_list_end.h"
