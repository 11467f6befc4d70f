// The portable reference of the attention kernels (kernels/attention.h): plain loops, F32
// arithmetic in row order, every element widened exactly as dequantize_row widens it.
#include <algorithm>
#include <cstring>

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

}  // namespace edgellm::kernels::attention_scalar
