// install_avx512: the AVX-512 (F/BW/VL/DQ + VNNI) entries of the kernel table. Entries not set
// here keep the AVX2 version (the AVX-512 table starts as a copy of the AVX2 table), e.g. the
// activation quantizers and most element-wise ops, which are memory-bound at AVX2 width already
// (softmax is not: prompt attention at depth runs it over every score, so it has its own).
#include "kernels/kernel_table.h"
#include "kernels/x86/avx512/avx512_kernels.h"

namespace edgellm::kernels {

void install_avx512(KernelTable& t) {
  using TT = TensorType;
  t.matmul[type_slot(TT::F32)] = avx512::matmul_f32;
  t.matmul[type_slot(TT::F16)] = avx512::matmul_f16;
  t.matmul[type_slot(TT::BF16)] = avx512::matmul_bf16;
  t.matmul[type_slot(TT::Q4_0)] = avx512::matmul_q4_0;
  t.matmul[type_slot(TT::Q4_1)] = avx512::matmul_q4_1;
  t.matmul[type_slot(TT::Q5_0)] = avx512::matmul_q5_0;
  t.matmul[type_slot(TT::Q5_1)] = avx512::matmul_q5_1;
  t.matmul[type_slot(TT::Q8_0)] = avx512::matmul_q8_0;
  t.matmul[type_slot(TT::Q4_K)] = avx512::matmul_q4_k;
  t.matmul[type_slot(TT::Q5_K)] = avx512::matmul_q5_k;
  t.matmul[type_slot(TT::Q6_K)] = avx512::matmul_q6_k;
  t.matmul[type_slot(TT::Q4_0_X16)] = avx512::matmul_q4_0_x16;
  t.matmul[type_slot(TT::Q8_0_X16)] = avx512::matmul_q8_0_x16;
  t.matmul[type_slot(TT::Q4_K_X16)] = avx512::matmul_q4_k_x16;
  t.matmul[type_slot(TT::Q5_0_X16)] = avx512::matmul_q5_0_x16;
  t.matmul[type_slot(TT::Q6_K_X16)] = avx512::matmul_q6_k_x16;
  t.dot_f32 = avx512::dot_f32;
  t.dot_f16_f32 = avx512::dot_f16_f32;
  t.axpy_f32 = avx512::axpy_f32;
  t.axpy_f16 = avx512::axpy_f16;
  t.gemm_f32 = avx512::gemm_f32;
  t.softmax = avx512::softmax;
}

}  // namespace edgellm::kernels
