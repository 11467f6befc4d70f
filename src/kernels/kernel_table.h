// Internal: the per-ISA table of kernel function pointers behind kernels.h.
//
// Each ISA provides install_<isa>(KernelTable&) which overwrites only the entries it specialises;
// dispatch.cpp builds the table for ISA k by copying the table of the next lower ISA of the same
// family (scalar -> avx2 -> avx512 -> amx, scalar -> neon -> dotprod -> i8mm) and calling install_<k>.
// An entry an ISA does not specialise therefore falls back to the best lower ISA, and in the end
// to the scalar reference, which fills every entry.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/tensor_type.h"

namespace edgellm::kernels {

// Table slots are indexed by the raw GGUF type id (largest id EdgeLLM knows is BF16 = 30); the
// internal repacked layouts take the slots after it.
inline constexpr int kTypeSlots = 39;

inline constexpr int type_slot(TensorType t) {
  switch (t) {
    case TensorType::Q4_0_X16: return 31;
    case TensorType::Q8_0_X16: return 32;
    case TensorType::Q8_0_S: return 33;
    case TensorType::Q4_K_X16: return 34;
    case TensorType::Q8_K_S: return 35;
    case TensorType::Q5_0_X16: return 36;
    case TensorType::Q6_K_X16: return 37;
    case TensorType::Q5_K_X16: return 38;
    default: return static_cast<int>(t);
  }
}

using DequantizeFn = void (*)(const void* src, float* dst, int64_t n);
using QuantizeFn = void (*)(const float* src, void* dst, int64_t n);
// Same contract as kernels::matmul (arguments already validated).
using MatmulFn = void (*)(int64_t n, const void* w, size_t w_row_bytes, int64_t r0, int64_t r1, const void* xq,
                          size_t xq_row_bytes, int64_t n_tokens, float* y, int64_t y_stride);

// The named parameters of a MatmulFn, for the matmul trampolines the per-ISA kernel lists generate
// (kernel_list_begin.h): void fn(EDGELLM_MATMUL_PARAMS) { driver<K>(EDGELLM_MATMUL_ARGS); }
#define EDGELLM_MATMUL_PARAMS                                                                          \
  int64_t n, const void* w, size_t wrb, int64_t r0, int64_t r1, const void* x, size_t xrb, int64_t nt, \
      float* y, int64_t ys
#define EDGELLM_MATMUL_ARGS n, w, wrb, r0, r1, x, xrb, nt, y, ys

// Tile kernels' inputs made once per matmul input (kernels.h: tiled_activation_bytes,
// tile_activations, matmul_tiled; arguments already validated). The layout is the ISA's and
// depends on the activation type only, so every weight type of one activation type shares it.
#define EDGELLM_TILE_PARAMS \
  int64_t n, const void* xq, size_t xq_row_bytes, int64_t n_tokens, int64_t tile0, int64_t tile1, void* xt
#define EDGELLM_TILE_ARGS n, xq, xq_row_bytes, n_tokens, tile0, tile1, xt
#define EDGELLM_TILED_MATMUL_PARAMS EDGELLM_MATMUL_PARAMS, const void* xt
struct TiledMatmul {
  size_t (*bytes)(int64_t n, int64_t n_tokens) = nullptr;  // 0: this batch reads the rows
  void (*tile)(EDGELLM_TILE_PARAMS) = nullptr;
  void (*matmul)(EDGELLM_TILED_MATMUL_PARAMS) = nullptr;
};

struct KernelTable {
  DequantizeFn dequantize[kTypeSlots] = {};
  // Indexed by the WEIGHT type: quantizes an F32 activation row into activation_type(weight).
  QuantizeFn quantize_activation[kTypeSlots] = {};
  MatmulFn matmul[kTypeSlots] = {};
  // Indexed by the WEIGHT type; empty on ISAs without tile kernels (all but AMX).
  TiledMatmul tiled[kTypeSlots] = {};

  float (*dot_f32)(const float* a, const float* b, int64_t n) = nullptr;
  float (*dot_f16_f32)(const uint16_t* a, const float* b, int64_t n) = nullptr;
  void (*axpy_f32)(float a, const float* x, float* y, int64_t n) = nullptr;
  void (*axpy_f16)(float a, const uint16_t* x, float* y, int64_t n) = nullptr;
  void (*scale_f32)(float* x, float s, int64_t n) = nullptr;
  void (*add_f32)(const float* a, const float* b, float* y, int64_t n) = nullptr;
  void (*fp32_to_fp16_row)(const float* x, uint16_t* y, int64_t n) = nullptr;
  void (*fp16_to_fp32_row)(const uint16_t* x, float* y, int64_t n) = nullptr;
  void (*rms_norm)(const float* x, const float* w, float* y, int64_t n, float eps) = nullptr;
  void (*softmax)(float* x, int64_t n) = nullptr;
  void (*gemm_f32)(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b,
                   int64_t ldb, bool accumulate, float* c, int64_t ldc) = nullptr;
  void (*silu_mul)(const float* gate, const float* up, float* out, int64_t n) = nullptr;
};

// Fills every entry with the portable reference implementation.
void install_scalar(KernelTable& table);

#if defined(EDGELLM_ARCH_X86)
void install_avx2(KernelTable& table);
void install_avx512(KernelTable& table);
#endif

}  // namespace edgellm::kernels
