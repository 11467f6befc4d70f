// install: the AMX table is the AVX-512 table with the packed prefill matmuls replaced and their
// tiled-input entries added (amx_kernels.h).
#include "kernels/kernel_table.h"
#include "kernels/x86/amx/amx_kernels.h"

namespace edgellm::kernels::amx {

void install(KernelTable& t) {
  t.matmul[type_slot(TensorType::Q4_0_X16)] = matmul_q4_0_x16;
  t.matmul[type_slot(TensorType::Q5_0_X16)] = matmul_q5_0_x16;
  t.matmul[type_slot(TensorType::Q8_0_X16)] = matmul_q8_0_x16;
  t.matmul[type_slot(TensorType::Q4_K_X16)] = matmul_q4_k_x16;
  t.matmul[type_slot(TensorType::Q5_K_X16)] = matmul_q5_k_x16;
  t.matmul[type_slot(TensorType::Q6_K_X16)] = matmul_q6_k_x16;
  t.tiled[type_slot(TensorType::Q4_0_X16)] = {tiled_bytes_q8_0s, tile_q8_0s, matmul_q4_0_x16_tiled};
  t.tiled[type_slot(TensorType::Q5_0_X16)] = {tiled_bytes_q8_0s, tile_q8_0s, matmul_q5_0_x16_tiled};
  t.tiled[type_slot(TensorType::Q8_0_X16)] = {tiled_bytes_q8_0s, tile_q8_0s, matmul_q8_0_x16_tiled};
  t.tiled[type_slot(TensorType::Q4_K_X16)] = {tiled_bytes_q8_ks, tile_q8_ks, matmul_q4_k_x16_tiled};
  t.tiled[type_slot(TensorType::Q5_K_X16)] = {tiled_bytes_q8_ks, tile_q8_ks, matmul_q5_k_x16_tiled};
  t.tiled[type_slot(TensorType::Q6_K_X16)] = {tiled_bytes_q8_k, tile_q8_k, matmul_q6_k_x16_tiled};
}

}  // namespace edgellm::kernels::amx
