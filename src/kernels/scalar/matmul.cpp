// The scalar reference table: every entry of KernelTable, built from the reference kernels.
// matmul is a plain rows x tokens loop over the per-type vec_dot.
#include "kernels/kernel_table.h"
#include "kernels/scalar/scalar_kernels.h"

namespace edgellm::kernels {
namespace {

template <scalar::VecDotFn Dot>
void matmul_ref(int64_t n, const void* w, size_t w_row_bytes, int64_t r0, int64_t r1, const void* xq,
                size_t xq_row_bytes, int64_t n_tokens, float* y, int64_t y_stride) {
  scalar::matmul_with(Dot, n, w, w_row_bytes, r0, r1, xq, xq_row_bytes, n_tokens, y, y_stride);
}

// Float weights multiply F32 activations: the activation "quantization" is a copy.
void copy_f32(const float* x, void* xq, int64_t n) { scalar::quantize_f32(x, xq, n); }

}  // namespace

void install_scalar(KernelTable& t) {
  using TT = TensorType;
  const auto set_dq = [&](TT type, DequantizeFn f) { t.dequantize[type_slot(type)] = f; };
  set_dq(TT::F32, scalar::dequantize_f32);
  set_dq(TT::F16, scalar::dequantize_f16);
  set_dq(TT::BF16, scalar::dequantize_bf16);
  set_dq(TT::Q4_0, scalar::dequantize_q4_0);
  set_dq(TT::Q4_1, scalar::dequantize_q4_1);
  set_dq(TT::Q5_0, scalar::dequantize_q5_0);
  set_dq(TT::Q5_1, scalar::dequantize_q5_1);
  set_dq(TT::Q8_0, scalar::dequantize_q8_0);
  set_dq(TT::Q8_1, scalar::dequantize_q8_1);
  set_dq(TT::Q4_K, scalar::dequantize_q4_k);
  set_dq(TT::Q5_K, scalar::dequantize_q5_k);
  set_dq(TT::Q6_K, scalar::dequantize_q6_k);
  set_dq(TT::Q8_K, scalar::dequantize_q8_k);

  const auto set_act = [&](TT type, QuantizeFn f) { t.quantize_activation[type_slot(type)] = f; };
  set_act(TT::F32, copy_f32);
  set_act(TT::F16, copy_f32);
  set_act(TT::BF16, copy_f32);
  set_act(TT::Q4_0, scalar::quantize_q8_0);
  set_act(TT::Q5_0, scalar::quantize_q8_0);
  set_act(TT::Q8_0, scalar::quantize_q8_0);
  set_act(TT::Q4_1, scalar::quantize_q8_1);
  set_act(TT::Q5_1, scalar::quantize_q8_1);
  set_act(TT::Q4_K, scalar::quantize_q8_k);
  set_act(TT::Q5_K, scalar::quantize_q8_k);
  set_act(TT::Q6_K, scalar::quantize_q8_k);
  set_act(TT::Q4_0_X16, scalar::quantize_q8_0s);
  set_act(TT::Q8_0_X16, scalar::quantize_q8_0s);
  set_act(TT::Q4_K_X16, scalar::quantize_q8_ks);
  set_act(TT::Q5_K_X16, scalar::quantize_q8_ks);
  set_act(TT::Q5_0_X16, scalar::quantize_q8_0s);
  set_act(TT::Q6_K_X16, scalar::quantize_q8_k);

  t.matmul[type_slot(TT::F32)] = matmul_ref<scalar::vec_dot_f32>;
  t.matmul[type_slot(TT::F16)] = matmul_ref<scalar::vec_dot_f16>;
  t.matmul[type_slot(TT::BF16)] = matmul_ref<scalar::vec_dot_bf16>;
  t.matmul[type_slot(TT::Q4_0)] = matmul_ref<scalar::vec_dot_q4_0>;
  t.matmul[type_slot(TT::Q4_1)] = matmul_ref<scalar::vec_dot_q4_1>;
  t.matmul[type_slot(TT::Q5_0)] = matmul_ref<scalar::vec_dot_q5_0>;
  t.matmul[type_slot(TT::Q5_1)] = matmul_ref<scalar::vec_dot_q5_1>;
  t.matmul[type_slot(TT::Q8_0)] = matmul_ref<scalar::vec_dot_q8_0>;
  t.matmul[type_slot(TT::Q4_K)] = matmul_ref<scalar::vec_dot_q4_k>;
  t.matmul[type_slot(TT::Q5_K)] = matmul_ref<scalar::vec_dot_q5_k>;
  t.matmul[type_slot(TT::Q6_K)] = matmul_ref<scalar::vec_dot_q6_k>;
  t.matmul[type_slot(TT::Q4_0_X16)] = scalar::matmul_q4_0_x16;
  t.matmul[type_slot(TT::Q8_0_X16)] = scalar::matmul_q8_0_x16;
  t.matmul[type_slot(TT::Q4_K_X16)] = scalar::matmul_q4_k_x16;
  t.matmul[type_slot(TT::Q5_K_X16)] = scalar::matmul_q5_k_x16;
  t.matmul[type_slot(TT::Q5_0_X16)] = scalar::matmul_q5_0_x16;
  t.matmul[type_slot(TT::Q6_K_X16)] = scalar::matmul_q6_k_x16;

  t.dot_f32 = scalar::dot_f32;
  t.dot_f16_f32 = scalar::dot_f16_f32;
  t.axpy_f32 = scalar::axpy_f32;
  t.axpy_f16 = scalar::axpy_f16;
  t.scale_f32 = scalar::scale_f32;
  t.add_f32 = scalar::add_f32;
  t.fp32_to_fp16_row = scalar::fp32_to_fp16_row;
  t.fp16_to_fp32_row = scalar::fp16_to_fp32_row;
  t.rms_norm = scalar::rms_norm;
  t.softmax = scalar::softmax;
  t.gemm_f32 = scalar::gemm_f32;
  t.silu_mul = scalar::silu_mul;
}

}  // namespace edgellm::kernels
