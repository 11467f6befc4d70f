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
// result of its dequantized rows up to summation order (the int8-weighted V sum below rounds
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
// Decode V sums over Q4_0 V rows with int8 weights, where the ISA has integer dot products with
// byte permutes (AVX-512 VNNI with VBMI; the scalar twin). Why: the F32 sum is bound by its FMAs
// and per-element widening (g heads x hd values per row; one 4096-row call with g = 8 took 36 us
// on one core of a Xeon with AMX, where an F32 FMA loop reaches 123 G multiply-adds/s and
// vdpbf16ps only a quarter of that; the BF16-weighted sum this replaced took 42 us there, 13 us
// on Zen 5); vpdpbusd does 64 multiply-adds per instruction on the 4-bit codes as bytes.
// The price: each weight p * d rounded to int8 against the largest of its group of 64 rows
// (error <= m / 254 per weight, m that largest magnitude), against a 4-bit V whose own rounding
// is ~2^-4 of its block (PPL / KL in docs/quantization.md). Why 64: each group costs two
// horizontal reductions per (head, block) and a conversion per output element; with 32-row groups
// they were a third of the time (measured). Rows come as tiles of 16: row s is at
// tiles[s / 16] + (s % 16) * row_bytes, so a group may span several KV blocks and the groups (and
// so the result) do not depend on where the cache placed the blocks. Two steps, called with the
// same rows (cnt rows in groups of kValueWeightGroupRows = 64 from row 0; the last group may be
// short):
//   value_weights:       for group G (rows s = 64G + j, j < 64), head h < g, block b < nb = hd / 32:
//                          x_j = p[h * p_stride + s] * fp16_to_fp32(d_{s,b})   (F32; 0 for s >= cnt)
//                          m = max_j |x_j|
//                          inv = 127.0f / m if 2^-120 <= m <= FLT_MAX, else 0
//                          q_j = clamp(round_to_nearest_even(x_j * inv), -127, 127)   (int8)
//                          S = m < 2^-120 ? 0 : m / 127.0f                 (F32 divisions)
//                        (below 2^-120, 127 / m would overflow: such a group adds nothing.)
//                          offset = 8 * sum_j q_j
//                        stored in the group's record (ValueWeightGroup below).
//   accumulate_weighted: for each group in order, each h, b and element i = 32b + k of the head:
//                          isum = sum_j q_j * nibble_k(row 64G + j, block b)   (exact int32;
//                                 nibble_k: low nibble of byte k for k < 16, else high of k - 16)
//                          out[h * out_stride + i] = fma(float(isum - offset), S, out[...])
//                        (isum - offset = sum_j q_j * (nibble - 8): the codes as stored, 0 .. 15,
//                        are the unsigned operand of the integer dot product.)
// Integer sums are exact and each group adds one F32 FMA per element, so every ISA gives the same
// bits. For non-finite p, d or p * d the result is unspecified (NaN or infinite), never undefined
// behaviour.
inline constexpr int64_t kValueWeightGroupRows = 64;
inline constexpr float kValueWeightMinMax = 0x1p-120f;  // the 2^-120 above
// Where a group's values live in its record of `bytes` bytes: the int8 weights of pair (h, b), 64
// rows; then S (float) of every pair; then offset (int32) of every pair, pair index h * nb + b.
struct ValueWeightGroup {
  static constexpr int64_t kRows = kValueWeightGroupRows;
  ValueWeightGroup(int64_t g, int64_t nb) : pairs(g * nb), nb(nb), bytes(g * nb * (kRows + 8)) {}
  int64_t weights_offset(int64_t h, int64_t b) const { return (h * nb + b) * kRows; }
  int64_t scale_offset(int64_t h, int64_t b) const { return pairs * kRows + (h * nb + b) * 4; }
  int64_t offset_offset(int64_t h, int64_t b) const { return pairs * (kRows + 4) + (h * nb + b) * 4; }
  int64_t pairs, nb, bytes;
};
inline constexpr int64_t kValueTileRows = 16;
using AttentionValueWeightsFn = void (*)(const uint8_t* const* tiles, size_t row_bytes, int64_t cnt, int64_t hd,
                                         const float* p, int64_t p_stride, int64_t g, uint8_t* w);
using AttentionAccumulateWeightedFn = void (*)(const uint8_t* const* tiles, size_t row_bytes, int64_t cnt, int64_t hd,
                                               const uint8_t* w, int64_t g, float* out, int64_t out_stride);
// Bytes of w for cnt rows, g heads, head_dim hd (whole groups; 4-byte aligned records).
inline int64_t value_weights_bytes(int64_t cnt, int64_t g, int64_t hd) {
  return (cnt + kValueWeightGroupRows - 1) / kValueWeightGroupRows * ValueWeightGroup(g, hd / 32).bytes;
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
  // Q4_0 V only, and only on AVX-512 with VBMI and on the scalar ISA (the twin); both nullptr
  // otherwise: callers use `accumulate` with the F32 weights.
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
