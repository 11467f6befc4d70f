// install_dotprod: the SDOT matmuls of the quantized weight types, including the repacked
// Q4_0 / Q5_0 / Q8_0 / Q4_K / Q6_K _X16 layouts and their BlockQ8_0S / BlockQ8_KS activation
// quantizers (Q6_K_X16 takes plain Q8_K: the NEON quantizer inherited below). Everything else
// (float matmuls, the other activation quantizers, vector ops) is inherited from the NEON table
// below it.
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
  t.matmul[type_slot(TT::Q4_0_X16)] = dotprod::matmul_q4_0_x16;
  t.matmul[type_slot(TT::Q8_0_X16)] = dotprod::matmul_q8_0_x16;
  t.matmul[type_slot(TT::Q4_K_X16)] = dotprod::matmul_q4_k_x16;
  t.matmul[type_slot(TT::Q5_0_X16)] = dotprod::matmul_q5_0_x16;
  t.matmul[type_slot(TT::Q6_K_X16)] = dotprod::matmul_q6_k_x16;
  t.quantize_activation[type_slot(TT::Q4_0_X16)] = dotprod::quantize_q8_0s;
  t.quantize_activation[type_slot(TT::Q8_0_X16)] = dotprod::quantize_q8_0s;
  t.quantize_activation[type_slot(TT::Q4_K_X16)] = dotprod::quantize_q8_ks;
  t.quantize_activation[type_slot(TT::Q5_0_X16)] = dotprod::quantize_q8_0s;
}

}  // namespace edgellm::kernels
