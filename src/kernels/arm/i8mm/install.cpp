// install_i8mm: the SMMLA matmuls of the quantized weight types (2 rows x 2 tokens per
// instruction for prefill; decode and leftovers go through the dotprod kernels). Everything else
// is inherited from the dotprod table below it.
#include "kernels/arm/arm_kernels.h"
#include "kernels/kernel_table.h"

namespace edgellm::kernels {

void install_i8mm(KernelTable& t) {
  using TT = TensorType;
  t.matmul[type_slot(TT::Q4_0)] = i8mm::matmul_q4_0;
  t.matmul[type_slot(TT::Q4_1)] = i8mm::matmul_q4_1;
  t.matmul[type_slot(TT::Q5_0)] = i8mm::matmul_q5_0;
  t.matmul[type_slot(TT::Q5_1)] = i8mm::matmul_q5_1;
  t.matmul[type_slot(TT::Q8_0)] = i8mm::matmul_q8_0;
  t.matmul[type_slot(TT::Q4_K)] = i8mm::matmul_q4_k;
  t.matmul[type_slot(TT::Q5_K)] = i8mm::matmul_q5_k;
  t.matmul[type_slot(TT::Q6_K)] = i8mm::matmul_q6_k;
}

}  // namespace edgellm::kernels
