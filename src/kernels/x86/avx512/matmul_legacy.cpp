// AVX-512 VNNI matmul for the 32-element block types. One ZMM holds two consecutive blocks
// (64 int8), and vpdpbusd does multiply + 4-way add + accumulate in one instruction.
//
// vpdpbusd multiplies UNSIGNED bytes by SIGNED bytes. For Q8_0's signed weights the
// activation is offset to unsigned, xu = x + 128 (a sign-bit flip), so
//   sum xu * w = sum x * w + 128 * sum w;
// 128 * sum w depends only on the weights, so it is computed once per decoded block (with
// vpdpbusd of 0x80 bytes) and its negation seeds the accumulation: one instruction per pair.
// Unsigned weights (Q4_1, Q5_1 codes) multiply the signed activation directly.
// Rows with an odd number of blocks (never the case for real model widths) use the AVX2 kernel.
// GCC 12 reports -Wmaybe-uninitialized inside its own AVX-512 intrinsic headers (the
// _mm512_undefined_* pass-through operands, GCC PR105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <cstring>

#include "kernels/blocks.h"
#include "kernels/tile_driver.h"
#include "kernels/x86/avx2/avx2_kernels.h"
#include "kernels/x86/avx512/avx512_kernels.h"
#include "kernels/x86/avx512/avx512_util.h"

namespace edgellm::kernels::avx512 {
namespace {

template <class B>
struct Two {
  B b[2];
};

// Two blocks of 16 nibble bytes -> 64 codes in element order: [blk0 low | blk0 high | blk1 low |
// blk1 high] nibbles = elements 0..31 of block 0 then of block 1.
EDGELLM_ALWAYS_INLINE __m512i unpack_nibbles_2(const uint8_t* qs0, const uint8_t* qs1) {
  const __m256i v = _mm256_set_m128i(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs1)),
                                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs0)));
  // Qwords [a0 a1 b0 b1] -> [a0 a1 a0 a1 b0 b1 b0 b1], then shift the copies for high nibbles.
  const __m512i dup = _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 1, 0, 1, 2, 3, 2, 3), _mm512_castsi256_si512(v));
  const __m512i shifted = _mm512_srlv_epi64(dup, _mm512_setr_epi64(0, 0, 4, 4, 0, 0, 4, 4));
  return _mm512_and_si512(shifted, _mm512_set1_epi8(0x0F));
}

// Fifth bits of two Q5 blocks as a byte mask (bit i = element i of block 0, bit 32+i of block 1).
EDGELLM_ALWAYS_INLINE __mmask64 fifth_bits_2(const uint8_t* qh0, const uint8_t* qh1) {
  uint32_t a, b;
  std::memcpy(&a, qh0, 4);
  std::memcpy(&b, qh1, 4);
  return _cvtu64_mask64(static_cast<uint64_t>(a) | (static_cast<uint64_t>(b) << 32));
}

struct SignedW {
  __m512i q;        // signed weights
  __m512i neg_corr; // -128 * (sum of each 4 weights), the seed of vpdpbusd
  __m512 d;         // block scale, lanes 0-7 block 0, 8-15 block 1
};

EDGELLM_ALWAYS_INLINE void finish_signed(__m512i q, uint16_t d0, uint16_t d1, SignedW& w) {
  w.q = q;
  w.neg_corr = _mm512_sub_epi32(_mm512_setzero_si512(),
                                _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(static_cast<char>(0x80)), q));
  w.d = two_halves_f16(d0, d1);
}

struct UX {
  __m512i xu;  // activation + 128, as unsigned bytes
  __m512 d;
};

struct SignedBase {
  static constexpr int64_t kBlockElems = 64;
  using XBlock = Two<BlockQ8_0>;
  using W = SignedW;
  using X = UX;
  using Acc = __m512;
  static EDGELLM_ALWAYS_INLINE void load_x(const XBlock* b, X& x) {
    x.xu = _mm512_xor_si512(load_2x32(b->b[0].qs, b->b[1].qs), _mm512_set1_epi8(static_cast<char>(0x80)));
    x.d = two_halves_f16(b->b[0].d, b->b[1].d);
  }
  static EDGELLM_ALWAYS_INLINE void zero(Acc& a) { a = _mm512_setzero_ps(); }
  static EDGELLM_ALWAYS_INLINE void madd(const W& w, const X& x, Acc& acc) {
    const __m512i p = _mm512_dpbusd_epi32(w.neg_corr, x.xu, w.q);
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(w.d, x.d), acc);
  }
  static EDGELLM_ALWAYS_INLINE float reduce(const Acc& a) { return hsum(a); }
};

// Q4_0 / Q5_0: the codes are unsigned (0..15 / 0..31) with a fixed offset (8 / 16), so they go
// into vpdpbusd as they are and the offset is removed per token instead of per row:
//   sum (c - off) * x = sum c * x - off * sum x,
// with -off * (sum of each 4 activations) computed once per activation block (shared by all the
// rows of a tile) as the accumulation seed. Decoding a weight block is then just the unpack.
template <int kOffsetShift>  // off = 1 << kOffsetShift
struct OffsetBase {
  static constexpr int64_t kBlockElems = 64;
  using XBlock = Two<BlockQ8_0>;
  struct W {
    __m512i codes;
    __m512 d;
  };
  struct X {
    __m512i x;
    __m512i neg_off_sum;  // -off * (x[4i] + ... + x[4i+3]) per int32 lane
    __m512 d;
  };
  using Acc = __m512;
  static EDGELLM_ALWAYS_INLINE void load_x(const XBlock* b, X& x) {
    x.x = load_2x32(b->b[0].qs, b->b[1].qs);
    const __m512i sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(1), x.x);
    x.neg_off_sum = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(sums, kOffsetShift));
    x.d = two_halves_f16(b->b[0].d, b->b[1].d);
  }
  static EDGELLM_ALWAYS_INLINE void zero(Acc& a) { a = _mm512_setzero_ps(); }
  static EDGELLM_ALWAYS_INLINE void madd(const W& w, const X& x, Acc& acc) {
    const __m512i p = _mm512_dpbusd_epi32(x.neg_off_sum, w.codes, x.x);
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(w.d, x.d), acc);
  }
  static EDGELLM_ALWAYS_INLINE float reduce(const Acc& a) { return hsum(a); }
};

struct KQ4_0 : OffsetBase<3> {
  using WBlock = Two<BlockQ4_0>;
  static EDGELLM_ALWAYS_INLINE void prefetch(const WBlock* b) { _mm_prefetch(reinterpret_cast<const char*>(b + 8), _MM_HINT_T0); }
  static EDGELLM_ALWAYS_INLINE void decode(const WBlock* b, W& w) {
    w.codes = unpack_nibbles_2(b->b[0].qs, b->b[1].qs);
    w.d = two_halves_f16(b->b[0].d, b->b[1].d);
  }
};

struct KQ5_0 : OffsetBase<4> {
  using WBlock = Two<BlockQ5_0>;
  static EDGELLM_ALWAYS_INLINE void prefetch(const WBlock* b) { _mm_prefetch(reinterpret_cast<const char*>(b + 8), _MM_HINT_T0); }
  static EDGELLM_ALWAYS_INLINE void decode(const WBlock* b, W& w) {
    const __m512i q = unpack_nibbles_2(b->b[0].qs, b->b[1].qs);
    w.codes = _mm512_mask_add_epi8(q, fifth_bits_2(b->b[0].qh, b->b[1].qh), q, _mm512_set1_epi8(16));
    w.d = two_halves_f16(b->b[0].d, b->b[1].d);
  }
};

struct KQ8_0 : SignedBase {
  using WBlock = Two<BlockQ8_0>;
  static EDGELLM_ALWAYS_INLINE void prefetch(const WBlock* b) { _mm_prefetch(reinterpret_cast<const char*>(b + 4), _MM_HINT_T0); }
  static EDGELLM_ALWAYS_INLINE void decode(const WBlock* b, W& w) {
    finish_signed(load_2x32(b->b[0].qs, b->b[1].qs), b->b[0].d, b->b[1].d, w);
  }
};

// ---- Q4_1 / Q5_1: unsigned codes; the min term m_w * s_x of each block is added through an
// extra FMA whose vectors carry m in lane 0 / 8 and s in lanes 0-7 / 8-15.
struct MinW {
  __m512i q;
  __m512 d;
  __m512 m;  // lane 0 = m of block 0, lane 8 = m of block 1, others 0
};

struct SX {
  __m512i x;
  __m512 d;
  __m512 s;
};

EDGELLM_ALWAYS_INLINE __m512 mins_2(uint16_t m0, uint16_t m1) {
  return _mm512_maskz_mov_ps(0x0101, two_halves_f16(m0, m1));
}

struct MinBase {
  static constexpr int64_t kBlockElems = 64;
  using XBlock = Two<BlockQ8_1>;
  using W = MinW;
  using X = SX;
  using Acc = __m512;
  static EDGELLM_ALWAYS_INLINE void load_x(const XBlock* b, X& x) {
    x.x = load_2x32(b->b[0].qs, b->b[1].qs);
    x.d = two_halves_f16(b->b[0].d, b->b[1].d);
    x.s = two_halves_f16(b->b[0].s, b->b[1].s);
  }
  static EDGELLM_ALWAYS_INLINE void zero(Acc& a) { a = _mm512_setzero_ps(); }
  static EDGELLM_ALWAYS_INLINE void madd(const W& w, const X& x, Acc& acc) {
    const __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w.q, x.x);
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(w.d, x.d), acc);
    acc = _mm512_fmadd_ps(w.m, x.s, acc);
  }
  static EDGELLM_ALWAYS_INLINE float reduce(const Acc& a) { return hsum(a); }
};

struct KQ4_1 : MinBase {
  using WBlock = Two<BlockQ4_1>;
  static EDGELLM_ALWAYS_INLINE void prefetch(const WBlock* b) { _mm_prefetch(reinterpret_cast<const char*>(b + 8), _MM_HINT_T0); }
  static EDGELLM_ALWAYS_INLINE void decode(const WBlock* b, W& w) {
    w.q = unpack_nibbles_2(b->b[0].qs, b->b[1].qs);
    w.d = two_halves_f16(b->b[0].d, b->b[1].d);
    w.m = mins_2(b->b[0].m, b->b[1].m);
  }
};

struct KQ5_1 : MinBase {
  using WBlock = Two<BlockQ5_1>;
  static EDGELLM_ALWAYS_INLINE void prefetch(const WBlock* b) { _mm_prefetch(reinterpret_cast<const char*>(b + 8), _MM_HINT_T0); }
  static EDGELLM_ALWAYS_INLINE void decode(const WBlock* b, W& w) {
    const __m512i q = unpack_nibbles_2(b->b[0].qs, b->b[1].qs);
    w.q = _mm512_mask_add_epi8(q, fifth_bits_2(b->b[0].qh, b->b[1].qh), q, _mm512_set1_epi8(16));
    w.d = two_halves_f16(b->b[0].d, b->b[1].d);
    w.m = mins_2(b->b[0].m, b->b[1].m);
  }
};

// 3 rows x 4 tokens: 12 ZMM accumulators + 3 decoded blocks (3 ZMM each) + the activation fit
// the 32 registers; 4 rows for decode.
constexpr int kRT = 3, kTT = 4, kRTDecode = 4;

}  // namespace

// The trampolines of kernel_list.h's legacy group; an odd number of blocks takes the AVX2 kernel.
#define EDGELLM_MATMUL_LEGACY(type, fn, K)                                              \
  void fn(EDGELLM_MATMUL_PARAMS) {                                                      \
    if ((n / 32) % 2 != 0) return avx2::fn(EDGELLM_MATMUL_ARGS);                        \
    tiled::matmul_tiled<K, kRT, kTT, kRTDecode>(EDGELLM_MATMUL_ARGS);                   \
  }
#include "kernels/x86/avx512/kernel_list.h"

}  // namespace edgellm::kernels::avx512
