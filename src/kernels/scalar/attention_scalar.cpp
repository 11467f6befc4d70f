// The portable reference of the attention kernels (kernels/attention.h): plain loops, F32
// arithmetic in row order, every element widened exactly as dequantize_row widens it.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/fp16.h"
#include "kernels/attention_impl.h"
#include "kernels/blocks.h"

namespace edgellm::kernels::attention_scalar {
namespace {

// Heads handled together: their partial sums live in a small local array.
constexpr int64_t kHeadChunk = 8;

// Element i of a row, widened to F32. Read through memcpy: rows need not be aligned to their
// element (callers may pack rows of any byte length; the tests pad them by 6 bytes).
struct F32Rows {
  static float at(const uint8_t* row, int64_t i) {
    float v;
    std::memcpy(&v, row + i * static_cast<int64_t>(sizeof v), sizeof v);
    return v;
  }
};
struct F16Rows {
  static float at(const uint8_t* row, int64_t i) {
    uint16_t h;
    std::memcpy(&h, row + i * static_cast<int64_t>(sizeof h), sizeof h);
    return fp16_to_fp32(h);
  }
};
struct Q8_0Rows {
  static float at(const uint8_t* row, int64_t i) {
    const BlockQ8_0& b = reinterpret_cast<const BlockQ8_0*>(row)[i / kQK8_0];
    return fp16_to_fp32(b.d) * static_cast<float>(b.qs[i % kQK8_0]);
  }
};
// Q4_0: element j < 16 of a block is the low nibble of qs[j], element j + 16 the high nibble;
// value d * (nibble - 8), as dequantize_row computes it.
struct Q4_0Rows {
  static float at(const uint8_t* row, int64_t i) {
    const BlockQ4_0& b = reinterpret_cast<const BlockQ4_0*>(row)[i / kQK4_0];
    const int64_t j = i % kQK4_0;
    const int nibble = j < kQK4_0 / 2 ? b.qs[j] & 0x0F : b.qs[j - kQK4_0 / 2] >> 4;
    return static_cast<float>(nibble - 8) * fp16_to_fp32(b.d);
  }
};

template <class Rows>
void scores(const void* k_rows, size_t row_bytes, int64_t cnt, int64_t hd, const float* q, int64_t q_stride, int64_t g,
            float scale, float* out, int64_t out_stride) {
  const auto* base = static_cast<const uint8_t*>(k_rows);
  for (int64_t h0 = 0; h0 < g; h0 += kHeadChunk) {
    const int64_t nh = std::min(kHeadChunk, g - h0);
    for (int64_t s = 0; s < cnt; ++s) {
      const uint8_t* row = base + static_cast<size_t>(s) * row_bytes;
      float acc[kHeadChunk] = {};
      for (int64_t i = 0; i < hd; ++i) {
        const float k = Rows::at(row, i);  // widened once, used by every head of the chunk
        for (int64_t h = 0; h < nh; ++h) acc[h] += q[(h0 + h) * q_stride + i] * k;
      }
      for (int64_t h = 0; h < nh; ++h) out[(h0 + h) * out_stride + s] = scale * acc[h];
    }
  }
}

// Integer value i (< 32) of a K block, and the block scale.
struct Q8_0Block {
  static int value(const uint8_t* row, int64_t b, int i) { return reinterpret_cast<const BlockQ8_0*>(row)[b].qs[i]; }
  static float scale(const uint8_t* row, int64_t b) { return fp16_to_fp32(reinterpret_cast<const BlockQ8_0*>(row)[b].d); }
};
struct Q4_0Block {
  static int value(const uint8_t* row, int64_t b, int i) {
    const BlockQ4_0& blk = reinterpret_cast<const BlockQ4_0*>(row)[b];
    return (i < kQK4_0 / 2 ? blk.qs[i] & 0x0F : blk.qs[i - kQK4_0 / 2] >> 4) - 8;
  }
  static float scale(const uint8_t* row, int64_t b) { return fp16_to_fp32(reinterpret_cast<const BlockQ4_0*>(row)[b].d); }
};

// The definition in kernels/attention.h, literally: exact integer block sums, then one FMA per
// block in block order.
template <class Block>
void scores_q8(const void* k_rows, size_t row_bytes, int64_t cnt, int64_t hd, const QueryBlockQ8* q, int64_t q_stride,
               int64_t g, float* out, int64_t out_stride) {
  const auto* base = static_cast<const uint8_t*>(k_rows);
  const int64_t nb = hd / 32;
  for (int64_t s = 0; s < cnt; ++s) {
    const uint8_t* row = base + static_cast<size_t>(s) * row_bytes;
    for (int64_t h = 0; h < g; ++h) {
      const QueryBlockQ8* qh = q + h * q_stride;
      float acc = 0.0f;
      for (int64_t b = 0; b < nb; ++b) {
        int32_t isum = 0;
        for (int i = 0; i < 32; ++i) isum += Block::value(row, b, i) * qh[b].qs[i];
        acc = std::fma(static_cast<float>(isum), Block::scale(row, b) * qh[b].d, acc);
      }
      out[h * out_stride + s] = acc;
    }
  }
}

template <class Rows>
void accumulate(const void* v_rows, size_t row_bytes, int64_t cnt, int64_t hd, const float* p, int64_t p_stride,
                int64_t g, float* out, int64_t out_stride) {
  const auto* base = static_cast<const uint8_t*>(v_rows);
  for (int64_t s = 0; s < cnt; ++s) {
    const uint8_t* row = base + static_cast<size_t>(s) * row_bytes;
    for (int64_t i = 0; i < hd; ++i) {
      const float v = Rows::at(row, i);
      for (int64_t h = 0; h < g; ++h) out[h * out_stride + i] += p[h * p_stride + s] * v;
    }
  }
}

}  // namespace

// scores_<type> and accumulate_<type> of every row type (attention_impl.h).
EDGELLM_ATTENTION_ROW_TYPES(EDGELLM_ATTENTION_TRAMPOLINES)
void scores_q8_q8_0(const void* k, size_t rb, int64_t cnt, int64_t hd, const QueryBlockQ8* q, int64_t qs, int64_t g,
                    float* s, int64_t ss) {
  scores_q8<Q8_0Block>(k, rb, cnt, hd, q, qs, g, s, ss);
}
void scores_q8_q4_0(const void* k, size_t rb, int64_t cnt, int64_t hd, const QueryBlockQ8* q, int64_t qs, int64_t g,
                    float* s, int64_t ss) {
  scores_q8<Q4_0Block>(k, rb, cnt, hd, q, qs, g, s, ss);
}

// The int8-weighted V sum (kernels/attention.h), element by element in the order it defines.
namespace {

const BlockQ4_0* tile_row(const uint8_t* const* tiles, size_t rb, int64_t s) {
  return reinterpret_cast<const BlockQ4_0*>(tiles[s / kValueTileRows] + static_cast<size_t>(s % kValueTileRows) * rb);
}

}  // namespace

void value_weights_q4_0(const uint8_t* const* tiles, size_t rb, int64_t cnt, int64_t hd, const float* p, int64_t ps,
                        int64_t g, uint8_t* w) {
  const int64_t nb = hd / 32;
  const ValueWeightGroup group_at(g, nb);
  const auto scale_of = [&](int64_t s, int64_t b) { return fp16_to_fp32(tile_row(tiles, rb, s)[b].d); };
  for (int64_t s0 = 0; s0 < cnt; s0 += kValueWeightGroupRows) {
    uint8_t* grp = w + (s0 / kValueWeightGroupRows) * group_at.bytes;
    const int64_t rows = std::min(kValueWeightGroupRows, cnt - s0);
    for (int64_t h = 0; h < g; ++h) {
      for (int64_t b = 0; b < nb; ++b) {
        float x[kValueWeightGroupRows] = {};
        float m = 0.0f;
        for (int64_t j = 0; j < rows; ++j) {
          x[j] = p[h * ps + s0 + j] * scale_of(s0 + j, b);
          m = std::fabs(x[j]) > m ? std::fabs(x[j]) : m;
        }
        const bool ok = m >= kValueWeightMinMax && m <= std::numeric_limits<float>::max();
        const float inv = ok ? 127.0f / m : 0.0f;
        int32_t sum = 0;
        for (int64_t j = 0; j < kValueWeightGroupRows; ++j) {
          const float r = std::nearbyint(x[j] * inv);  // round to nearest even (the default mode)
          // A NaN (non-finite input) becomes 0 here: unspecified by the contract, not undefined.
          const int32_t q = r == r ? static_cast<int32_t>(std::clamp(r, -127.0f, 127.0f)) : 0;
          grp[group_at.weights_offset(h, b) + j] = static_cast<uint8_t>(static_cast<int8_t>(q));
          sum += q;
        }
        const float scale = m < kValueWeightMinMax ? 0.0f : m / 127.0f;
        const int32_t offset = 8 * sum;
        std::memcpy(grp + group_at.scale_offset(h, b), &scale, sizeof scale);
        std::memcpy(grp + group_at.offset_offset(h, b), &offset, sizeof offset);
      }
    }
  }
}

void accumulate_weighted_q4_0(const uint8_t* const* tiles, size_t rb, int64_t cnt, int64_t hd, const uint8_t* w,
                              int64_t g, float* out, int64_t os) {
  const int64_t nb = hd / 32;
  const ValueWeightGroup group_at(g, nb);
  for (int64_t s0 = 0; s0 < cnt; s0 += kValueWeightGroupRows) {
    const uint8_t* grp = w + (s0 / kValueWeightGroupRows) * group_at.bytes;
    const int64_t rows = std::min(kValueWeightGroupRows, cnt - s0);
    for (int64_t h = 0; h < g; ++h) {
      for (int64_t i = 0; i < hd; ++i) {
        const int64_t b = i / 32, k = i % 32;
        int32_t isum = 0;
        for (int64_t j = 0; j < rows; ++j) {
          const uint8_t byte = tile_row(tiles, rb, s0 + j)[b].qs[k % 16];
          const int32_t code = k < 16 ? (byte & 0x0F) : (byte >> 4);
          isum += static_cast<int8_t>(grp[group_at.weights_offset(h, b) + j]) * code;
        }
        float scale;
        int32_t offset;
        std::memcpy(&scale, grp + group_at.scale_offset(h, b), sizeof scale);
        std::memcpy(&offset, grp + group_at.offset_offset(h, b), sizeof offset);
        out[h * os + i] = std::fma(static_cast<float>(isum - offset), scale, out[h * os + i]);
      }
    }
  }
}

}  // namespace edgellm::kernels::attention_scalar
