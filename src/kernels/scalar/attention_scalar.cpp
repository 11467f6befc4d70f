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
struct F32Row {
  static float at(const uint8_t* row, int64_t i) {
    float v;
    std::memcpy(&v, row + i * static_cast<int64_t>(sizeof v), sizeof v);
    return v;
  }
};
struct F16Row {
  static float at(const uint8_t* row, int64_t i) {
    uint16_t h;
    std::memcpy(&h, row + i * static_cast<int64_t>(sizeof h), sizeof h);
    return fp16_to_fp32(h);
  }
};
struct Q8_0Row {
  static float at(const uint8_t* row, int64_t i) {
    const BlockQ8_0& b = reinterpret_cast<const BlockQ8_0*>(row)[i / kQK8_0];
    return fp16_to_fp32(b.d) * static_cast<float>(b.qs[i % kQK8_0]);
  }
};
// Q4_0: element j < 16 of a block is the low nibble of qs[j], element j + 16 the high nibble;
// value d * (nibble - 8), as dequantize_row computes it.
struct Q4_0Row {
  static float at(const uint8_t* row, int64_t i) {
    const BlockQ4_0& b = reinterpret_cast<const BlockQ4_0*>(row)[i / kQK4_0];
    const int64_t j = i % kQK4_0;
    const int nibble = j < kQK4_0 / 2 ? b.qs[j] & 0x0F : b.qs[j - kQK4_0 / 2] >> 4;
    return static_cast<float>(nibble - 8) * fp16_to_fp32(b.d);
  }
};

template <class Row>
void scores(const void* k_rows, size_t row_bytes, int64_t cnt, int64_t hd, const float* q, int64_t q_stride, int64_t g,
            float scale, float* out, int64_t out_stride) {
  const auto* base = static_cast<const uint8_t*>(k_rows);
  for (int64_t h0 = 0; h0 < g; h0 += kHeadChunk) {
    const int64_t nh = std::min(kHeadChunk, g - h0);
    for (int64_t s = 0; s < cnt; ++s) {
      const uint8_t* row = base + static_cast<size_t>(s) * row_bytes;
      float acc[kHeadChunk] = {};
      for (int64_t i = 0; i < hd; ++i) {
        const float k = Row::at(row, i);  // widened once, used by every head of the chunk
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

template <class Row>
void accumulate(const void* v_rows, size_t row_bytes, int64_t cnt, int64_t hd, const float* p, int64_t p_stride,
                int64_t g, float* out, int64_t out_stride) {
  const auto* base = static_cast<const uint8_t*>(v_rows);
  for (int64_t s = 0; s < cnt; ++s) {
    const uint8_t* row = base + static_cast<size_t>(s) * row_bytes;
    for (int64_t i = 0; i < hd; ++i) {
      const float v = Row::at(row, i);
      for (int64_t h = 0; h < g; ++h) out[h * out_stride + i] += p[h * p_stride + s] * v;
    }
  }
}

}  // namespace

void scores_f32(const void* k, size_t rb, int64_t cnt, int64_t hd, const float* q, int64_t qs, int64_t g, float scale,
                float* s, int64_t ss) {
  scores<F32Row>(k, rb, cnt, hd, q, qs, g, scale, s, ss);
}
void scores_f16(const void* k, size_t rb, int64_t cnt, int64_t hd, const float* q, int64_t qs, int64_t g, float scale,
                float* s, int64_t ss) {
  scores<F16Row>(k, rb, cnt, hd, q, qs, g, scale, s, ss);
}
void scores_q8_0(const void* k, size_t rb, int64_t cnt, int64_t hd, const float* q, int64_t qs, int64_t g, float scale,
                 float* s, int64_t ss) {
  scores<Q8_0Row>(k, rb, cnt, hd, q, qs, g, scale, s, ss);
}
void scores_q4_0(const void* k, size_t rb, int64_t cnt, int64_t hd, const float* q, int64_t qs, int64_t g, float scale,
                 float* s, int64_t ss) {
  scores<Q4_0Row>(k, rb, cnt, hd, q, qs, g, scale, s, ss);
}
void scores_q8_q8_0(const void* k, size_t rb, int64_t cnt, int64_t hd, const QueryBlockQ8* q, int64_t qs, int64_t g,
                    float* s, int64_t ss) {
  scores_q8<Q8_0Block>(k, rb, cnt, hd, q, qs, g, s, ss);
}
void scores_q8_q4_0(const void* k, size_t rb, int64_t cnt, int64_t hd, const QueryBlockQ8* q, int64_t qs, int64_t g,
                    float* s, int64_t ss) {
  scores_q8<Q4_0Block>(k, rb, cnt, hd, q, qs, g, s, ss);
}
void accumulate_f32(const void* v, size_t rb, int64_t cnt, int64_t hd, const float* p, int64_t ps, int64_t g,
                    float* out, int64_t os) {
  accumulate<F32Row>(v, rb, cnt, hd, p, ps, g, out, os);
}
void accumulate_f16(const void* v, size_t rb, int64_t cnt, int64_t hd, const float* p, int64_t ps, int64_t g,
                    float* out, int64_t os) {
  accumulate<F16Row>(v, rb, cnt, hd, p, ps, g, out, os);
}
void accumulate_q8_0(const void* v, size_t rb, int64_t cnt, int64_t hd, const float* p, int64_t ps, int64_t g,
                     float* out, int64_t os) {
  accumulate<Q8_0Row>(v, rb, cnt, hd, p, ps, g, out, os);
}
void accumulate_q4_0(const void* v, size_t rb, int64_t cnt, int64_t hd, const float* p, int64_t ps, int64_t g,
                     float* out, int64_t os) {
  accumulate<Q4_0Row>(v, rb, cnt, hd, p, ps, g, out, os);
}

// The BF16-weighted V sum (kernels/attention.h), element by element in the order it defines.
namespace {

constexpr float kFltMin = std::numeric_limits<float>::min();  // smallest normal float

// fp32_to_bf16 (round to nearest even, NaN kept), with magnitudes below FLT_MIN to +0.
uint16_t to_bf16(float x) {
  return std::fabs(x) < kFltMin ? 0 : fp32_to_bf16(x);
}

float flush(float x) {
  return std::fabs(x) < kFltMin ? std::copysign(0.0f, x) : x;
}

// Index of row s's weight of head h, block b in value_weights' tiles (kernels/attention.h).
int64_t weight_at(int64_t s, int64_t h, int64_t b, int64_t g, int64_t nb) {
  return (s / 16) * 16 * g * nb + (h * nb + b) * 16 + s % 16;
}

}  // namespace

void value_weights_q4_0(const void* v, size_t rb, int64_t cnt, int64_t hd, const float* p, int64_t ps, int64_t g,
                        uint16_t* w) {
  const int64_t nb = hd / 32;
  for (int64_t s = 0; s < cnt; ++s) {
    const auto* blocks = reinterpret_cast<const BlockQ4_0*>(static_cast<const uint8_t*>(v) + static_cast<size_t>(s) * rb);
    for (int64_t b = 0; b < nb; ++b) {
      const float d = fp16_to_fp32(blocks[b].d);
      for (int64_t h = 0; h < g; ++h) w[weight_at(s, h, b, g, nb)] = to_bf16(p[h * ps + s] * d);
    }
  }
}

void accumulate_weighted_q4_0(const void* v, size_t rb, int64_t cnt, int64_t hd, const uint16_t* w, int64_t g,
                              float* out, int64_t os) {
  const int64_t nb = hd / 32;
  for (int64_t h = 0; h < g; ++h) {
    for (int64_t i = 0; i < hd; ++i) {
      const int64_t b = i / 32, k = i % 32;
      float acc = flush(out[h * os + i]);
      for (int64_t s = 0; s < cnt; s += 2) {
        float wt[2] = {0.0f, 0.0f}, x[2] = {0.0f, 0.0f};
        for (int64_t j = 0; j < 2 && s + j < cnt; ++j) {
          const auto* blk = reinterpret_cast<const BlockQ4_0*>(static_cast<const uint8_t*>(v) +
                                                               static_cast<size_t>(s + j) * rb) + b;
          const uint8_t q = blk->qs[k % 16];
          wt[j] = bf16_to_fp32(w[weight_at(s + j, h, b, g, nb)]);
          x[j] = static_cast<float>((k < 16 ? (q & 0x0F) : (q >> 4)) - 8);
        }
        acc = flush(std::fma(wt[1], x[1], acc));
        acc = flush(std::fma(wt[0], x[0], acc));
      }
      out[h * os + i] = acc;
    }
  }
}

}  // namespace edgellm::kernels::attention_scalar
