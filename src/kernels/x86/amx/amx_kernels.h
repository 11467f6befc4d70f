// Internal: the AMX (tile) kernels. The AMX table is the AVX-512 table with the prefill matmuls
// of the 16-row interleaved Q4_0, Q5_0, Q8_0 (matmul_legacy_amx.cpp), Q4_K, Q5_K and Q6_K
// (matmul_kquants_amx.cpp) weights replaced; their batches of fewer than 32 tokens, and
// everything else, run the AVX-512 kernels. Each also reads a tiled copy of its input made once
// by the caller (kernels.h: tile_activations).
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

// The tiled prefill inputs (kernel_table.h: TiledMatmul), one layout per activation type:
// Q8_0_S (Q4_0, Q5_0, Q8_0), Q8_K_S (Q4_K, Q5_K), Q8_K (Q6_K).
size_t tiled_bytes_q8_0s(int64_t n, int64_t n_tokens);
size_t tiled_bytes_q8_ks(int64_t n, int64_t n_tokens);
size_t tiled_bytes_q8_k(int64_t n, int64_t n_tokens);
void tile_q8_0s(EDGELLM_TILE_PARAMS);
void tile_q8_ks(EDGELLM_TILE_PARAMS);
void tile_q8_k(EDGELLM_TILE_PARAMS);
void matmul_q4_0_x16_tiled(EDGELLM_TILED_MATMUL_PARAMS);
void matmul_q5_0_x16_tiled(EDGELLM_TILED_MATMUL_PARAMS);
void matmul_q8_0_x16_tiled(EDGELLM_TILED_MATMUL_PARAMS);
void matmul_q4_k_x16_tiled(EDGELLM_TILED_MATMUL_PARAMS);
void matmul_q5_k_x16_tiled(EDGELLM_TILED_MATMUL_PARAMS);
void matmul_q6_k_x16_tiled(EDGELLM_TILED_MATMUL_PARAMS);

// Overwrites the entries above in a copy of the AVX-512 table.
void install(KernelTable& t);

}  // namespace edgellm::kernels::amx
