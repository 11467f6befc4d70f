// Internal: the per-ISA attention kernels behind kernels/attention.h. Plain out-of-line
// functions with the AttentionScoresFn / AttentionAccumulateFn signatures, one per stored row
// type, so the SIMD files need no shared inline code (see kernels/README.md).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/attention.h"

#define EDGELLM_ATTENTION_KERNELS                                                                                      \
  void scores_f32(const void* k_rows, size_t row_bytes, int64_t cnt, int64_t hd, const float* q, int64_t q_stride,     \
                  int64_t g, float scale, float* scores, int64_t scores_stride);                                       \
  void scores_f16(const void* k_rows, size_t row_bytes, int64_t cnt, int64_t hd, const float* q, int64_t q_stride,     \
                  int64_t g, float scale, float* scores, int64_t scores_stride);                                       \
  void scores_q8_0(const void* k_rows, size_t row_bytes, int64_t cnt, int64_t hd, const float* q, int64_t q_stride,    \
                   int64_t g, float scale, float* scores, int64_t scores_stride);                                      \
  void scores_q4_0(const void* k_rows, size_t row_bytes, int64_t cnt, int64_t hd, const float* q, int64_t q_stride,    \
                   int64_t g, float scale, float* scores, int64_t scores_stride);                                      \
  void accumulate_f32(const void* v_rows, size_t row_bytes, int64_t cnt, int64_t hd, const float* p, int64_t p_stride, \
                      int64_t g, float* out, int64_t out_stride);                                                      \
  void accumulate_f16(const void* v_rows, size_t row_bytes, int64_t cnt, int64_t hd, const float* p, int64_t p_stride, \
                      int64_t g, float* out, int64_t out_stride);                                                      \
  void accumulate_q8_0(const void* v_rows, size_t row_bytes, int64_t cnt, int64_t hd, const float* p,                  \
                       int64_t p_stride, int64_t g, float* out, int64_t out_stride);                                   \
  void accumulate_q4_0(const void* v_rows, size_t row_bytes, int64_t cnt, int64_t hd, const float* p,                  \
                       int64_t p_stride, int64_t g, float* out, int64_t out_stride);

// Scores against an int8 query (AttentionScoresQ8Fn), where the ISA has integer dot products.
#define EDGELLM_ATTENTION_Q8_KERNELS                                                                             \
  void scores_q8_q8_0(const void* k_rows, size_t row_bytes, int64_t cnt, int64_t hd, const QueryBlockQ8* q,      \
                      int64_t q_stride, int64_t g, float* scores, int64_t scores_stride);                        \
  void scores_q8_q4_0(const void* k_rows, size_t row_bytes, int64_t cnt, int64_t hd, const QueryBlockQ8* q,      \
                      int64_t q_stride, int64_t g, float* scores, int64_t scores_stride);

// The int8-weighted V sum over Q4_0 rows (AttentionValueWeightsFn, AttentionAccumulateWeightedFn).
#define EDGELLM_ATTENTION_WEIGHTED_KERNELS                                                                         \
  void value_weights_q4_0(const uint8_t* const* tiles, size_t row_bytes, int64_t cnt, int64_t hd, const float* p, \
                          int64_t p_stride, int64_t g, uint8_t* w);                                                \
  void accumulate_weighted_q4_0(const uint8_t* const* tiles, size_t row_bytes, int64_t cnt, int64_t hd,           \
                                const uint8_t* w, int64_t g, float* out, int64_t out_stride);

// The K^T tile widening of the SIMD ISAs (the scalar reference is generic, in attention.cpp).
#define EDGELLM_WIDEN_TRANSPOSED_KERNELS                                                               \
  void widen_transposed_f32(const void* k_rows, size_t row_bytes, int64_t cnt, int64_t hd, float* kt,  \
                            int64_t kt_stride);                                                        \
  void widen_transposed_f16(const void* k_rows, size_t row_bytes, int64_t cnt, int64_t hd, float* kt,  \
                            int64_t kt_stride);                                                        \
  void widen_transposed_q8_0(const void* k_rows, size_t row_bytes, int64_t cnt, int64_t hd, float* kt, \
                             int64_t kt_stride);                                                       \
  void widen_transposed_q4_0(const void* k_rows, size_t row_bytes, int64_t cnt, int64_t hd, float* kt, \
                             int64_t kt_stride);

namespace edgellm::kernels::attention_scalar {
EDGELLM_ATTENTION_KERNELS
EDGELLM_ATTENTION_Q8_KERNELS
EDGELLM_ATTENTION_WEIGHTED_KERNELS
}  // namespace edgellm::kernels::attention_scalar

#if defined(EDGELLM_ARCH_X86)
namespace edgellm::kernels::attention_avx2 {
EDGELLM_ATTENTION_KERNELS
EDGELLM_WIDEN_TRANSPOSED_KERNELS
}  // namespace edgellm::kernels::attention_avx2
namespace edgellm::kernels::attention_avx512 {
EDGELLM_ATTENTION_KERNELS
EDGELLM_ATTENTION_Q8_KERNELS
EDGELLM_WIDEN_TRANSPOSED_KERNELS
}  // namespace edgellm::kernels::attention_avx512
namespace edgellm::kernels::attention_avx512_vbmi {
EDGELLM_ATTENTION_WEIGHTED_KERNELS
}  // namespace edgellm::kernels::attention_avx512_vbmi
#endif

#if defined(EDGELLM_ARCH_ARM64)
namespace edgellm::kernels::attention_neon {
EDGELLM_ATTENTION_KERNELS
EDGELLM_WIDEN_TRANSPOSED_KERNELS
}  // namespace edgellm::kernels::attention_neon
namespace edgellm::kernels::attention_dotprod {
EDGELLM_ATTENTION_Q8_KERNELS
}  // namespace edgellm::kernels::attention_dotprod
#endif

#undef EDGELLM_ATTENTION_KERNELS
#undef EDGELLM_WIDEN_TRANSPOSED_KERNELS
#undef EDGELLM_ATTENTION_Q8_KERNELS
#undef EDGELLM_ATTENTION_WEIGHTED_KERNELS
