// install_neon: the armv8-a baseline entries of the kernel table. NEON is mandatory on ARM64,
// so every matmul, the activation quantizers and every vector op are specialised here; the
// dotprod and i8mm tables start from this one.
#include "kernels/arm/arm_kernels.h"
#include "kernels/kernel_table.h"

namespace edgellm::kernels {

void install_neon(KernelTable& t) {
  using TT = TensorType;
  t.quantize_activation[type_slot(TT::Q4_0)] = neon::quantize_q8_0;
  t.quantize_activation[type_slot(TT::Q5_0)] = neon::quantize_q8_0;
  t.quantize_activation[type_slot(TT::Q8_0)] = neon::quantize_q8_0;
  t.quantize_activation[type_slot(TT::Q4_1)] = neon::quantize_q8_1;
  t.quantize_activation[type_slot(TT::Q5_1)] = neon::quantize_q8_1;
  t.quantize_activation[type_slot(TT::Q4_K)] = neon::quantize_q8_k;
  t.quantize_activation[type_slot(TT::Q5_K)] = neon::quantize_q8_k;
  t.quantize_activation[type_slot(TT::Q6_K)] = neon::quantize_q8_k;
  t.quantize_activation[type_slot(TT::Q6_K_X16)] = neon::quantize_q8_k;
  t.matmul[type_slot(TT::F32)] = neon::matmul_f32;
  t.matmul[type_slot(TT::F16)] = neon::matmul_f16;
  t.matmul[type_slot(TT::BF16)] = neon::matmul_bf16;
  t.matmul[type_slot(TT::Q4_0)] = neon::matmul_q4_0;
  t.matmul[type_slot(TT::Q4_1)] = neon::matmul_q4_1;
  t.matmul[type_slot(TT::Q5_0)] = neon::matmul_q5_0;
  t.matmul[type_slot(TT::Q5_1)] = neon::matmul_q5_1;
  t.matmul[type_slot(TT::Q8_0)] = neon::matmul_q8_0;
  t.matmul[type_slot(TT::Q4_K)] = neon::matmul_q4_k;
  t.matmul[type_slot(TT::Q5_K)] = neon::matmul_q5_k;
  t.matmul[type_slot(TT::Q6_K)] = neon::matmul_q6_k;
  t.dot_f32 = neon::dot_f32;
  t.dot_f16_f32 = neon::dot_f16_f32;
  t.axpy_f32 = neon::axpy_f32;
  t.axpy_f16 = neon::axpy_f16;
  t.scale_f32 = neon::scale_f32;
  t.add_f32 = neon::add_f32;
  t.fp32_to_fp16_row = neon::fp32_to_fp16_row;
  t.fp16_to_fp32_row = neon::fp16_to_fp32_row;
  t.rms_norm = neon::rms_norm;
  t.softmax = neon::softmax;
  t.dequantize[type_slot(TT::F16)] = neon::dequantize_f16;
  t.gemm_f32 = neon::gemm_f32;
  t.silu_mul = neon::silu_mul;
}

}  // namespace edgellm::kernels
