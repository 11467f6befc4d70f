// AVX2 matmul for the 32-element block types: Q4_0, Q5_0, Q8_0 (x Q8_0) and Q4_1, Q5_1 (x Q8_1).
//
// One block = one YMM of 32 int8 weights. Signed weights use the sign trick, because
// _mm256_maddubs_epi16 multiplies UNSIGNED x signed bytes: |w| * (x with w's sign) = w * x.
// Pairs of products sum to at most 2 * 128 * 127 < 32767, so the int16 step never saturates.
// The _1 types have unsigned codes (0..31) and go straight into maddubs; their min term
// m_w * s_x (s_x = d_x * sum q_x, stored in Q8_1) is accumulated as a scalar per block.
#include <immintrin.h>

#include <cstring>

#include "kernels/blocks.h"
#include "kernels/tile_driver.h"
#include "kernels/x86/avx2/avx2_kernels.h"
#include "kernels/x86/avx2/avx2_util.h"

namespace edgellm::kernels::avx2 {
namespace {

// 32 nibbles of a Q4/Q5 block: low nibbles are elements 0..15, high nibbles 16..31.
EDGELLM_ALWAYS_INLINE __m256i unpack_nibbles(const uint8_t* qs) {
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i v = _mm256_set_m128i(_mm_srli_epi16(raw, 4), raw);
  return _mm256_and_si256(v, _mm256_set1_epi8(0x0F));
}

// 0x10 in byte i where bit i of the 32-bit qh word is set (the fifth bit of Q5 element i).
EDGELLM_ALWAYS_INLINE __m256i fifth_bits(const uint8_t* qh) {
  uint32_t bits;
  std::memcpy(&bits, qh, sizeof bits);
  // Byte i gets byte i/8 of the word, then is tested against bit i%8.
  const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)),
                                             _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                                               0x0101010101010101, 0x0000000000000000));
  const __m256i sel = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, sel), sel);
  return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

// Sum of the 32 products w[i] * x[i] as 8 int32 lanes (signed weights).
EDGELLM_ALWAYS_INLINE __m256i dot_signed(__m256i abs_w, __m256i w, __m256i x) {
  const __m256i p16 = _mm256_maddubs_epi16(abs_w, _mm256_sign_epi8(x, w));
  return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
}

// Unsigned weights (codes 0..31).
EDGELLM_ALWAYS_INLINE __m256i dot_unsigned(__m256i w, __m256i x) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), _mm256_set1_epi16(1));
}

struct SignedW {
  __m256i abs_q;
  __m256i q;
  __m256 d;
};

struct Q8X {
  __m256i q;
  __m256 d;
};

// Shared by Q4_0 / Q5_0 / Q8_0: activation Q8_0, float lane accumulator.
struct SignedBase {
  static constexpr int64_t kBlockElems = 32;
  using XBlock = BlockQ8_0;
  using W = SignedW;
  using X = Q8X;
  using Acc = __m256;
  static EDGELLM_ALWAYS_INLINE void load_x(const BlockQ8_0* b, X& x) {
    x.q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qs));
    x.d = _mm256_set1_ps(half(b->d));
  }
  static EDGELLM_ALWAYS_INLINE void zero(Acc& a) { a = _mm256_setzero_ps(); }
  static EDGELLM_ALWAYS_INLINE void madd(const W& w, const X& x, Acc& acc) {
    const __m256i p = dot_signed(w.abs_q, w.q, x.q);
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_mul_ps(w.d, x.d), acc);
  }
  static EDGELLM_ALWAYS_INLINE float reduce(const Acc& a) { return hsum(a); }
};

struct KQ4_0 : SignedBase {
  using WBlock = BlockQ4_0;
  static EDGELLM_ALWAYS_INLINE void prefetch(const WBlock* b) { _mm_prefetch(reinterpret_cast<const char*>(b + 16), _MM_HINT_T0); }
  static EDGELLM_ALWAYS_INLINE void decode(const WBlock* b, W& w) {
    w.q = _mm256_sub_epi8(unpack_nibbles(b->qs), _mm256_set1_epi8(8));
    w.abs_q = _mm256_sign_epi8(w.q, w.q);
    w.d = _mm256_set1_ps(half(b->d));
  }
};

struct KQ5_0 : SignedBase {
  using WBlock = BlockQ5_0;
  static EDGELLM_ALWAYS_INLINE void prefetch(const WBlock* b) { _mm_prefetch(reinterpret_cast<const char*>(b + 16), _MM_HINT_T0); }
  static EDGELLM_ALWAYS_INLINE void decode(const WBlock* b, W& w) {
    const __m256i q = _mm256_or_si256(unpack_nibbles(b->qs), fifth_bits(b->qh));
    w.q = _mm256_sub_epi8(q, _mm256_set1_epi8(16));
    w.abs_q = _mm256_sign_epi8(w.q, w.q);
    w.d = _mm256_set1_ps(half(b->d));
  }
};

struct KQ8_0 : SignedBase {
  using WBlock = BlockQ8_0;
  static EDGELLM_ALWAYS_INLINE void prefetch(const WBlock* b) { _mm_prefetch(reinterpret_cast<const char*>(b + 8), _MM_HINT_T0); }
  static EDGELLM_ALWAYS_INLINE void decode(const WBlock* b, W& w) {
    w.q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qs));
    w.abs_q = _mm256_sign_epi8(w.q, w.q);
    w.d = _mm256_set1_ps(half(b->d));
  }
};

struct MinW {
  __m256i q;  // unsigned codes
  __m256 d;
  float m;
};

struct Q8_1X {
  __m256i q;
  __m256 d;
  float s;
};

struct MinAcc {
  __m256 v;
  float s;
};

// Shared by Q4_1 / Q5_1: activation Q8_1.
struct MinBase {
  static constexpr int64_t kBlockElems = 32;
  using XBlock = BlockQ8_1;
  using W = MinW;
  using X = Q8_1X;
  using Acc = MinAcc;
  static EDGELLM_ALWAYS_INLINE void load_x(const BlockQ8_1* b, X& x) {
    x.q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qs));
    x.d = _mm256_set1_ps(half(b->d));
    x.s = half(b->s);
  }
  static EDGELLM_ALWAYS_INLINE void zero(Acc& a) {
    a.v = _mm256_setzero_ps();
    a.s = 0.0f;
  }
  static EDGELLM_ALWAYS_INLINE void madd(const W& w, const X& x, Acc& acc) {
    const __m256i p = dot_unsigned(w.q, x.q);
    acc.v = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_mul_ps(w.d, x.d), acc.v);
    acc.s += w.m * x.s;
  }
  static EDGELLM_ALWAYS_INLINE float reduce(const Acc& a) { return hsum(a.v) + a.s; }
};

struct KQ4_1 : MinBase {
  using WBlock = BlockQ4_1;
  static EDGELLM_ALWAYS_INLINE void prefetch(const WBlock* b) { _mm_prefetch(reinterpret_cast<const char*>(b + 16), _MM_HINT_T0); }
  static EDGELLM_ALWAYS_INLINE void decode(const WBlock* b, W& w) {
    w.q = unpack_nibbles(b->qs);
    w.d = _mm256_set1_ps(half(b->d));
    w.m = half(b->m);
  }
};

struct KQ5_1 : MinBase {
  using WBlock = BlockQ5_1;
  static EDGELLM_ALWAYS_INLINE void prefetch(const WBlock* b) { _mm_prefetch(reinterpret_cast<const char*>(b + 16), _MM_HINT_T0); }
  static EDGELLM_ALWAYS_INLINE void decode(const WBlock* b, W& w) {
    w.q = _mm256_or_si256(unpack_nibbles(b->qs), fifth_bits(b->qh));
    w.d = _mm256_set1_ps(half(b->d));
    w.m = half(b->m);
  }
};

// Tiles: 2 rows x 4 tokens for prefill (8 YMM accumulators + 2 decoded blocks fit the 16
// registers), 4 rows for decode (4 independent weight streams).
constexpr int kRT = 2, kTT = 4, kRTDecode = 4;

}  // namespace

// The trampolines of kernel_list.h's legacy group.
#define EDGELLM_MATMUL_LEGACY(type, fn, K) \
  void fn(EDGELLM_MATMUL_PARAMS) { tiled::matmul_tiled<K, kRT, kTT, kRTDecode>(EDGELLM_MATMUL_ARGS); }
#include "kernels/x86/avx2/kernel_list.h"

}  // namespace edgellm::kernels::avx2
