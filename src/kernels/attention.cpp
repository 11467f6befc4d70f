// Validation and run-time dispatch of the attention kernels (kernels/attention.h). The ISA is
// the one the rest of the kernels use (kernels::active_isa(), EDGELLM_ISA pins included).
#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <string>

#include "core/error.h"
#include "kernels/attention_impl.h"
#include "kernels/cpu_features.h"
#include "kernels/kernels.h"

namespace edgellm::kernels {
namespace {

enum class RowKind { kF32, kF16, kQ8_0, kQ4_0 };

RowKind row_kind(TensorType type) {
  switch (type) {
    case TensorType::F32: return RowKind::kF32;
    case TensorType::F16: return RowKind::kF16;
    case TensorType::Q8_0: return RowKind::kQ8_0;
    case TensorType::Q4_0: return RowKind::kQ4_0;
    default:
      throw Error(ErrorCode::kUnsupported, std::string("attention: KV rows of type ") + tensor_type_name(type) +
                                               " are not supported (f32, f16, q8_0 or q4_0)");
  }
}

// The eight kernels of one ISA namespace, picked by row kind.
#define EDGELLM_PICK(ns, kind)                                                        \
  ((kind) == RowKind::kF32    ? AttentionKernels{ns::scores_f32, ns::accumulate_f32}   \
   : (kind) == RowKind::kF16  ? AttentionKernels{ns::scores_f16, ns::accumulate_f16}   \
   : (kind) == RowKind::kQ8_0 ? AttentionKernels{ns::scores_q8_0, ns::accumulate_q8_0} \
                              : AttentionKernels{ns::scores_q4_0, ns::accumulate_q4_0})

// The scalar reference: each row widened by dequantize_row into a stack buffer (pieces of kPiece
// elements, whole blocks of every row type), then scattered into the columns of kt. The SIMD
// ISAs transpose tiles of rows in registers instead (attention_{avx2,avx512,neon}.cpp).
template <TensorType kType>
void widen_transposed_generic(const void* k_rows, size_t row_bytes, int64_t cnt, int64_t hd, float* kt,
                              int64_t kt_stride) {
  constexpr int64_t kPiece = 256;
  float tmp[kPiece];
  for (int64_t s = 0; s < cnt; ++s) {
    const auto* row = static_cast<const uint8_t*>(k_rows) + static_cast<size_t>(s) * row_bytes;
    for (int64_t d0 = 0; d0 < hd; d0 += kPiece) {
      const int64_t w = hd - d0 < kPiece ? hd - d0 : kPiece;
      dequantize_row(kType, row + tensor_row_bytes(kType, d0), tmp, w);
      for (int64_t d = 0; d < w; ++d) kt[(d0 + d) * kt_stride + s] = tmp[d];
    }
  }
}

#define EDGELLM_PICK_WIDEN(ns, kind)                     \
  ((kind) == RowKind::kF32    ? ns::widen_transposed_f32  \
   : (kind) == RowKind::kF16  ? ns::widen_transposed_f16  \
   : (kind) == RowKind::kQ8_0 ? ns::widen_transposed_q8_0 \
                              : ns::widen_transposed_q4_0)

AttentionWidenTransposedFn widen_transposed_for(RowKind kind, Isa isa) {
  switch (isa) {
#if defined(EDGELLM_ARCH_X86)
    case Isa::kAmx:
    case Isa::kAvx512: return EDGELLM_PICK_WIDEN(attention_avx512, kind);
    case Isa::kAvx2: return EDGELLM_PICK_WIDEN(attention_avx2, kind);
#endif
#if defined(EDGELLM_ARCH_ARM64)
    case Isa::kNeon:
    case Isa::kDotprod:
    case Isa::kI8mm: return EDGELLM_PICK_WIDEN(attention_neon, kind);
#endif
    default:
      return kind == RowKind::kF32    ? widen_transposed_generic<TensorType::F32>
             : kind == RowKind::kF16  ? widen_transposed_generic<TensorType::F16>
             : kind == RowKind::kQ8_0 ? widen_transposed_generic<TensorType::Q8_0>
                                      : widen_transposed_generic<TensorType::Q4_0>;
  }
}
#undef EDGELLM_PICK_WIDEN

AttentionKernels pick_loops(RowKind kind, Isa isa) {
  switch (isa) {
#if defined(EDGELLM_ARCH_X86)
    case Isa::kAmx:  // the tile unit does matmuls only
    case Isa::kAvx512: return EDGELLM_PICK(attention_avx512, kind);
    case Isa::kAvx2: return EDGELLM_PICK(attention_avx2, kind);
#endif
#if defined(EDGELLM_ARCH_ARM64)
    // dotprod / i8mm add integer dot products only; the F32 attention loops are plain NEON.
    case Isa::kNeon:
    case Isa::kDotprod:
    case Isa::kI8mm: return EDGELLM_PICK(attention_neon, kind);
#endif
    default: return EDGELLM_PICK(attention_scalar, kind);
  }
}
#undef EDGELLM_PICK

// Integer-query scores: the scalar twin, AVX-512 (VNNI is part of this project's AVX-512
// level) and ARM dotprod / i8mm (SDOT). AVX2 and baseline NEON keep the F32 scores.
AttentionScoresQ8Fn scores_q8_for(RowKind kind, Isa isa) {
  if (kind != RowKind::kQ8_0 && kind != RowKind::kQ4_0) return nullptr;
  const bool q8 = kind == RowKind::kQ8_0;
  switch (isa) {
#if defined(EDGELLM_ARCH_X86)
    case Isa::kAmx:
    case Isa::kAvx512: return q8 ? attention_avx512::scores_q8_q8_0 : attention_avx512::scores_q8_q4_0;
#endif
#if defined(EDGELLM_ARCH_ARM64)
    case Isa::kDotprod:
    case Isa::kI8mm: return q8 ? attention_dotprod::scores_q8_q8_0 : attention_dotprod::scores_q8_q4_0;
#endif
    case Isa::kScalar: return q8 ? attention_scalar::scores_q8_q8_0 : attention_scalar::scores_q8_q4_0;
    default: return nullptr;
  }
}

// The int8-weighted V sum (Q4_0 rows): the scalar twin, and AVX-512 where the CPU also has VBMI
// (Ice Lake, Sapphire Rapids and later, Zen 4 / 5; not Skylake-X or Cooper Lake).
void pick_weighted(RowKind kind, Isa isa, AttentionKernels& k) {
  if (kind != RowKind::kQ4_0) return;
  switch (isa) {
#if defined(EDGELLM_ARCH_X86)
    case Isa::kAmx:
    case Isa::kAvx512:
      if (!cpu_features().has_avx512_vbmi_kernels()) return;
      k.value_weights = attention_avx512_vbmi::value_weights_q4_0;
      k.accumulate_weighted = attention_avx512_vbmi::accumulate_weighted_q4_0;
      return;
#endif
    case Isa::kScalar:
      k.value_weights = attention_scalar::value_weights_q4_0;
      k.accumulate_weighted = attention_scalar::accumulate_weighted_q4_0;
      return;
    default: return;
  }
}

AttentionKernels pick(RowKind kind, Isa isa) {
  AttentionKernels k = pick_loops(kind, isa);
  k.widen_transposed = widen_transposed_for(kind, isa);
  k.scores_q8 = scores_q8_for(kind, isa);
  pick_weighted(kind, isa, k);
  return k;
}

// Messages are built only on failure: attention_kernels runs every layer of every decode step,
// which must not touch the heap.
[[noreturn]] void fail(const std::string& what) {
  throw Error(ErrorCode::kInvalidArgument, "attention: " + what);
}

void check_common(TensorType type, const void* rows, size_t row_bytes, int64_t cnt, int64_t hd, int64_t g,
                  const float* vec, int64_t vec_stride, int64_t vec_len, const char* vec_name) {
  if (cnt < 0) fail("row count " + std::to_string(cnt) + " is negative");
  if (g < 1) fail("query head count " + std::to_string(g) + " must be >= 1");
  if (cnt == 0) return;
  const size_t need = tensor_row_bytes(type, hd);
  if (row_bytes < need)
    fail("row_bytes " + std::to_string(row_bytes) + " is smaller than one row of " + std::to_string(hd) + " " +
         tensor_type_name(type) + " (" + std::to_string(need) + ")");
  if (rows == nullptr || vec == nullptr) fail(std::string("null rows or ") + vec_name);
  if (g > 1 && vec_stride < vec_len)
    fail(std::string(vec_name) + " stride " + std::to_string(vec_stride) + " is smaller than " +
         std::to_string(vec_len));
}

}  // namespace

void quantize_query(const float* q, int64_t hd, float scale, QueryBlockQ8* out) {
  for (int64_t b = 0; b < hd / 32; ++b) {
    const float* x = q + b * 32;
    QueryBlockQ8& o = out[b];
    float amax = 0.0f;
    bool finite = true;
    for (int i = 0; i < 32; ++i) {
      const float a = std::fabs(x[i]);
      finite = finite && a <= std::numeric_limits<float>::max();  // false for NaN and infinity
      amax = std::max(amax, a);
    }
    if (!finite) {
      // No int8 form: a NaN scale makes every score of this head NaN, as the F32 query would
      // (a NaN cast to int8 would be undefined behaviour, and silently 0 in practice).
      std::fill(std::begin(o.qs), std::end(o.qs), int8_t{0});
      o.sum = 0;
      o.d = std::numeric_limits<float>::quiet_NaN();
      continue;
    }
    const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
    // Below amax ~ 3.7e-37, 127 / amax overflows (and 0 * inf would be NaN): divide first.
    const bool tiny = std::isinf(inv);
    int32_t sum = 0;
    for (int i = 0; i < 32; ++i) {
      // |x * inv| <= 127 up to one rounding; the clamp keeps a value of 127.00001 in range.
      const float v = std::nearbyint(tiny ? x[i] / amax * 127.0f : x[i] * inv);
      o.qs[i] = static_cast<int8_t>(std::clamp(v, -127.0f, 127.0f));
      sum += o.qs[i];
    }
    o.sum = sum;
    o.d = scale * (amax / 127.0f);
  }
}

AttentionKernels attention_kernels(TensorType type, int64_t hd) {
  const RowKind kind = row_kind(type);
  if (hd < 1) fail("head_dim " + std::to_string(hd) + " must be >= 1");
  const int64_t block = tensor_block_size(type);
  if (hd % block != 0)
    fail("head_dim " + std::to_string(hd) + " is not a multiple of the " + tensor_type_name(type) + " block size " +
         std::to_string(block));
  return pick(kind, active_isa());
}

void attention_scores(TensorType type, const void* k_rows, size_t row_bytes, int64_t cnt, int64_t hd, const float* q,
                      int64_t q_stride, int64_t g, float scale, float* scores, int64_t scores_stride) {
  const AttentionKernels k = attention_kernels(type, hd);
  check_common(type, k_rows, row_bytes, cnt, hd, g, q, q_stride, hd, "q");
  if (cnt == 0) return;
  if (scores == nullptr) fail("null scores");
  if (g > 1 && scores_stride < cnt)
    fail("scores stride " + std::to_string(scores_stride) + " is smaller than " + std::to_string(cnt) + " rows");
  k.scores(k_rows, row_bytes, cnt, hd, q, q_stride, g, scale, scores, scores_stride);
}

void attention_scores_q8(TensorType type, const void* k_rows, size_t row_bytes, int64_t cnt, int64_t hd,
                         const QueryBlockQ8* q, int64_t q_stride, int64_t g, float* scores, int64_t scores_stride) {
  const AttentionKernels k = attention_kernels(type, hd);
  if (k.scores_q8 == nullptr)
    throw Error(ErrorCode::kUnsupported, std::string("attention: no int8-query scores for ") + tensor_type_name(type) +
                                             " rows on " + isa_name(active_isa()));
  if (cnt < 0) fail("row count " + std::to_string(cnt) + " is negative");
  if (g < 1) fail("query head count " + std::to_string(g) + " must be >= 1");
  if (cnt == 0) return;
  if (row_bytes < tensor_row_bytes(type, hd)) fail("row_bytes " + std::to_string(row_bytes) + " is smaller than a row");
  if (k_rows == nullptr || q == nullptr || scores == nullptr) fail("null rows, q or scores");
  if (g > 1 && q_stride < hd / 32) fail("q stride " + std::to_string(q_stride) + " is smaller than hd / 32 blocks");
  if (g > 1 && scores_stride < cnt)
    fail("scores stride " + std::to_string(scores_stride) + " is smaller than " + std::to_string(cnt) + " rows");
  k.scores_q8(k_rows, row_bytes, cnt, hd, q, q_stride, g, scores, scores_stride);
}

void attention_accumulate(TensorType type, const void* v_rows, size_t row_bytes, int64_t cnt, int64_t hd,
                          const float* p, int64_t p_stride, int64_t g, float* out, int64_t out_stride) {
  const AttentionKernels k = attention_kernels(type, hd);
  check_common(type, v_rows, row_bytes, cnt, hd, g, p, p_stride, cnt, "p");
  if (cnt == 0) return;
  if (out == nullptr) fail("null out");
  if (g > 1 && out_stride < hd)
    fail("out stride " + std::to_string(out_stride) + " is smaller than head_dim " + std::to_string(hd));
  k.accumulate(v_rows, row_bytes, cnt, hd, p, p_stride, g, out, out_stride);
}

}  // namespace edgellm::kernels
