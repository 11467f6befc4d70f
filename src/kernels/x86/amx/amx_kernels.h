// Internal: the AMX (tile) kernels. The AMX table is the AVX-512 table with the prefill matmuls
// of the 16-row interleaved Q4_0, Q5_0, Q8_0 (matmul_legacy_amx.cpp), Q4_K, Q5_K and Q6_K
// (matmul_kquants_amx.cpp) weights replaced; their batches of fewer than 32 tokens, and
// everything else, run the AVX-512 kernels.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernel_table.h"

namespace edgellm::kernels::amx {

void matmul_q4_0_x16(EDGELLM_MATMUL_PARAMS);
void matmul_q5_0_x16(EDGELLM_MATMUL_PARAMS);
void matmul_q8_0_x16(EDGELLM_MATMUL_PARAMS);
void matmul_q4_k_x16(EDGELLM_MATMUL_PARAMS);
void matmul_q5_k_x16(EDGELLM_MATMUL_PARAMS);
void matmul_q6_k_x16(EDGELLM_MATMUL_PARAMS);

// Overwrites the entries above in a copy of the AVX-512 table.
void install(KernelTable& t);

}  // namespace edgellm::kernels::amx
