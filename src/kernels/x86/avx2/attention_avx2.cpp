// AVX2 + FMA + F16C attention kernels (kernels/attention.h) over KV rows in their stored type.
// Same scheme as the AVX-512 file with 8 lanes and 16 registers:
//
// Scores: 8 rows at a time; per 8-element chunk of the head dimension the 8 row chunks are
// widened to F32 and transposed (register i = element i of the 8 rows). The transposed chunk is
// parked in a 256-byte stack buffer (L1) so up to 8 head accumulators fit beside it; each query
// element is broadcast and multiply-added into the accumulator of its head (lanes = rows).
//
// Accumulate: NH heads x CH chunks of accumulators stay in registers over all rows; each row
// chunk is widened once and used by every head.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/attention_head_groups.h"
#include "kernels/attention_impl.h"
#include "kernels/blocks.h"

namespace edgellm::kernels::attention_avx2 {
namespace {

// Fully unroll the loops over heads, chunks and transpose rows (compile-time bounds) so the
// accumulator arrays become registers; GCC otherwise keeps a stack copy updated every row.
#define EDGELLM_UNROLL _Pragma("GCC unroll 16")

constexpr int64_t kLanes = 8;

// Chunk c (elements [8c, 8c + 8), `width` of them valid, the rest 0) of a row as 8 floats.
struct F32Rows {
  static __m256 load(const uint8_t* row, int64_t c, int64_t width) {
    // Byte arithmetic and memcpy: a row need not be aligned to its element.
    const uint8_t* p = row + c * kLanes * static_cast<int64_t>(sizeof(float));
    if (width == kLanes) return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
    alignas(32) float tmp[8] = {};
    std::memcpy(tmp, p, static_cast<size_t>(width) * sizeof(float));
    return _mm256_load_ps(tmp);
  }
};
struct F16Rows {
  static __m256 load(const uint8_t* row, int64_t c, int64_t width) {
    const uint8_t* p = row + c * kLanes * static_cast<int64_t>(sizeof(uint16_t));
    if (width == kLanes) return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    alignas(16) uint16_t tmp[8] = {};
    std::memcpy(tmp, p, static_cast<size_t>(width) * sizeof(uint16_t));
    return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(tmp)));
  }
};
// Q8_0 rows are whole blocks (head_dim a multiple of 32): chunk c is quarter c % 4 of block c / 4.
// d * q in F32, exactly as dequantize_row computes it.
struct Q8_0Rows {
  static __m256 load(const uint8_t* row, int64_t c, int64_t) {
    const BlockQ8_0* b = reinterpret_cast<const BlockQ8_0*>(row) + (c >> 2);
    const __m128i q8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b->qs + kLanes * (c & 3)));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8)), _mm256_set1_ps(_cvtsh_ss(b->d)));
  }
};
// Q4_0 rows are whole blocks too: chunk c is quarter c % 4 of block c / 4, i.e. the low (quarters
// 0, 1) or high (2, 3) nibbles of the 8 bytes qs[8 (c % 2) ..]. (nibble - 8) * d in F32, exactly
// as dequantize_row computes it.
struct Q4_0Rows {
  static __m256 load(const uint8_t* row, int64_t c, int64_t) {
    const BlockQ4_0* b = reinterpret_cast<const BlockQ4_0*>(row) + (c >> 2);
    __m128i q4 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b->qs + kLanes * (c & 1)));
    if ((c & 2) != 0) q4 = _mm_srli_epi16(q4, 4);
    const __m128i q8 = _mm_sub_epi8(_mm_and_si128(q4, _mm_set1_epi8(0x0F)), _mm_set1_epi8(8));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8)), _mm256_set1_ps(_cvtsh_ss(b->d)));
  }
};

// 8x8 transpose: r[j] lane i -> col[i] lane j (unpack, shuffle, then swap 128-bit halves).
inline void transpose8_to(const __m256 r[8], float* col) {
  __m256 t[8], u[8];
  EDGELLM_UNROLL
  for (int j = 0; j < 8; j += 2) {
    t[j] = _mm256_unpacklo_ps(r[j], r[j + 1]);
    t[j + 1] = _mm256_unpackhi_ps(r[j], r[j + 1]);
  }
  EDGELLM_UNROLL
  for (int G = 0; G < 2; ++G) {
    u[4 * G + 0] = _mm256_shuffle_ps(t[4 * G], t[4 * G + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * G + 1] = _mm256_shuffle_ps(t[4 * G], t[4 * G + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[4 * G + 2] = _mm256_shuffle_ps(t[4 * G + 1], t[4 * G + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * G + 3] = _mm256_shuffle_ps(t[4 * G + 1], t[4 * G + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  EDGELLM_UNROLL
  for (int e = 0; e < 4; ++e) {
    _mm256_store_ps(col + e * 8, _mm256_permute2f128_ps(u[e], u[4 + e], 0x20));
    _mm256_store_ps(col + (4 + e) * 8, _mm256_permute2f128_ps(u[e], u[4 + e], 0x31));
  }
}

// Chunk c (`width` valid elements) of rows 0 .. nr-1 (nr <= 8) widened and transposed into col:
// col[8i + j] = element 8c + i of row j, rows past nr zero.
template <class Rows>
EDGELLM_ALWAYS_INLINE void load_transposed_chunk(const uint8_t* base, size_t row_bytes, int64_t nr, int64_t c,
                                                 int64_t width, float* col) {
  __m256 r[8];
  EDGELLM_UNROLL
  for (int j = 0; j < 8; ++j) {
    r[j] = j < nr ? Rows::load(base + static_cast<size_t>(j) * row_bytes, c, width) : _mm256_setzero_ps();
  }
  transpose8_to(r, col);
}

constexpr int partials_for(int nh) {
  return nh == 1 ? 8 : nh == 2 ? 4 : nh == 3 ? 3 : nh <= 6 ? 2 : 1;
}

// Scores of nr <= 8 rows for NH heads.
template <class Rows, int NH>
void scores_block(const uint8_t* base, size_t row_bytes, int64_t nr, int64_t hd, const float* q, int64_t q_stride,
                  float scale, float* out, int64_t out_stride) {
  constexpr int P = partials_for(NH);
  __m256 acc[NH][P];
  EDGELLM_UNROLL
  for (int h = 0; h < NH; ++h) {
    EDGELLM_UNROLL
    for (int k = 0; k < P; ++k) acc[h][k] = _mm256_setzero_ps();
  }
  alignas(32) float col[64];
  const int64_t n_chunks = (hd + kLanes - 1) / kLanes;
  for (int64_t c = 0; c < n_chunks; ++c) {
    const int64_t width = hd - c * kLanes < kLanes ? hd - c * kLanes : kLanes;
    load_transposed_chunk<Rows>(base, row_bytes, nr, c, width, col);
    // This chunk of the NH query rows, packed [NH][8] so the broadcasts address one base register.
    alignas(32) float qp[NH * 8] = {};
    EDGELLM_UNROLL
    for (int h = 0; h < NH; ++h) {
      const float* qh = q + h * q_stride + c * kLanes;
      if (width == kLanes) {
        _mm256_store_ps(qp + 8 * h, _mm256_loadu_ps(qh));
      } else {
        for (int64_t i = 0; i < width; ++i) qp[8 * h + i] = qh[i];
      }
    }
    if (width == kLanes) {
      // Constant indices: the partial accumulators stay in registers.
      EDGELLM_UNROLL
      for (int i = 0; i < 8; ++i) {
        const __m256 ci = _mm256_load_ps(col + i * 8);
        EDGELLM_UNROLL
        for (int h = 0; h < NH; ++h) {
          acc[h][i % P] = _mm256_fmadd_ps(ci, _mm256_broadcast_ss(qp + 8 * h + i), acc[h][i % P]);
        }
      }
    } else {
      for (int64_t i = 0; i < width; ++i) {
        const __m256 ci = _mm256_load_ps(col + i * 8);
        EDGELLM_UNROLL
        for (int h = 0; h < NH; ++h) acc[h][0] = _mm256_fmadd_ps(ci, _mm256_broadcast_ss(qp + 8 * h + i), acc[h][0]);
      }
    }
  }
  const __m256 vscale = _mm256_set1_ps(scale);
  EDGELLM_UNROLL
  for (int h = 0; h < NH; ++h) {
    __m256 s = acc[h][0];
    EDGELLM_UNROLL
    for (int k = 1; k < P; ++k) s = _mm256_add_ps(s, acc[h][k]);
    s = _mm256_mul_ps(s, vscale);
    if (nr == kLanes) {
      _mm256_storeu_ps(out + h * out_stride, s);
    } else {
      alignas(32) float tmp[8];
      _mm256_store_ps(tmp, s);
      for (int64_t j = 0; j < nr; ++j) out[h * out_stride + j] = tmp[j];
    }
  }
}

template <class Rows, int NH>
void scores_heads(const uint8_t* base, size_t row_bytes, int64_t cnt, int64_t hd, const float* q, int64_t q_stride,
                  float scale, float* out, int64_t out_stride) {
  for (int64_t s0 = 0; s0 < cnt; s0 += kLanes) {
    const int64_t nr = cnt - s0 < kLanes ? cnt - s0 : kLanes;
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

// Lanes [0, width) of a chunk of out (a partial chunk goes through a zero-padded buffer).
inline __m256 load_out(const float* p, int64_t width) {
  if (width == kLanes) return _mm256_loadu_ps(p);
  alignas(32) float tmp[8] = {};
  for (int64_t i = 0; i < width; ++i) tmp[i] = p[i];
  return _mm256_load_ps(tmp);
}
inline void store_out(float* p, __m256 v, int64_t width) {
  if (width == kLanes) {
    _mm256_storeu_ps(p, v);
    return;
  }
  alignas(32) float tmp[8];
  _mm256_store_ps(tmp, v);
  for (int64_t i = 0; i < width; ++i) p[i] = tmp[i];
}

// out[h][chunks c0 .. c0+CH) += sum_s p[h][s] * v_s[those chunks] for NH heads.
template <class Rows, int NH, int CH>
void accumulate_chunks(const uint8_t* base, size_t row_bytes, int64_t cnt, int64_t c0, int64_t hd, const float* p,
                       int64_t p_stride, float* out, int64_t out_stride) {
  int64_t width[CH];
  __m256 acc[NH][CH];
  EDGELLM_UNROLL
  for (int k = 0; k < CH; ++k) {
    const int64_t left = hd - (c0 + k) * kLanes;
    width[k] = left < kLanes ? left : kLanes;
  }
  EDGELLM_UNROLL
  for (int h = 0; h < NH; ++h) {
    EDGELLM_UNROLL
    for (int k = 0; k < CH; ++k) acc[h][k] = load_out(out + h * out_stride + (c0 + k) * kLanes, width[k]);
  }
  for (int64_t s = 0; s < cnt; ++s) {
    const uint8_t* row = base + static_cast<size_t>(s) * row_bytes;
    __m256 v[CH];
    EDGELLM_UNROLL
    for (int k = 0; k < CH; ++k) v[k] = Rows::load(row, c0 + k, width[k]);
    EDGELLM_UNROLL
    for (int h = 0; h < NH; ++h) {
      const __m256 w = _mm256_broadcast_ss(p + h * p_stride + s);
      EDGELLM_UNROLL
      for (int k = 0; k < CH; ++k) acc[h][k] = _mm256_fmadd_ps(w, v[k], acc[h][k]);
    }
  }
  EDGELLM_UNROLL
  for (int h = 0; h < NH; ++h) {
    EDGELLM_UNROLL
    for (int k = 0; k < CH; ++k) store_out(out + h * out_stride + (c0 + k) * kLanes, acc[h][k], width[k]);
  }
}

// NH * CH accumulators + CH rows + 1 broadcast within the 16 registers.
constexpr int chunks_for(int nh) {
  return nh <= 2 ? 4 : nh == 3 ? 3 : nh <= 6 ? 2 : 1;
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
  switch (n_chunks - c0) {
    case 0: break;
    case 1: accumulate_chunks<Rows, NH, 1>(base, row_bytes, cnt, c0, hd, p, p_stride, out, out_stride); break;
    case 2: accumulate_chunks<Rows, NH, 2>(base, row_bytes, cnt, c0, hd, p, p_stride, out, out_stride); break;
    default: accumulate_chunks<Rows, NH, 3>(base, row_bytes, cnt, c0, hd, p, p_stride, out, out_stride); break;
  }
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

// K^T tile for prefill (attention.h): per 8 rows x 8 dims, the row chunks are widened and
// transposed as in scores_block; line i of the transposed chunk (dim 8c + i of those rows) is then
// stored into column 8c + i of kt. Rows past cnt are zero in the transpose and never stored.
template <class Rows>
void widen_transposed(const void* k_rows, size_t row_bytes, int64_t cnt, int64_t hd, float* kt, int64_t kt_stride) {
  const auto* base = static_cast<const uint8_t*>(k_rows);
  const int64_t n_chunks = (hd + kLanes - 1) / kLanes;
  alignas(32) float col[64];
  for (int64_t s0 = 0; s0 < cnt; s0 += 8) {
    const int64_t nr = cnt - s0 < 8 ? cnt - s0 : 8;
    const uint8_t* rows = base + static_cast<size_t>(s0) * row_bytes;
    for (int64_t c = 0; c < n_chunks; ++c) {
      const int64_t width = hd - c * kLanes < kLanes ? hd - c * kLanes : kLanes;
      load_transposed_chunk<Rows>(rows, row_bytes, nr, c, width, col);
      for (int64_t i = 0; i < width; ++i) {
        float* dst = kt + (c * kLanes + i) * kt_stride + s0;
        if (nr == 8) {
          _mm256_storeu_ps(dst, _mm256_load_ps(col + i * 8));
        } else {
          for (int64_t j = 0; j < nr; ++j) dst[j] = col[i * 8 + j];
        }
      }
    }
  }
}

}  // namespace

// scores_<type>, accumulate_<type> and widen_transposed_<type> of every row type (attention_impl.h).
EDGELLM_ATTENTION_ROW_TYPES(EDGELLM_ATTENTION_TRAMPOLINES)
EDGELLM_ATTENTION_ROW_TYPES(EDGELLM_ATTENTION_WIDEN_TRAMPOLINES)

}  // namespace edgellm::kernels::attention_avx2
