// install: the AMX table is the AVX-512 table with the packed prefill matmuls replaced
// (amx_kernels.h).
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
}

}  // namespace edgellm::kernels::amx
