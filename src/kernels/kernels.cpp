// kernels.h entry points: validate arguments (cheaply: these run for every matmul and every
// attention row) and call through the active ISA's table (dispatch.h).
#include "kernels/kernels.h"

#include <cstdint>
#include <string>

#include "core/error.h"
#include "kernels/dispatch.h"
#include "kernels/scalar/scalar_kernels.h"

namespace edgellm::kernels {
namespace {

std::string type_str(TensorType t) { return tensor_type_name(t); }

// Throws unless n is a positive multiple of the block size of `type` (also rejects unknown ids).
void require_row_length(TensorType type, int64_t n, const char* what) {
  const int64_t bs = tensor_type_traits(type).block_size;
  if (n < 0 || n % bs != 0) {
    throw Error(ErrorCode::kInvalidArgument, std::string(what) + ": row length " + std::to_string(n) +
                                                 " is not a multiple of the " + type_str(type) + " block size " +
                                                 std::to_string(bs));
  }
}

void require_weight_type(TensorType type, const char* what) {
  if (!tensor_type_traits(type).is_weight_type) {
    throw Error(ErrorCode::kUnsupported, std::string(what) + ": " + type_str(type) + " is not a weight type");
  }
}

}  // namespace

void dequantize_row(TensorType type, const void* src, float* dst, int64_t n) {
  require_row_length(type, n, "dequantize_row");
  if (!tensor_type_traits(type).in_files) {
    // A packed tensor's row is spread over its 16-row group (see dequantize_packed_row).
    throw Error(ErrorCode::kUnsupported, "dequantize_row: " + type_str(type) + " rows are not contiguous");
  }
  active_table().dequantize[type_slot(type)](src, dst, n);
}

void quantize_row(TensorType type, const float* src, void* dst, int64_t n) {
  require_row_length(type, n, "quantize_row");
  // Always the scalar reference: files must not depend on the ISA that wrote them.
  switch (type) {
    case TensorType::F32: return scalar::quantize_f32(src, dst, n);
    case TensorType::F16: return scalar::quantize_f16(src, dst, n);
    case TensorType::BF16: return scalar::quantize_bf16(src, dst, n);
    case TensorType::Q4_0: return scalar::quantize_q4_0(src, dst, n);
    case TensorType::Q4_1: return scalar::quantize_q4_1(src, dst, n);
    case TensorType::Q5_0: return scalar::quantize_q5_0(src, dst, n);
    case TensorType::Q5_1: return scalar::quantize_q5_1(src, dst, n);
    case TensorType::Q8_0: return scalar::quantize_q8_0(src, dst, n);
    case TensorType::Q8_1: return scalar::quantize_q8_1(src, dst, n);
    case TensorType::Q4_K: return scalar::quantize_q4_k(src, dst, n);
    case TensorType::Q5_K: return scalar::quantize_q5_k(src, dst, n);
    case TensorType::Q6_K: return scalar::quantize_q6_k(src, dst, n);
    case TensorType::Q8_K: return scalar::quantize_q8_k(src, dst, n);
    default: break;  // the internal layouts are made by repacking or per activation row
  }
  throw Error(ErrorCode::kUnsupported, "quantize_row: unsupported type " + type_str(type));
}

TensorType activation_type(TensorType weight_type) {
  require_weight_type(weight_type, "activation_type");
  switch (weight_type) {
    case TensorType::Q4_0:
    case TensorType::Q5_0:
    case TensorType::Q8_0:
      return TensorType::Q8_0;
    case TensorType::Q4_1:
    case TensorType::Q5_1:
      return TensorType::Q8_1;
    case TensorType::Q4_K:
    case TensorType::Q5_K:
    case TensorType::Q6_K:
      return TensorType::Q8_K;
    case TensorType::Q4_0_X16:
    case TensorType::Q5_0_X16:
    case TensorType::Q8_0_X16:
      return TensorType::Q8_0_S;
    case TensorType::Q4_K_X16:
    case TensorType::Q5_K_X16:
      return TensorType::Q8_K_S;
    case TensorType::Q6_K_X16:
      return TensorType::Q8_K;  // its 16-element bsums are what the Q6_K offset needs
    default:
      // F32, F16 and BF16 weights multiply F32 activations (the SIMD kernels widen the weights).
      return TensorType::F32;
  }
}

size_t activation_row_bytes(TensorType weight_type, int64_t n) {
  require_row_length(weight_type, n, "activation_row_bytes");
  return tensor_row_bytes(activation_type(weight_type), n);
}

void quantize_activation_row(TensorType weight_type, const float* x, void* xq, int64_t n) {
  require_weight_type(weight_type, "quantize_activation_row");
  require_row_length(weight_type, n, "quantize_activation_row");
  active_table().quantize_activation[type_slot(weight_type)](x, xq, n);
}

namespace {

// matmul's argument checks; false when there is nothing to multiply (y's rows are then zeroed).
bool check_matmul(const char* what, TensorType weight_type, int64_t n, size_t w_row_bytes, int64_t r0, int64_t r1,
                  size_t xq_row_bytes, int64_t n_tokens, float* y, int64_t y_stride) {
  require_weight_type(weight_type, what);
  require_row_length(weight_type, n, what);
  if (r0 < 0 || r1 < r0 || n_tokens < 0) {
    throw Error(ErrorCode::kInvalidArgument, std::string(what) + ": bad range rows [" + std::to_string(r0) + ", " +
                                                 std::to_string(r1) + ") x " + std::to_string(n_tokens) + " tokens");
  }
  if (!tensor_type_traits(weight_type).in_files && (r0 % 16 != 0 || r1 % 16 != 0)) {
    throw Error(ErrorCode::kInvalidArgument, std::string(what) + ": " + type_str(weight_type) + " rows [" +
                                                 std::to_string(r0) + ", " + std::to_string(r1) +
                                                 ") are not whole 16-row groups");
  }
  if (r1 == r0 || n_tokens == 0 || n == 0) {
    for (int64_t t = 0; t < n_tokens; ++t) {
      for (int64_t r = r0; r < r1; ++r) y[t * y_stride + r] = 0.0f;
    }
    return false;
  }
  if (w_row_bytes < tensor_row_bytes(weight_type, n)) {
    throw Error(ErrorCode::kInvalidArgument, std::string(what) + ": weight row stride " + std::to_string(w_row_bytes) +
                                                 " is smaller than a " + type_str(weight_type) + " row of " +
                                                 std::to_string(n));
  }
  if (n_tokens > 1 && (xq_row_bytes < activation_row_bytes(weight_type, n) || y_stride < r1)) {
    throw Error(ErrorCode::kInvalidArgument, std::string(what) + ": activation stride " + std::to_string(xq_row_bytes) +
                                                 " or output stride " + std::to_string(y_stride) +
                                                 " too small for " + std::to_string(n) + " x rows < " +
                                                 std::to_string(r1));
  }
  return true;
}

}  // namespace

void matmul(TensorType weight_type, int64_t n, const void* w, size_t w_row_bytes, int64_t r0, int64_t r1,
            const void* xq, size_t xq_row_bytes, int64_t n_tokens, float* y, int64_t y_stride) {
  if (!check_matmul("matmul", weight_type, n, w_row_bytes, r0, r1, xq_row_bytes, n_tokens, y, y_stride)) return;
  active_table().matmul[type_slot(weight_type)](n, w, w_row_bytes, r0, r1, xq, xq_row_bytes, n_tokens, y, y_stride);
}

size_t tiled_activation_bytes(TensorType weight_type, int64_t n, int64_t n_tokens) {
  require_weight_type(weight_type, "tiled_activation_bytes");
  require_row_length(weight_type, n, "tiled_activation_bytes");
  const TiledMatmul& t = active_table().tiled[type_slot(weight_type)];
  return t.bytes != nullptr && n_tokens > 0 ? t.bytes(n, n_tokens) : 0;
}

void tile_activations(TensorType weight_type, int64_t n, const void* xq, size_t xq_row_bytes, int64_t n_tokens,
                      int64_t tile0, int64_t tile1, void* xt) {
  if (tiled_activation_bytes(weight_type, n, n_tokens) == 0) {
    throw Error(ErrorCode::kInvalidArgument, "tile_activations: no tiled form of " + std::to_string(n_tokens) +
                                                 " " + type_str(weight_type) + " inputs on " + isa_name(active_isa()));
  }
  if (xt == nullptr || reinterpret_cast<uintptr_t>(xt) % 64 != 0) {
    throw Error(ErrorCode::kInvalidArgument, "tile_activations: the tiled copy must be 64-byte aligned");
  }
  const int64_t n_tiles = (n_tokens + kActivationTileTokens - 1) / kActivationTileTokens;
  if (tile0 < 0 || tile1 < tile0 || tile1 > n_tiles || xq_row_bytes < activation_row_bytes(weight_type, n)) {
    throw Error(ErrorCode::kInvalidArgument, "tile_activations: bad tiles [" + std::to_string(tile0) + ", " +
                                                 std::to_string(tile1) + ") of " + std::to_string(n_tiles) +
                                                 " or activation stride " + std::to_string(xq_row_bytes));
  }
  active_table().tiled[type_slot(weight_type)].tile(n, xq, xq_row_bytes, n_tokens, tile0, tile1, xt);
}

void matmul_tiled(TensorType weight_type, int64_t n, const void* w, size_t w_row_bytes, int64_t r0, int64_t r1,
                  const void* xq, size_t xq_row_bytes, const void* xt, int64_t n_tokens, float* y, int64_t y_stride) {
  if (!check_matmul("matmul_tiled", weight_type, n, w_row_bytes, r0, r1, xq_row_bytes, n_tokens, y, y_stride)) return;
  const KernelTable& table = active_table();
  const int slot = type_slot(weight_type);
  if (xt == nullptr || table.tiled[slot].matmul == nullptr) {
    table.matmul[slot](n, w, w_row_bytes, r0, r1, xq, xq_row_bytes, n_tokens, y, y_stride);
    return;
  }
  table.tiled[slot].matmul(n, w, w_row_bytes, r0, r1, xq, xq_row_bytes, n_tokens, y, y_stride, xt);
}

float dot_f32(const float* a, const float* b, int64_t n) { return n > 0 ? active_table().dot_f32(a, b, n) : 0.0f; }

float dot_f16_f32(const uint16_t* a_f16, const float* b, int64_t n) {
  return n > 0 ? active_table().dot_f16_f32(a_f16, b, n) : 0.0f;
}

void axpy_f32(float a, const float* x, float* y, int64_t n) {
  if (n > 0) active_table().axpy_f32(a, x, y, n);
}

void axpy_f16(float a, const uint16_t* x_f16, float* y, int64_t n) {
  if (n > 0) active_table().axpy_f16(a, x_f16, y, n);
}

void scale_f32(float* x, float s, int64_t n) {
  if (n > 0) active_table().scale_f32(x, s, n);
}

void add_f32(const float* a, const float* b, float* y, int64_t n) {
  if (n > 0) active_table().add_f32(a, b, y, n);
}

void fp32_to_fp16_row(const float* x, uint16_t* y, int64_t n) {
  if (n > 0) active_table().fp32_to_fp16_row(x, y, n);
}

void fp16_to_fp32_row(const uint16_t* x, float* y, int64_t n) {
  if (n > 0) active_table().fp16_to_fp32_row(x, y, n);
}

void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps) {
  if (n > 0) active_table().rms_norm(x, w, y, n, eps);
}

void softmax(float* x, int64_t n) {
  if (n > 0) active_table().softmax(x, n);
}

void gemm_f32(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
              bool accumulate, float* c, int64_t ldc) {
  if (accumulate && alpha != 1.0f) {
    throw Error(ErrorCode::kInvalidArgument, "gemm_f32: accumulate continues C's sums, alpha must be 1");
  }
  if (m > 0 && n > 0) active_table().gemm_f32(m, n, k < 0 ? 0 : k, alpha, a, lda, b, ldb, accumulate, c, ldc);
}

void silu_mul(const float* gate, const float* up, float* out, int64_t n) {
  if (n > 0) active_table().silu_mul(gate, up, out, n);
}

}  // namespace edgellm::kernels
