// Internal: the per-ISA attention kernels behind kernels/attention.h. Plain out-of-line
// functions with the AttentionScoresFn / AttentionAccumulateFn signatures, one per stored row
// type, so the SIMD files need no shared inline code (see kernels/README.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/attention.h"

// The stored row types of the F32-query kernels, one line each: X(suffix, Rows). Every ISA with
// these kernels has scores_<suffix> and accumulate_<suffix> (AttentionScoresFn,
// AttentionAccumulateFn) for each, the SIMD ones widen_transposed_<suffix> too
// (AttentionWidenTransposedFn); Rows names the row-reading policy each ISA file defines for the
// type (F32Rows, ...: how a row, or a chunk of it, is widened to F32 in that ISA). The
// declarations below and each file's out-of-line kernels are generated from this list, as the
// matmul kernels are from the ISA kernel lists (kernel_list_begin.h).
#define EDGELLM_ATTENTION_ROW_TYPES(X) X(f32, F32Rows) X(f16, F16Rows) X(q8_0, Q8_0Rows) X(q4_0, Q4_0Rows)

// The named parameters of the three kernel kinds, for the trampolines.
#define EDGELLM_ATTENTION_SCORES_PARAMS                                                                            \
  const void* k, size_t rb, int64_t cnt, int64_t hd, const float* q, int64_t qs, int64_t g, float scale, float* s, \
      int64_t ss
#define EDGELLM_ATTENTION_SCORES_ARGS k, rb, cnt, hd, q, qs, g, scale, s, ss
#define EDGELLM_ATTENTION_ACCUMULATE_PARAMS \
  const void* v, size_t rb, int64_t cnt, int64_t hd, const float* p, int64_t ps, int64_t g, float* out, int64_t os
#define EDGELLM_ATTENTION_ACCUMULATE_ARGS v, rb, cnt, hd, p, ps, g, out, os
#define EDGELLM_ATTENTION_WIDEN_PARAMS const void* k, size_t rb, int64_t cnt, int64_t hd, float* kt, int64_t kts
#define EDGELLM_ATTENTION_WIDEN_ARGS k, rb, cnt, hd, kt, kts

// In an ISA file, after its templates scores<Rows>, accumulate<Rows> and (SIMD) widen_transposed<Rows>
// (parameters as above), inside the ISA's namespace:
//   EDGELLM_ATTENTION_ROW_TYPES(EDGELLM_ATTENTION_TRAMPOLINES)
//   EDGELLM_ATTENTION_ROW_TYPES(EDGELLM_ATTENTION_WIDEN_TRAMPOLINES)
// defines the out-of-line kernels of every row type.
#define EDGELLM_ATTENTION_TRAMPOLINES(suffix, Rows)               \
  void scores_##suffix(EDGELLM_ATTENTION_SCORES_PARAMS) {         \
    scores<Rows>(EDGELLM_ATTENTION_SCORES_ARGS);                  \
  }                                                               \
  void accumulate_##suffix(EDGELLM_ATTENTION_ACCUMULATE_PARAMS) { \
    accumulate<Rows>(EDGELLM_ATTENTION_ACCUMULATE_ARGS);          \
  }
#define EDGELLM_ATTENTION_WIDEN_TRAMPOLINES(suffix, Rows)          \
  void widen_transposed_##suffix(EDGELLM_ATTENTION_WIDEN_PARAMS) { \
    widen_transposed<Rows>(EDGELLM_ATTENTION_WIDEN_ARGS);          \
  }

// Declarations from the list, with the function types of attention.h (a kernel with another
// signature does not compile).
#define EDGELLM_ATTENTION_DECLARE_(suffix, Rows)                                \
  std::remove_pointer_t<::edgellm::kernels::AttentionScoresFn> scores_##suffix; \
  std::remove_pointer_t<::edgellm::kernels::AttentionAccumulateFn> accumulate_##suffix;
#define EDGELLM_ATTENTION_DECLARE_WIDEN_(suffix, Rows) \
  std::remove_pointer_t<::edgellm::kernels::AttentionWidenTransposedFn> widen_transposed_##suffix;
#define EDGELLM_ATTENTION_KERNELS EDGELLM_ATTENTION_ROW_TYPES(EDGELLM_ATTENTION_DECLARE_)
#define EDGELLM_WIDEN_TRANSPOSED_KERNELS EDGELLM_ATTENTION_ROW_TYPES(EDGELLM_ATTENTION_DECLARE_WIDEN_)

// Scores against an int8 query (AttentionScoresQ8Fn), where the ISA has integer dot products.
#define EDGELLM_ATTENTION_Q8_KERNELS                                                                        \
  void scores_q8_q8_0(const void* k_rows, size_t row_bytes, int64_t cnt, int64_t hd, const QueryBlockQ8* q, \
                      int64_t q_stride, int64_t g, float* scores, int64_t scores_stride);                   \
  void scores_q8_q4_0(const void* k_rows, size_t row_bytes, int64_t cnt, int64_t hd, const QueryBlockQ8* q, \
                      int64_t q_stride, int64_t g, float* scores, int64_t scores_stride);

// The int8-weighted V sum over Q4_0 rows (AttentionValueWeightsFn, AttentionAccumulateWeightedFn).
#define EDGELLM_ATTENTION_WEIGHTED_KERNELS                                                                        \
  void value_weights_q4_0(const uint8_t* const* tiles, size_t row_bytes, int64_t cnt, int64_t hd, const float* p, \
                          int64_t p_stride, int64_t g, uint8_t* w);                                               \
  void accumulate_weighted_q4_0(const uint8_t* const* tiles, size_t row_bytes, int64_t cnt, int64_t hd,           \
                                const uint8_t* w, int64_t g, float* out, int64_t out_stride);

// (The K^T tile widening of the SIMD ISAs: EDGELLM_WIDEN_TRANSPOSED_KERNELS above; the scalar reference is
// generic, in attention.cpp.)

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
#undef EDGELLM_ATTENTION_DECLARE_
#undef EDGELLM_ATTENTION_DECLARE_WIDEN_
#undef EDGELLM_ATTENTION_Q8_KERNELS
#undef EDGELLM_ATTENTION_WEIGHTED_KERNELS
