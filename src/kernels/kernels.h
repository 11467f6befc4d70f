// The engine-facing kernel API. Everything here dispatches at run time to the best ISA the CPU
// has (or the one pinned by EDGELLM_ISA=scalar|avx2|avx512|neon|dotprod|i8mm, which fails loudly
// when the CPU lacks it). Per-ISA implementations live in kernels/scalar, kernels/x86/*,
// kernels/arm/*; kernels/scalar is the reference every SIMD path is tested against.
//
// Conventions: a weight matrix W has shape [n_out rows, n_in columns] (ggml ne0 = n_in), rows
// stored contiguously in the GGUF block layout of its type. Activations X are [n_tokens, n_in]
// F32 rows. Results Y are [n_tokens, n_out] F32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/tensor_type.h"

namespace edgellm::kernels {

// kAmx comes last so that the ISAs' numeric order stays the order within each family
// (scalar < avx2 < avx512 < amx; scalar < neon < dotprod < i8mm), which EDGELLM_ISA pins rely on.
enum class Isa { kScalar, kAvx2, kAvx512, kNeon, kDotprod, kI8mm, kAmx };

const char* isa_name(Isa isa);
// The ISAs this CPU can run, lowest first (kScalar is always present).
std::vector<Isa> supported_isas();
// The ISA in use: the best supported, unless EDGELLM_ISA pins one (read once, at first use).
Isa active_isa();
// Pin an ISA (tests, benchmarks). Throws Error(kUnsupported) when the CPU lacks it.
void set_active_isa(Isa isa);

// ------------------------------------------------------------------ conversion
// Dequantize n elements (a multiple of the block size) of type `type` to F32.
void dequantize_row(TensorType type, const void* src, float* dst, int64_t n);
// Reference quantization, ggml-compatible: Q4_0/Q4_1/Q5_0/Q5_1/Q8_0 round-to-nearest give the
// same bytes as ggml's reference; K-quants use the standard scale search.
void quantize_row(TensorType type, const float* src, void* dst, int64_t n);

// ------------------------------------------------------------------ matmul
// Activations are quantized once per matmul input to the format the weight type multiplies with
// (Q8_0 for Q4_0/Q5_0/Q8_0, Q8_1 for Q4_1/Q5_1, Q8_K for K-quants, F32 or F16/BF16 for floats).
TensorType activation_type(TensorType weight_type);
size_t activation_row_bytes(TensorType weight_type, int64_t n);
void quantize_activation_row(TensorType weight_type, const float* x, void* xq, int64_t n);

// Y[t * y_stride + r] = dot(W row r, X row t) for rows r in [r0, r1) and tokens t in [0, n_tokens).
//   w:  pointer to row 0 of W; row r starts at w + r * w_row_bytes
//   xq: activation rows produced by quantize_activation_row, row t at xq + t * xq_row_bytes
// Threads split the row range [r0, r1); the kernel tiles rows x tokens internally.
void matmul(TensorType weight_type, int64_t n, const void* w, size_t w_row_bytes, int64_t r0, int64_t r1,
            const void* xq, size_t xq_row_bytes, int64_t n_tokens, float* y, int64_t y_stride);

// Tiled inputs (prefill on a tile unit: AMX, kernels/x86/amx). There the packed matmuls read their
// activations rearranged into tiles of kActivationTileTokens tokens; matmul() rearranges per
// call, that is per thread and per row range. A caller that runs several row ranges or matmuls
// on one input rearranges it once with these and passes the copy along; the results are the
// same, bit for bit. Per weight type, on the active ISA:
//   tiled_activation_bytes  bytes of the copy of n_tokens rows of n elements; 0 when the ISA
//                           reads the rows directly (no tile kernel, or fewer tokens than its
//                           kernels take), and then there is nothing to make
//   tile_activations        token tiles [tile0, tile1) of xq's n_tokens rows into xt (64-byte
//                           aligned, tiled_activation_bytes long; any thread, any order of
//                           tiles; each tile's rows must be quantized first)
//   matmul_tiled            matmul() reading xt as well (xt may be null: matmul() itself)
// The copy's layout depends on activation_type(weight_type) only: one copy serves every weight
// type of that activation type. It is only valid on the ISA that made it.
inline constexpr int64_t kActivationTileTokens = 16;
size_t tiled_activation_bytes(TensorType weight_type, int64_t n, int64_t n_tokens);
void tile_activations(TensorType weight_type, int64_t n, const void* xq, size_t xq_row_bytes, int64_t n_tokens,
                      int64_t tile0, int64_t tile1, void* xt);
void matmul_tiled(TensorType weight_type, int64_t n, const void* w, size_t w_row_bytes, int64_t r0, int64_t r1,
                  const void* xq, size_t xq_row_bytes, const void* xt, int64_t n_tokens, float* y, int64_t y_stride);

// ------------------------------------------------------------------ vector ops (F32 unless named)
float dot_f32(const float* a, const float* b, int64_t n);
float dot_f16_f32(const uint16_t* a_f16, const float* b, int64_t n);  // attention q . k (F16 cache)
void axpy_f32(float a, const float* x, float* y, int64_t n);          // y += a * x
void axpy_f16(float a, const uint16_t* x_f16, float* y, int64_t n);   // y += a * x (F16 V cache)
void scale_f32(float* x, float s, int64_t n);
void add_f32(const float* a, const float* b, float* y, int64_t n);     // y = a + b (y may alias a)
void fp32_to_fp16_row(const float* x, uint16_t* y, int64_t n);
void fp16_to_fp32_row(const uint16_t* x, float* y, int64_t n);
// y = x / sqrt(mean(x^2) + eps) * w    (y may alias x)
void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps);
// In place, numerically stable; returns nothing. Entries equal to -INFINITY get probability 0.
void softmax(float* x, int64_t n);
// C = alpha * (A . B), or C += A . B when accumulate (alpha must then be 1), all F32 row-major:
// A [m, k] (row stride lda), B [k, n] (ldb), C [m, n] (ldc). Each element is one fused
// multiply-add chain over p in order, starting from C when accumulating (so splitting k into
// several calls gives the same bits as one call), else from 0 and then scaled by alpha; the same
// on every ISA (bit-identical to the scalar reference). Throws Error(kInvalidArgument) for
// accumulate with alpha != 1. Used by prefill attention (scores = q . K^T, out += P . V), where k and n are a
// KV tile or head_dim: small, so the operands stay in L1/L2.
void gemm_f32(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
              bool accumulate, float* c, int64_t ldc);
// out = silu(gate) * up   (out may alias gate)
void silu_mul(const float* gate, const float* up, float* out, int64_t n);

}  // namespace edgellm::kernels
