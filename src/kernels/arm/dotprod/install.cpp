// install_dotprod: the SDOT matmuls of the quantized weight types. Everything else (float
// matmuls, activation quantizers, vector ops) is inherited from the NEON table below it.
#include "kernels/arm/arm_kernels.h"
#include "kernels/kernel_table.h"

namespace edgellm::kernels {

void install_dotprod(KernelTable& t) {
  using TT = TensorType;
  t.matmul[type_slot(TT::Q4_0)] = dotprod::matmul_q4_0;
  t.matmul[type_slot(TT::Q4_1)] = dotprod::matmul_q4_1;
  t.matmul[type_slot(TT::Q5_0)] = dotprod::matmul_q5_0;
  t.matmul[type_slot(TT::Q5_1)] = dotprod::matmul_q5_1;
  t.matmul[type_slot(TT::Q8_0)] = dotprod::matmul_q8_0;
  t.matmul[type_slot(TT::Q4_K)] = dotprod::matmul_q4_k;
  t.matmul[type_slot(TT::Q5_K)] = dotprod::matmul_q5_k;
  t.matmul[type_slot(TT::Q6_K)] = dotprod::matmul_q6_k;
}

}  // namespace edgellm::kernels
