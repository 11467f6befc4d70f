// Attention inner loops over the rows of a paged KV cache block, read in their stored type
// (F32, F16, Q8_0 or Q4_0) without converting the block to F32 first.
//
// One call covers `cnt` consecutive rows of one KV head (row s at rows + s * row_bytes, each
// row hd elements of the cache type) and the g query heads of one GQA group that share that KV
// head. Every row is loaded and widened once per call and then used for all g heads, so the
// cost of reading the cache does not grow with the group size.
//
//   scores:     scores[h * scores_stride + s] = scale * dot(q[h * q_stride + 0 .. hd), k_s)
//   accumulate: out[h * out_stride + i] += sum_s p[h * p_stride + s] * v_s[i]
//               for h < g, s < cnt, i < hd.
//
// Q8_0 and Q4_0 rows are dequantized in registers (d * q, d * (nibble - 8) per element, as
// dequantize_row does; both exact in F32) and then multiplied in F32, so every type gives the F32
// result of its dequantized rows up to summation order (the BF16-weighted V sum below rounds
// its weights instead). The per-ISA versions live in
// kernels/{scalar,x86/avx2,x86/avx512,arm/neon}/attention_*. Decode scores Q8_0 / Q4_0 K rows
// against an int8 query instead where the ISA has integer dot products (scores_q8 below).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/blocks.h"
#include "kernels/tensor_type.h"

namespace edgellm::kernels {

using AttentionScoresFn = void (*)(const void* k_rows, size_t row_bytes, int64_t cnt, int64_t hd, const float* q,
                                   int64_t q_stride, int64_t g, float scale, float* scores, int64_t scores_stride);
using AttentionAccumulateFn = void (*)(const void* v_rows, size_t row_bytes, int64_t cnt, int64_t hd, const float* p,
                                       int64_t p_stride, int64_t g, float* out, int64_t out_stride);
// Prefill runs many queries against each K tile as one gemm_f32 (kernels.h), which wants the
// tile widened to F32 and transposed: kt[d * kt_stride + s] = element d of row s, for s < cnt
// <= kt_stride, d < hd (K^T, [hd, cnt]). Widened exactly as dequantize_row widens.
// Decode scores for Q8_0 / Q4_0 K rows against a query quantized to int8 per 32-value block,
// as llama.cpp's quantized K caches do: each row dot product becomes integer dot products
// (vpdpbusd / SDOT: 64 / 16 multiply-adds per instruction instead of 16 / 4 F32 FMAs, no per-element
// widening of the row), which is what decode at depth spends its attention time on
// (docs/benchmarks.md, "Decode at 4k"). One query head is hd / 32 QueryBlockQ8 (quantize_query).
//   scores[h * scores_stride + s] = sum over blocks b, in order, of
//       fma(float(isum_b), fp16_to_fp32(k_b.d) * q_b.d, acc)      (acc starting at 0)
//   isum_b = sum_i k_b.value[i] * q_b.qs[i]   (exact int32; Q8_0: qs[i], Q4_0: nibble - 8)
// The attention scale is folded into q_b.d. Every ISA computes exactly these F32 operations, so
// the SIMD kernels equal their scalar twin bit for bit.
// The layout of the repacked matmuls' activation blocks (blocks.h): d, the integer sum of the
// codes (lets SIMD code offset the K values to unsigned bytes), 32 codes. Here d is
// scale * max|q| / 127 in full F32 (not rounded to F16).
using QueryBlockQ8 = BlockQ8_0S;

// q[0 .. hd) (hd a multiple of 32) -> hd / 32 blocks: qs = round-to-nearest-even(q * 127 / max|q|),
// d = scale * max|q| / 127 (an all-zero block gives d = 0, qs = 0). Portable, the same bits on
// every ISA.
void quantize_query(const float* q, int64_t hd, float scale, QueryBlockQ8* out);

// cnt rows of K (Q8_0 or Q4_0) against g quantized query heads, head h at q + h * q_stride
// (q_stride in blocks, >= hd / 32).
using AttentionScoresQ8Fn = void (*)(const void* k_rows, size_t row_bytes, int64_t cnt, int64_t hd,
                                     const QueryBlockQ8* q, int64_t q_stride, int64_t g, float* scores,
                                     int64_t scores_stride);
// Decode V sums over Q4_0 V rows with BF16 weights, where the ISA multiplies BF16 pairs (AVX-512
// BF16 with VBMI; the scalar twin). Why: the F32 sum is bound by its FMAs (g heads x hd values
// per row; one 4096-row call with g = 8 took 25 us on one core, 84 G multiply-adds/s, where a
// register-only FMA loop reaches 107 G/s, measured on Zen 5); vdpbf16ps does two multiply-adds
// per lane at the same instruction rate, and a nibble becomes a BF16 value by one table lookup
// (vpermw).
// The price is the weight p * d rounded to 8 significant bits (relative <= 2^-8), against a 4-bit
// V whose own rounding is ~2^-4 of its block (PPL / KL in docs/quantization.md). Two steps,
// called with the same rows:
//   value_weights:       w[(s / 16) * 16 * g * nb + (h * nb + b) * 16 + s % 16] =
//                            bf16(p[h * p_stride + s] * fp16_to_fp32(d))
//                        for h < g, b < nb = hd / 32, s < cnt, d the scale of block b of V row s
//                        (tiles of 16 rows, all weights of a tile together: ceil(cnt / 16) * 16 * g
//                        * nb values; the slots of rows cnt .. of the last tile are unspecified);
//                        F32 product, then round to nearest even, magnitudes below FLT_MIN to +0,
//                        NaN kept (quiet).
//   accumulate_weighted: out[h * out_stride + i] continues one F32 chain per element over the row
//                        pairs (s, s + 1), s = 0, 2, ...:
//                          acc = ftz(fma(w_{s+1}, x_{s+1}, acc)); acc = ftz(fma(w_s, x_s, acc))
//                        x_s = nibble - 8 of row s at element i, w_s its weight of that element's
//                        block; for odd cnt the missing row cnt has w = x = 0 (its slot may be
//                        read but is ignored). ftz: results below FLT_MIN in magnitude become zero
//                        of the same sign (also the initial out value). A NaN weight or out value
//                        gives NaN, its payload unspecified.
// The products are exact (8-bit times 4-bit significands), so each step is one rounding: what
// vdpbf16ps does per lane (odd element first, subnormals flushed), which the twin does with fmaf.
// Why tiles: with one weight row per (head, block), a tile's stores and the probability loads
// land 2^k bytes apart at common context sizes and miss L1 on its associativity (measured 2x
// slower weights at 4096 rows).
using AttentionValueWeightsFn = void (*)(const void* v_rows, size_t row_bytes, int64_t cnt, int64_t hd, const float* p,
                                         int64_t p_stride, int64_t g, uint16_t* w);
using AttentionAccumulateWeightedFn = void (*)(const void* v_rows, size_t row_bytes, int64_t cnt, int64_t hd,
                                               const uint16_t* w, int64_t g, float* out, int64_t out_stride);
// Values of w for cnt rows, g heads, head_dim hd.
inline int64_t value_weights_count(int64_t cnt, int64_t g, int64_t hd) {
  return (cnt + 15) / 16 * 16 * g * (hd / 32);
}

using AttentionWidenTransposedFn = void (*)(const void* k_rows, size_t row_bytes, int64_t cnt, int64_t hd, float* kt,
                                            int64_t kt_stride);

// The active ISA's kernels for rows of one cache type, resolved once so a loop over many KV
// blocks pays no dispatch or argument checks per block. Preconditions of the returned functions
// (checked by the wrappers below, not by the functions): cnt >= 0, g >= 1, row_bytes at least
// tensor_row_bytes(type, hd), q/p/scores/out strides large enough that the g head rows do not
// overlap, `out` not aliasing the other arguments.
struct AttentionKernels {
  AttentionScoresFn scores = nullptr;
  AttentionAccumulateFn accumulate = nullptr;
  AttentionWidenTransposedFn widen_transposed = nullptr;
  // Q8_0 / Q4_0 K only, and only where the ISA has integer dot products (scalar twin, AVX-512
  // VNNI, ARM dotprod / i8mm); nullptr otherwise: callers fall back to `scores` with the F32 query.
  AttentionScoresQ8Fn scores_q8 = nullptr;
  // Q4_0 V only, and only on AVX-512 with BF16 and VBMI and on the scalar ISA (the twin); both
  // nullptr otherwise: callers use `accumulate` with the F32 weights.
  AttentionValueWeightsFn value_weights = nullptr;
  AttentionAccumulateWeightedFn accumulate_weighted = nullptr;
};

// Throws Error(kUnsupported) for a type other than F32/F16/Q8_0/Q4_0 and Error(kInvalidArgument)
// when hd < 1 or hd is not a multiple of the type's block size (32 for Q8_0 and Q4_0).
AttentionKernels attention_kernels(TensorType type, int64_t hd);

// Checked one-off forms (tests, tools): validate every argument, then dispatch.
void attention_scores(TensorType type, const void* k_rows, size_t row_bytes, int64_t cnt, int64_t hd, const float* q,
                      int64_t q_stride, int64_t g, float scale, float* scores, int64_t scores_stride);
// Checked form of AttentionKernels::scores_q8; throws Error(kUnsupported) where it is nullptr.
void attention_scores_q8(TensorType type, const void* k_rows, size_t row_bytes, int64_t cnt, int64_t hd,
                         const QueryBlockQ8* q, int64_t q_stride, int64_t g, float* scores, int64_t scores_stride);
void attention_accumulate(TensorType type, const void* v_rows, size_t row_bytes, int64_t cnt, int64_t hd,
                          const float* p, int64_t p_stride, int64_t g, float* out, int64_t out_stride);

}  // namespace edgellm::kernels
