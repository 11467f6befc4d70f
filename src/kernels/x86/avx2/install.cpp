// install_avx2: the AVX2 entries of the kernel table (entries not set here stay scalar).
#include "kernels/kernel_table.h"
#include "kernels/x86/avx2/avx2_kernels.h"

namespace edgellm::kernels {

void install_avx2(KernelTable& t) {
  using TT = TensorType;
  t.quantize_activation[type_slot(TT::Q4_0)] = avx2::quantize_q8_0;
  t.quantize_activation[type_slot(TT::Q5_0)] = avx2::quantize_q8_0;
  t.quantize_activation[type_slot(TT::Q8_0)] = avx2::quantize_q8_0;
  t.quantize_activation[type_slot(TT::Q4_0_X16)] = avx2::quantize_q8_0s;
  t.quantize_activation[type_slot(TT::Q8_0_X16)] = avx2::quantize_q8_0s;
  t.quantize_activation[type_slot(TT::Q4_K_X16)] = avx2::quantize_q8_ks;
  t.quantize_activation[type_slot(TT::Q5_0_X16)] = avx2::quantize_q8_0s;
  t.quantize_activation[type_slot(TT::Q4_1)] = avx2::quantize_q8_1;
  t.quantize_activation[type_slot(TT::Q5_1)] = avx2::quantize_q8_1;
  t.quantize_activation[type_slot(TT::Q4_K)] = avx2::quantize_q8_k;
  t.quantize_activation[type_slot(TT::Q5_K)] = avx2::quantize_q8_k;
  t.quantize_activation[type_slot(TT::Q6_K)] = avx2::quantize_q8_k;
  t.quantize_activation[type_slot(TT::Q6_K_X16)] = avx2::quantize_q8_k;
  t.matmul[type_slot(TT::F32)] = avx2::matmul_f32;
  t.matmul[type_slot(TT::F16)] = avx2::matmul_f16;
  t.matmul[type_slot(TT::BF16)] = avx2::matmul_bf16;
  t.matmul[type_slot(TT::Q4_0)] = avx2::matmul_q4_0;
  t.matmul[type_slot(TT::Q4_1)] = avx2::matmul_q4_1;
  t.matmul[type_slot(TT::Q5_0)] = avx2::matmul_q5_0;
  t.matmul[type_slot(TT::Q5_1)] = avx2::matmul_q5_1;
  t.matmul[type_slot(TT::Q8_0)] = avx2::matmul_q8_0;
  t.matmul[type_slot(TT::Q4_K)] = avx2::matmul_q4_k;
  t.matmul[type_slot(TT::Q5_K)] = avx2::matmul_q5_k;
  t.matmul[type_slot(TT::Q6_K)] = avx2::matmul_q6_k;
  t.matmul[type_slot(TT::Q4_0_X16)] = avx2::matmul_q4_0_x16;
  t.matmul[type_slot(TT::Q8_0_X16)] = avx2::matmul_q8_0_x16;
  t.matmul[type_slot(TT::Q4_K_X16)] = avx2::matmul_q4_k_x16;
  t.matmul[type_slot(TT::Q5_0_X16)] = avx2::matmul_q5_0_x16;
  t.matmul[type_slot(TT::Q6_K_X16)] = avx2::matmul_q6_k_x16;
  t.dot_f32 = avx2::dot_f32;
  t.dot_f16_f32 = avx2::dot_f16_f32;
  t.axpy_f32 = avx2::axpy_f32;
  t.axpy_f16 = avx2::axpy_f16;
  t.scale_f32 = avx2::scale_f32;
  t.add_f32 = avx2::add_f32;
  t.fp32_to_fp16_row = avx2::fp32_to_fp16_row;
  t.fp16_to_fp32_row = avx2::fp16_to_fp32_row;
  t.rms_norm = avx2::rms_norm;
  t.softmax = avx2::softmax;
  t.dequantize[type_slot(TT::F16)] = avx2::dequantize_f16;
  t.gemm_f32 = avx2::gemm_f32;
  t.silu_mul = avx2::silu_mul;
}

}  // namespace edgellm::kernels
