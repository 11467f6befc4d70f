// AVX2 matmul for the K-quants (Q4_K, Q5_K, Q6_K) against Q8_K activations.
//
// A 256-element super-block is decoded once per row into 8 YMM of unsigned codes (one per 32
// elements, in element order) plus int16 scale vectors, kept in an L1-resident struct and reused
// for every token of the tile. Per 32 elements: maddubs(codes, x) -> 16 int16 pair sums (at most
// 2 * 63 * 127 = 16002, no saturation), then madd with the sub-block scales -> 8 int32.
// The mins / the -32 offset of Q6_K are applied through the activation's per-16 sums (bsums).
#include <immintrin.h>

#include <cstring>

#include "kernels/blocks.h"
#include "kernels/tile_driver.h"
#include "kernels/x86/avx2/avx2_kernels.h"
#include "kernels/x86/avx2/avx2_util.h"

namespace edgellm::kernels::avx2 {
namespace {

// Unpacks the 12 packed bytes of Q4_K/Q5_K scales into 8 scales and 8 mins (6 bits each) with
// word operations: bytes 0..7 of the result are the scales, 8..15 the mins (see quant_common.h).
// Built in registers: a byte array read back as a vector would stall on store forwarding.
EDGELLM_ALWAYS_INLINE __m128i unpack_k4_scales(const uint8_t* packed) {
  constexpr uint32_t kLow6 = 0x3f3f3f3f, kLow4 = 0x0f0f0f0f, kLow2 = 0x03030303;
  uint32_t u[3];
  std::memcpy(u, packed, 12);
  const uint32_t sc_lo = u[0] & kLow6;                                          // scales 0..3
  const uint32_t sc_hi = (u[2] & kLow4) | (((u[0] >> 6) & kLow2) << 4);          // scales 4..7
  const uint32_t mn_lo = u[1] & kLow6;                                          // mins 0..3
  const uint32_t mn_hi = ((u[2] >> 4) & kLow4) | (((u[1] >> 6) & kLow2) << 4);  // mins 4..7
  return _mm_setr_epi32(static_cast<int>(sc_lo), static_cast<int>(sc_hi), static_cast<int>(mn_lo),
                        static_cast<int>(mn_hi));
}

struct Q8KX {
  const int8_t* q;
  __m256i bsums;  // 16 int16 sums of 16 activations each
  float d;
};

EDGELLM_ALWAYS_INLINE void load_q8k(const BlockQ8_K* b, Q8KX& x) {
  x.q = b->qs;
  x.bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->bsums));
  x.d = b->d;
}

EDGELLM_ALWAYS_INLINE __m256i load32(const int8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// ---------------------------------------------------------------- Q4_K / Q5_K
struct K4W {
  __m256i q[8];      // codes of sub-block j (32 elements), 0..15 (Q4_K) or 0..31 (Q5_K)
  __m256i scale[8];  // sub-block scale j broadcast as int16
  __m256i mins;      // mins as int16, each twice: [m0 m0 m1 m1 ... m7 m7] to pair with bsums
  float d, dmin;
};

EDGELLM_ALWAYS_INLINE void decode_k4_scales(const uint8_t* packed, uint16_t d, uint16_t dmin, K4W& w) {
  const __m128i sm = unpack_k4_scales(packed);
  // Scales as int16 in both 128-bit lanes; scale j is broadcast with a byte shuffle picking
  // bytes (2j, 2j+1) for every 16-bit lane.
  const __m256i s16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));
  for (int j = 0; j < 8; ++j) w.scale[j] = _mm256_shuffle_epi8(s16, _mm256_set1_epi16(static_cast<short>(((2 * j + 1) << 8) | (2 * j))));
  const __m128i m8 = _mm_cvtepu8_epi16(_mm_srli_si128(sm, 8));
  w.mins = _mm256_set_m128i(_mm_unpackhi_epi16(m8, m8), _mm_unpacklo_epi16(m8, m8));
  w.d = half(d);
  w.dmin = half(dmin);
}

struct K4Base {
  static constexpr int64_t kBlockElems = 256;
  using XBlock = BlockQ8_K;
  using W = K4W;
  using X = Q8KX;
  using Acc = __m256;
  static EDGELLM_ALWAYS_INLINE void load_x(const XBlock* b, X& x) { load_q8k(b, x); }
  static EDGELLM_ALWAYS_INLINE void zero(Acc& a) { a = _mm256_setzero_ps(); }
  static EDGELLM_ALWAYS_INLINE void madd(const W& w, const X& x, Acc& acc) {
    __m256i isum = _mm256_setzero_si256();
    for (int j = 0; j < 8; ++j) {
      const __m256i p16 = _mm256_maddubs_epi16(w.q[j], load32(x.q + 32 * j));
      isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p16, w.scale[j]));
    }
    const __m256i msum = _mm256_madd_epi16(x.bsums, w.mins);  // lane j: m_j * (bsum 2j + bsum 2j+1)
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(w.d * x.d), acc);
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_set1_ps(-w.dmin * x.d), acc);
  }
  static EDGELLM_ALWAYS_INLINE float reduce(const Acc& a) { return hsum(a); }
};

struct KQ4_K : K4Base {
  using WBlock = BlockQ4_K;
  static EDGELLM_ALWAYS_INLINE void prefetch(const WBlock* b) { _mm_prefetch(reinterpret_cast<const char*>(b + 4), _MM_HINT_T0); }
  static EDGELLM_ALWAYS_INLINE void decode(const WBlock* b, W& w) {
    decode_k4_scales(b->scales, b->d, b->dmin, w);
    const __m256i mask = _mm256_set1_epi8(0x0F);
    for (int g = 0; g < 4; ++g) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qs + 32 * g));
      w.q[2 * g] = _mm256_and_si256(v, mask);
      w.q[2 * g + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
    }
  }
};

struct KQ5_K : K4Base {
  using WBlock = BlockQ5_K;
  static EDGELLM_ALWAYS_INLINE void prefetch(const WBlock* b) { _mm_prefetch(reinterpret_cast<const char*>(b + 4), _MM_HINT_T0); }
  static EDGELLM_ALWAYS_INLINE void decode(const WBlock* b, W& w) {
    decode_k4_scales(b->scales, b->d, b->dmin, w);
    const __m256i mask = _mm256_set1_epi8(0x0F);
    const __m256i one = _mm256_set1_epi8(1);
    const __m256i hbits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qh));
    for (int g = 0; g < 4; ++g) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qs + 32 * g));
      // Bit j of qh[l] is the fifth bit of element l of sub-block j: move it to 0x10.
      const __m256i h0 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * g), one), 4);
      const __m256i h1 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * g + 1), one), 4);
      w.q[2 * g] = _mm256_or_si256(_mm256_and_si256(v, mask), h0);
      w.q[2 * g + 1] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), mask), h1);
    }
  }
};

// ---------------------------------------------------------------- Q6_K
struct K6W {
  __m256i q[8];      // codes 0..63 of elements 32j .. 32j+31
  __m256i scale[8];  // int16: 8 lanes of scale 2j then 8 lanes of scale 2j+1
  __m256i scales16;  // all 16 scales as int16, to pair with bsums
  float d;
};

struct KQ6_K {
  static constexpr int64_t kBlockElems = 256;
  using WBlock = BlockQ6_K;
  using XBlock = BlockQ8_K;
  using W = K6W;
  using X = Q8KX;
  using Acc = __m256;
  static EDGELLM_ALWAYS_INLINE void prefetch(const WBlock* b) { _mm_prefetch(reinterpret_cast<const char*>(b + 4), _MM_HINT_T0); }
  static EDGELLM_ALWAYS_INLINE void decode(const WBlock* b, W& w) {
    const __m256i mask4 = _mm256_set1_epi8(0x0F);
    const __m256i mask2 = _mm256_set1_epi8(0x03);
    for (int half_i = 0; half_i < 2; ++half_i) {
      const uint8_t* ql = b->ql + 64 * half_i;
      const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
      const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32));
      const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qh + 32 * half_i));
      // Elements l, l+32, l+64, l+96 of this half: low/high nibbles of ql[l], ql[l+32] and bit
      // pairs (0-1, 2-3, 4-5, 6-7) of qh[l] as bits 4-5.
      const __m256i hb0 = _mm256_slli_epi16(_mm256_and_si256(h, mask2), 4);
      const __m256i hb1 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2), mask2), 4);
      const __m256i hb2 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 4), mask2), 4);
      const __m256i hb3 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 6), mask2), 4);
      w.q[4 * half_i + 0] = _mm256_or_si256(_mm256_and_si256(l0, mask4), hb0);
      w.q[4 * half_i + 1] = _mm256_or_si256(_mm256_and_si256(l1, mask4), hb1);
      w.q[4 * half_i + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), mask4), hb2);
      w.q[4 * half_i + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), mask4), hb3);
    }
    for (int j = 0; j < 8; ++j) {
      w.scale[j] = _mm256_set_m128i(_mm_set1_epi16(b->scales[2 * j + 1]), _mm_set1_epi16(b->scales[2 * j]));
    }
    w.scales16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b->scales)));
    w.d = half(b->d);
  }
  static EDGELLM_ALWAYS_INLINE void load_x(const XBlock* b, X& x) { load_q8k(b, x); }
  static EDGELLM_ALWAYS_INLINE void zero(Acc& a) { a = _mm256_setzero_ps(); }
  static EDGELLM_ALWAYS_INLINE void madd(const W& w, const X& x, Acc& acc) {
    __m256i isum = _mm256_setzero_si256();
    for (int j = 0; j < 8; ++j) {
      const __m256i p16 = _mm256_maddubs_epi16(w.q[j], load32(x.q + 32 * j));
      isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p16, w.scale[j]));
    }
    // value = code - 32: subtract 32 * sum_k scale_k * bsum_k.
    const __m256i off = _mm256_madd_epi16(x.bsums, w.scales16);
    isum = _mm256_sub_epi32(isum, _mm256_slli_epi32(off, 5));
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(w.d * x.d), acc);
  }
  static EDGELLM_ALWAYS_INLINE float reduce(const Acc& a) { return hsum(a); }
};

// Decoded K-quant weights live in L1, so wider token tiles are cheap: 2 rows x 4 tokens.
constexpr int kRT = 2, kTT = 4, kRTDecode = 2;

}  // namespace

// The trampolines of kernel_list.h's K-quant group.
#define EDGELLM_MATMUL_KQUANT(type, fn, K) \
  void fn(EDGELLM_MATMUL_PARAMS) { tiled::matmul_tiled<K, kRT, kTT, kRTDecode>(EDGELLM_MATMUL_ARGS); }
#include "kernels/x86/avx2/kernel_list.h"

}  // namespace edgellm::kernels::avx2
