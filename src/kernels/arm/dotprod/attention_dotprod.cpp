// dotprod (armv8.2-a+dotprod) scores of Q8_0 / Q4_0 K rows against an int8 query
// (AttentionScoresQ8Fn, kernels/attention.h): the ARM twin of scores_q8_block in
// x86/avx512/attention_avx512.cpp, with 4 rows per register instead of 16.
//
// Per K block (32 values) of 4 rows: the rows' 32 signed values (Q8_0 codes; Q4_0 nibbles - 8)
// are transposed as 4 x 8 dwords, so register i holds values 4i .. 4i+3 of each of the 4 rows.
// Per query head, SDOT by lane (`vdotq_laneq_s32`: query dword i broadcast) adds those products
// into each row's lane: 8 of them sum the block exactly (signed x signed, no offset needed). The
// F32 steps are the definition's: fma(float(isum), d_k * d_q, acc), blocks in order, so the
// result equals the scalar twin bit for bit. The transpose is shared by all heads of the group.
#include <arm_neon.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/attention_head_groups.h"
#include "kernels/attention_impl.h"
#include "kernels/blocks.h"

namespace edgellm::kernels::attention_dotprod {
namespace {

#define EDGELLM_UNROLL _Pragma("GCC unroll 16")

constexpr int64_t kRows = 4;

// Block b of a row as two registers of signed values (0 .. 15, 16 .. 31) and its F16 scale.
struct Q8_0Block {
  static void load(const uint8_t* row, int64_t b, int8x16_t& lo, int8x16_t& hi, uint16_t& d) {
    const BlockQ8_0* blk = reinterpret_cast<const BlockQ8_0*>(row) + b;
    lo = vld1q_s8(blk->qs);
    hi = vld1q_s8(blk->qs + 16);
    std::memcpy(&d, &blk->d, sizeof d);
  }
};
// Q4_0: value i < 16 is the low nibble of byte i, value 16 + i the high nibble; minus 8.
struct Q4_0Block {
  static void load(const uint8_t* row, int64_t b, int8x16_t& lo, int8x16_t& hi, uint16_t& d) {
    const BlockQ4_0* blk = reinterpret_cast<const BlockQ4_0*>(row) + b;
    const uint8x16_t x = vld1q_u8(blk->qs);
    const int8x16_t eight = vdupq_n_s8(8);
    lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(x, vdupq_n_u8(0x0F))), eight);
    hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(x, 4)), eight);
    std::memcpy(&d, &blk->d, sizeof d);
  }
};

// r[j] (4 dwords of row j) -> c[k] = dword k of rows 0..3.
inline void transpose4(const int8x16_t r[4], int8x16_t c[4]) {
  const int32x4_t r0 = vreinterpretq_s32_s8(r[0]), r1 = vreinterpretq_s32_s8(r[1]);
  const int32x4_t r2 = vreinterpretq_s32_s8(r[2]), r3 = vreinterpretq_s32_s8(r[3]);
  const int32x4_t t0 = vtrn1q_s32(r0, r1), t1 = vtrn2q_s32(r0, r1);  // rows 0,1: dwords 0,2 / 1,3
  const int32x4_t t2 = vtrn1q_s32(r2, r3), t3 = vtrn2q_s32(r2, r3);  // rows 2,3
  const int64x2_t u0 = vreinterpretq_s64_s32(t0), u1 = vreinterpretq_s64_s32(t1);
  const int64x2_t u2 = vreinterpretq_s64_s32(t2), u3 = vreinterpretq_s64_s32(t3);
  c[0] = vreinterpretq_s8_s64(vtrn1q_s64(u0, u2));
  c[1] = vreinterpretq_s8_s64(vtrn1q_s64(u1, u3));
  c[2] = vreinterpretq_s8_s64(vtrn2q_s64(u0, u2));
  c[3] = vreinterpretq_s8_s64(vtrn2q_s64(u1, u3));
}

// Scores of nr <= 4 rows (Full: nr == 4) for NH heads.
template <class Block, int NH, bool Full>
void scores_rows(const uint8_t* base, size_t row_bytes, int64_t nr, int64_t hd, const QueryBlockQ8* q,
                 int64_t q_stride, float* out, int64_t out_stride) {
  float32x4_t acc[NH];
  EDGELLM_UNROLL
  for (int h = 0; h < NH; ++h) acc[h] = vdupq_n_f32(0.0f);
  for (int64_t b = 0; b < hd / 32; ++b) {
    int8x16_t lo[4], hi[4];
    uint16_t d[4];
    EDGELLM_UNROLL
    for (int j = 0; j < 4; ++j) {
      if (Full || j < nr) {
        Block::load(base + static_cast<size_t>(j) * row_bytes, b, lo[j], hi[j], d[j]);
      } else {
        lo[j] = hi[j] = vdupq_n_s8(0);
        d[j] = 0;
      }
    }
    int8x16_t k[8];  // k[i]: values 4i .. 4i+3 of rows 0..3
    transpose4(lo, k);
    transpose4(hi, k + 4);
    const float32x4_t dk = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(d)));
    EDGELLM_UNROLL
    for (int h = 0; h < NH; ++h) {
      const QueryBlockQ8& qb = q[h * q_stride + b];
      const int8x16_t q0 = vld1q_s8(qb.qs), q1 = vld1q_s8(qb.qs + 16);
      int32x4_t s = vdupq_n_s32(0);
      s = vdotq_laneq_s32(s, k[0], q0, 0);
      s = vdotq_laneq_s32(s, k[1], q0, 1);
      s = vdotq_laneq_s32(s, k[2], q0, 2);
      s = vdotq_laneq_s32(s, k[3], q0, 3);
      s = vdotq_laneq_s32(s, k[4], q1, 0);
      s = vdotq_laneq_s32(s, k[5], q1, 1);
      s = vdotq_laneq_s32(s, k[6], q1, 2);
      s = vdotq_laneq_s32(s, k[7], q1, 3);
      acc[h] = vfmaq_f32(acc[h], vcvtq_f32_s32(s), vmulq_f32(dk, vdupq_n_f32(qb.d)));
    }
  }
  EDGELLM_UNROLL
  for (int h = 0; h < NH; ++h) {
    if (Full) {
      vst1q_f32(out + h * out_stride, acc[h]);
    } else {
      float tmp[4];
      vst1q_f32(tmp, acc[h]);
      std::memcpy(out + h * out_stride, tmp, static_cast<size_t>(nr) * sizeof(float));
    }
  }
}

template <class Block>
void scores_q8(const void* k_rows, size_t row_bytes, int64_t cnt, int64_t hd, const QueryBlockQ8* q, int64_t q_stride,
               int64_t g, float* out, int64_t out_stride) {
  const auto* base = static_cast<const uint8_t*>(k_rows);
  attention::for_head_groups(g, [&](auto nh, int64_t h0) {
    constexpr int NH = decltype(nh)::kValue;
    const QueryBlockQ8* qh = q + h0 * q_stride;
    float* oh = out + h0 * out_stride;
    int64_t s0 = 0;
    for (; s0 + kRows <= cnt; s0 += kRows) {
      scores_rows<Block, NH, true>(base + static_cast<size_t>(s0) * row_bytes, row_bytes, kRows, hd, qh, q_stride,
                                   oh + s0, out_stride);
    }
    if (s0 < cnt) {
      scores_rows<Block, NH, false>(base + static_cast<size_t>(s0) * row_bytes, row_bytes, cnt - s0, hd, qh, q_stride,
                                    oh + s0, out_stride);
    }
  });
}

}  // namespace

void scores_q8_q8_0(const void* k, size_t rb, int64_t cnt, int64_t hd, const QueryBlockQ8* q, int64_t qs, int64_t g,
                    float* s, int64_t ss) {
  scores_q8<Q8_0Block>(k, rb, cnt, hd, q, qs, g, s, ss);
}
void scores_q8_q4_0(const void* k, size_t rb, int64_t cnt, int64_t hd, const QueryBlockQ8* q, int64_t qs, int64_t g,
                    float* s, int64_t ss) {
  scores_q8<Q4_0Block>(k, rb, cnt, hd, q, qs, g, s, ss);
}

}  // namespace edgellm::kernels::attention_dotprod
