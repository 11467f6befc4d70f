// NEON attention kernels (kernels/attention.h) over KV rows in their stored type. Same scheme as
// the x86 files with 4 lanes and 32 registers, except for the scores:
//
// Scores: 2 or 4 rows at a time; each 4-element chunk of a row is widened to F32 once (F16 with
// FCVTL; Q8_0 int8 -> int32 -> float times the block scale) and multiply-added with the same
// chunk of every query head; pairwise adds fold the per-row accumulators into scores at the end.
//
// Accumulate: NH heads x CH chunks of accumulators stay in registers over all rows; each row
// chunk is widened once and used by every head.
#include <arm_neon.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/arm/arm_util.h"
#include "kernels/attention_head_groups.h"
#include "kernels/attention_impl.h"
#include "kernels/blocks.h"

namespace edgellm::kernels::attention_neon {
namespace {

// Fully unroll the loops over heads, chunks and transpose rows (compile-time bounds) so the
// accumulator arrays become registers; GCC otherwise keeps a stack copy updated every row.
#define EDGELLM_UNROLL _Pragma("GCC unroll 16")

constexpr int64_t kLanes = 4;

// Chunk c (elements [4c, 4c + 4), `width` of them valid, the rest 0) of a row as 4 floats.
struct F32Rows {
  static float32x4_t load(const uint8_t* row, int64_t c, int64_t width) {
    // Byte arithmetic and memcpy: a row need not be aligned to its element.
    const uint8_t* p = row + c * kLanes * static_cast<int64_t>(sizeof(float));
    float tmp[4] = {};
    if (width == kLanes) {
      std::memcpy(tmp, p, sizeof tmp);  // one unaligned 16-byte load
    } else {
      std::memcpy(tmp, p, static_cast<size_t>(width) * sizeof(float));
    }
    return vld1q_f32(tmp);
  }
};
struct F16Rows {
  static float32x4_t load(const uint8_t* row, int64_t c, int64_t width) {
    const uint8_t* p = row + c * kLanes * static_cast<int64_t>(sizeof(uint16_t));
    uint16_t tmp[4] = {};
    std::memcpy(tmp, p, static_cast<size_t>(width) * sizeof(uint16_t));
    return arm::load_f16x4(tmp);
  }
};
// Q8_0 rows are whole blocks (head_dim a multiple of 32): chunk c is the 4 codes at 4 * (c % 8)
// of block c / 8 (read as one 32-bit word so nothing past the block is touched). d * q in F32,
// exactly as dequantize_row computes it.
struct Q8_0Rows {
  static float32x4_t load(const uint8_t* row, int64_t c, int64_t) {
    const BlockQ8_0* b = reinterpret_cast<const BlockQ8_0*>(row) + (c >> 3);
    int32_t word;
    std::memcpy(&word, b->qs + kLanes * (c & 7), sizeof(word));
    const int16x8_t q16 = vmovl_s8(vreinterpret_s8_s32(vdup_n_s32(word)));
    const float32x4_t q = vcvtq_f32_s32(vmovl_s16(vget_low_s16(q16)));
    return vmulq_n_f32(q, arm::half_to_float(b->d));
  }
};
// Q4_0 rows are whole blocks too: chunk c is elements 4 (c % 8) .. + 4 of block c / 8, the low
// (c % 8 < 4) or high nibbles of the 4 bytes qs[4 (c % 4) ..] (one 32-bit word). (nibble - 8) * d
// in F32, exactly as dequantize_row computes it.
struct Q4_0Rows {
  static float32x4_t load(const uint8_t* row, int64_t c, int64_t) {
    const BlockQ4_0* b = reinterpret_cast<const BlockQ4_0*>(row) + (c >> 3);
    uint32_t word;
    std::memcpy(&word, b->qs + kLanes * (c & 3), sizeof(word));
    uint8x8_t u = vreinterpret_u8_u32(vdup_n_u32(word));
    u = (c & 4) != 0 ? vshr_n_u8(u, 4) : vand_u8(u, vdup_n_u8(0x0F));
    const int16x8_t q16 = vmovl_s8(vsub_s8(vreinterpret_s8_u8(u), vdup_n_s8(8)));
    const float32x4_t q = vcvtq_f32_s32(vmovl_s16(vget_low_s16(q16)));
    return vmulq_n_f32(q, arm::half_to_float(b->d));
  }
};

// Lanes [0, width) of 4 floats at p (a partial chunk goes through a zero-padded buffer).
EDGELLM_ARM_INLINE float32x4_t load_part(const float* p, int64_t width) {
  if (width == kLanes) return vld1q_f32(p);
  float tmp[4] = {};
  for (int64_t i = 0; i < width; ++i) tmp[i] = p[i];
  return vld1q_f32(tmp);
}
EDGELLM_ARM_INLINE void store_part(float* p, float32x4_t v, int64_t width) {
  if (width == kLanes) {
    vst1q_f32(p, v);
    return;
  }
  float tmp[4];
  vst1q_f32(tmp, v);
  for (int64_t i = 0; i < width; ++i) p[i] = tmp[i];
}

// Scores of nr <= R rows for NH heads: one accumulator per (row, head) over the 4-element
// chunks (each row chunk is widened once and used by every head), then pairwise adds (FADDP)
// fold the R x NH accumulators into NH vectors of R scores. NEON's cheap pairwise add makes this
// cheaper than transposing rows as the x86 kernels do. R = 4 rows for up to 4 heads, 2 beyond
// (R * NH accumulators + NH query chunks + R rows within the 32 registers).
template <int NH>
constexpr int rows_for() {
  return NH <= 4 ? 4 : 2;
}

template <class Rows, int NH>
void scores_block(const uint8_t* base, size_t row_bytes, int64_t nr, int64_t hd, const float* q, int64_t q_stride,
                  float scale, float* out, int64_t out_stride) {
  constexpr int R = rows_for<NH>();
  float32x4_t acc[R][NH];
  EDGELLM_UNROLL
  for (int j = 0; j < R; ++j) {
    EDGELLM_UNROLL
    for (int h = 0; h < NH; ++h) acc[j][h] = vdupq_n_f32(0.0f);
  }
  const int64_t n_chunks = (hd + kLanes - 1) / kLanes;
  for (int64_t c = 0; c < n_chunks; ++c) {
    const int64_t width = hd - c * kLanes < kLanes ? hd - c * kLanes : kLanes;
    float32x4_t qv[NH];
    EDGELLM_UNROLL
    for (int h = 0; h < NH; ++h) qv[h] = load_part(q + h * q_stride + c * kLanes, width);
    EDGELLM_UNROLL
    for (int j = 0; j < R; ++j) {
      if (j < nr) {
        const float32x4_t k = Rows::load(base + static_cast<size_t>(j) * row_bytes, c, width);
        EDGELLM_UNROLL
        for (int h = 0; h < NH; ++h) acc[j][h] = vfmaq_f32(acc[j][h], k, qv[h]);
      }
    }
  }
  EDGELLM_UNROLL
  for (int h = 0; h < NH; ++h) {
    float32x4_t s;  // lane j: score of row j
    if constexpr (R == 4) {
      s = vpaddq_f32(vpaddq_f32(acc[0][h], acc[1][h]), vpaddq_f32(acc[2][h], acc[3][h]));
    } else {
      const float32x4_t p = vpaddq_f32(acc[0][h], acc[1][h]);
      s = vpaddq_f32(p, p);
    }
    store_part(out + h * out_stride, vmulq_n_f32(s, scale), nr);
  }
}

template <class Rows, int NH>
void scores_heads(const uint8_t* base, size_t row_bytes, int64_t cnt, int64_t hd, const float* q, int64_t q_stride,
                  float scale, float* out, int64_t out_stride) {
  constexpr int R = rows_for<NH>();
  for (int64_t s0 = 0; s0 < cnt; s0 += R) {
    const int64_t nr = cnt - s0 < R ? cnt - s0 : R;
    scores_block<Rows, NH>(base + static_cast<size_t>(s0) * row_bytes, row_bytes, nr, hd, q, q_stride, scale, out + s0,
                           out_stride);
  }
}

template <class Rows>
void scores(const void* k_rows, size_t row_bytes, int64_t cnt, int64_t hd, const float* q, int64_t q_stride, int64_t g,
            float scale, float* out, int64_t out_stride) {
  const auto* base = static_cast<const uint8_t*>(k_rows);
  attention::for_head_groups(g, [&](auto nh, int64_t h0) {
    scores_heads<Rows, decltype(nh)::kValue>(base, row_bytes, cnt, hd, q + h0 * q_stride, q_stride, scale,
                                             out + h0 * out_stride, out_stride);
  });
}

// out[h][chunks c0 .. c0+CH) += sum_s p[h][s] * v_s[those chunks] for NH heads.
template <class Rows, int NH, int CH>
void accumulate_chunks(const uint8_t* base, size_t row_bytes, int64_t cnt, int64_t c0, int64_t hd, const float* p,
                       int64_t p_stride, float* out, int64_t out_stride) {
  int64_t width[CH];
  float32x4_t acc[NH][CH];
  EDGELLM_UNROLL
  for (int k = 0; k < CH; ++k) {
    const int64_t left = hd - (c0 + k) * kLanes;
    width[k] = left < kLanes ? left : kLanes;
  }
  EDGELLM_UNROLL
  for (int h = 0; h < NH; ++h) {
    EDGELLM_UNROLL
    for (int k = 0; k < CH; ++k) acc[h][k] = load_part(out + h * out_stride + (c0 + k) * kLanes, width[k]);
  }
  for (int64_t s = 0; s < cnt; ++s) {
    const uint8_t* row = base + static_cast<size_t>(s) * row_bytes;
    float32x4_t v[CH];
    EDGELLM_UNROLL
    for (int k = 0; k < CH; ++k) v[k] = Rows::load(row, c0 + k, width[k]);
    EDGELLM_UNROLL
    for (int h = 0; h < NH; ++h) {
      const float w = p[h * p_stride + s];
      EDGELLM_UNROLL
      for (int k = 0; k < CH; ++k) acc[h][k] = vfmaq_n_f32(acc[h][k], v[k], w);
    }
  }
  EDGELLM_UNROLL
  for (int h = 0; h < NH; ++h) {
    EDGELLM_UNROLL
    for (int k = 0; k < CH; ++k) store_part(out + h * out_stride + (c0 + k) * kLanes, acc[h][k], width[k]);
  }
}

// NH * CH accumulators + CH rows within the 32 registers.
constexpr int chunks_for(int nh) {
  return nh <= 2 ? 8 : nh <= 6 ? 4 : 2;
}

template <class Rows, int NH>
void accumulate_heads(const uint8_t* base, size_t row_bytes, int64_t cnt, int64_t hd, const float* p, int64_t p_stride,
                      float* out, int64_t out_stride) {
  constexpr int CH = chunks_for(NH);
  const int64_t n_chunks = (hd + kLanes - 1) / kLanes;
  int64_t c0 = 0;
  for (; c0 + CH <= n_chunks; c0 += CH) {
    accumulate_chunks<Rows, NH, CH>(base, row_bytes, cnt, c0, hd, p, p_stride, out, out_stride);
  }
  for (; c0 < n_chunks; ++c0)
    accumulate_chunks<Rows, NH, 1>(base, row_bytes, cnt, c0, hd, p, p_stride, out, out_stride);
}

template <class Rows>
void accumulate(const void* v_rows, size_t row_bytes, int64_t cnt, int64_t hd, const float* p, int64_t p_stride,
                int64_t g, float* out, int64_t out_stride) {
  const auto* base = static_cast<const uint8_t*>(v_rows);
  attention::for_head_groups(g, [&](auto nh, int64_t h0) {
    accumulate_heads<Rows, decltype(nh)::kValue>(base, row_bytes, cnt, hd, p + h0 * p_stride, p_stride,
                                                 out + h0 * out_stride, out_stride);
  });
}

// 4x4 transpose: r[j] lane i -> r[i] lane j (TRN1/TRN2 on 32-bit, then on 64-bit lanes).
EDGELLM_ARM_INLINE void transpose4(float32x4_t r[4]) {
  const float32x4x2_t a = vtrnq_f32(r[0], r[1]);  // {r0[0] r1[0] r0[2] r1[2]}, {r0[1] r1[1] r0[3] r1[3]}
  const float32x4x2_t b = vtrnq_f32(r[2], r[3]);
  r[0] = vcombine_f32(vget_low_f32(a.val[0]), vget_low_f32(b.val[0]));
  r[1] = vcombine_f32(vget_low_f32(a.val[1]), vget_low_f32(b.val[1]));
  r[2] = vcombine_f32(vget_high_f32(a.val[0]), vget_high_f32(b.val[0]));
  r[3] = vcombine_f32(vget_high_f32(a.val[1]), vget_high_f32(b.val[1]));
}

// K^T tile for prefill (attention.h): per 4 rows x 4 dims, the row chunks are widened (as the
// scores loop widens them) and transposed in registers; register i (dim 4c + i of those rows)
// is stored into column 4c + i of kt. Rows past cnt are zero in the transpose and never stored.
template <class Rows>
void widen_transposed(const void* k_rows, size_t row_bytes, int64_t cnt, int64_t hd, float* kt, int64_t kt_stride) {
  const auto* base = static_cast<const uint8_t*>(k_rows);
  const int64_t n_chunks = (hd + kLanes - 1) / kLanes;
  for (int64_t s0 = 0; s0 < cnt; s0 += kLanes) {
    const int64_t nr = cnt - s0 < kLanes ? cnt - s0 : kLanes;
    const uint8_t* rows = base + static_cast<size_t>(s0) * row_bytes;
    for (int64_t c = 0; c < n_chunks; ++c) {
      const int64_t width = hd - c * kLanes < kLanes ? hd - c * kLanes : kLanes;
      float32x4_t r[4];
      EDGELLM_UNROLL
      for (int j = 0; j < 4; ++j) {
        r[j] = j < nr ? Rows::load(rows + static_cast<size_t>(j) * row_bytes, c, width) : vdupq_n_f32(0.0f);
      }
      transpose4(r);
      EDGELLM_UNROLL
      for (int i = 0; i < 4; ++i) {
        if (i < width) store_part(kt + (c * kLanes + i) * kt_stride + s0, r[i], nr);
      }
    }
  }
}

}  // namespace

// scores_<type>, accumulate_<type> and widen_transposed_<type> of every row type (attention_impl.h).
EDGELLM_ATTENTION_ROW_TYPES(EDGELLM_ATTENTION_TRAMPOLINES)
EDGELLM_ATTENTION_ROW_TYPES(EDGELLM_ATTENTION_WIDEN_TRAMPOLINES)

}  // namespace edgellm::kernels::attention_neon
