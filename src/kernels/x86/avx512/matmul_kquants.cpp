// AVX-512 VNNI matmul for the K-quants against Q8_K. A super-block (256 elements) is decoded per
// row into 4 ZMM of unsigned codes in element order (64 each, matching 64 contiguous activation
// bytes) plus 4 ZMM of int16 scales. Per ZMM: vpmaddubsw (codes x activations -> 32 int16 pair
// sums, at most 2 * 63 * 127 = 16002) then vpdpwssd (x scales, accumulated as int32): two
// instructions per 64 elements. Mins / Q6_K's -32 offset go through the activation bsums.
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
#include "kernels/x86/avx512/avx512_kernels.h"
#include "kernels/x86/avx512/avx512_util.h"

namespace edgellm::kernels::avx512 {
namespace {

// As in the AVX2 file: 12 packed bytes -> one XMM with scales 0..7 (bytes 0..7) and mins 0..7
// (bytes 8..15), assembled in registers (a byte array would cost a store-forwarding stall).
EDGELLM_ALWAYS_INLINE __m128i unpack_k4_scales(const uint8_t* packed) {
  constexpr uint32_t kLow6 = 0x3f3f3f3f, kLow4 = 0x0f0f0f0f, kLow2 = 0x03030303;
  uint32_t u[3];
  std::memcpy(u, packed, 12);
  return _mm_setr_epi32(static_cast<int>(u[0] & kLow6), static_cast<int>((u[2] & kLow4) | (((u[0] >> 6) & kLow2) << 4)),
                        static_cast<int>(u[1] & kLow6),
                        static_cast<int>(((u[2] >> 4) & kLow4) | (((u[1] >> 6) & kLow2) << 4)));
}

// vpermw index vectors: int16 lane i of the result takes source lane s0 + i / run.
struct LaneTable {
  alignas(64) int16_t idx[4][32];
};
constexpr LaneTable make_lanes(int step, int run) {
  LaneTable t{};
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 32; ++i) t.idx[k][i] = static_cast<int16_t>(step * k + i / run);
  return t;
}
// Q4_K/Q5_K: q[k] holds sub-blocks 2k, 2k+1 (16 int16 lanes each); Q6_K: groups 4k..4k+3 (8 each).
constexpr LaneTable kK4Lanes = make_lanes(2, 16);
constexpr LaneTable kK6Lanes = make_lanes(4, 8);

EDGELLM_ALWAYS_INLINE __m512i lanes(const LaneTable& t, int k) { return _mm512_load_si512(t.idx[k]); }

struct Q8KX {
  const int8_t* q;
  __m256i bsums;
  float d;
};

EDGELLM_ALWAYS_INLINE __m512i load64(const int8_t* p) { return _mm512_loadu_si512(p); }

struct KW {
  __m512i q[4];      // codes of elements 64k .. 64k+63
  __m512i scale[4];  // int16 scale per pair lane of q[k]
  __m256i mins;      // Q4_K/Q5_K: [m0 m0 m1 m1 ... m7 m7] int16; Q6_K: the 16 scales as int16
  float d, dmin;
};

struct KBase {
  static constexpr int64_t kBlockElems = 256;
  using XBlock = BlockQ8_K;
  using W = KW;
  using X = Q8KX;
  using Acc = __m512;
  static EDGELLM_ALWAYS_INLINE void load_x(const XBlock* b, X& x) {
    x.q = b->qs;
    x.bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->bsums));
    x.d = b->d;
  }
  static EDGELLM_ALWAYS_INLINE void zero(Acc& a) { a = _mm512_setzero_ps(); }
  static EDGELLM_ALWAYS_INLINE __m512i dot_codes(const W& w, const X& x) {
    __m512i isum = _mm512_setzero_si512();
    for (int k = 0; k < 4; ++k) {
      isum = _mm512_dpwssd_epi32(isum, _mm512_maddubs_epi16(w.q[k], load64(x.q + 64 * k)), w.scale[k]);
    }
    return isum;
  }
  static EDGELLM_ALWAYS_INLINE float reduce(const Acc& a) { return hsum(a); }
};

// ---------------------------------------------------------------- Q4_K / Q5_K
struct K4Base : KBase {
  static EDGELLM_ALWAYS_INLINE void decode_scales(const uint8_t* packed, uint16_t d, uint16_t dmin, W& w) {
    const __m128i sm = unpack_k4_scales(packed);
    const __m512i s16 = _mm512_castsi256_si512(_mm256_cvtepu8_epi16(sm));
    // q[k] covers sub-blocks 2k (int16 lanes 0-15) and 2k+1 (lanes 16-31).
    for (int k = 0; k < 4; ++k) w.scale[k] = _mm512_permutexvar_epi16(lanes(kK4Lanes, k), s16);
    const __m128i m8 = _mm_cvtepu8_epi16(_mm_srli_si128(sm, 8));
    w.mins = _mm256_set_m128i(_mm_unpackhi_epi16(m8, m8), _mm_unpacklo_epi16(m8, m8));
    w.d = half(d);
    w.dmin = half(dmin);
  }
  static EDGELLM_ALWAYS_INLINE void madd(const W& w, const X& x, Acc& acc) {
    const __m512i isum = dot_codes(w, x);
    const __m256i msum = _mm256_madd_epi16(x.bsums, w.mins);  // lane j: m_j * (bsum 2j + bsum 2j+1)
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_set1_ps(w.d * x.d), acc);
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_zextsi256_si512(msum)), _mm512_set1_ps(-w.dmin * x.d), acc);
  }
};

// 32 bytes of nibbles -> 64 codes: low nibbles (sub-block 2k) then high nibbles (2k+1).
EDGELLM_ALWAYS_INLINE __m512i nibbles_lo_hi(const uint8_t* qs) {
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs));
  const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(v), _mm256_srli_epi16(v, 4), 1);
  return _mm512_and_si512(both, _mm512_set1_epi8(0x0F));
}

struct KQ4_K : K4Base {
  using WBlock = BlockQ4_K;
  static EDGELLM_ALWAYS_INLINE void prefetch(const WBlock* b) { prefetch_ahead(b); }
  static EDGELLM_ALWAYS_INLINE void decode(const WBlock* b, W& w) {
    decode_scales(b->scales, b->d, b->dmin, w);
    for (int k = 0; k < 4; ++k) w.q[k] = nibbles_lo_hi(b->qs + 32 * k);
  }
};

struct KQ5_K : K4Base {
  using WBlock = BlockQ5_K;
  static EDGELLM_ALWAYS_INLINE void prefetch(const WBlock* b) { prefetch_ahead(b); }
  static EDGELLM_ALWAYS_INLINE void decode(const WBlock* b, W& w) {
    decode_scales(b->scales, b->d, b->dmin, w);
    // qh[l] bit j is the fifth bit of element l of sub-block j; both halves of a ZMM see qh.
    const __m512i hb = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qh)));
    for (int k = 0; k < 4; ++k) {
      const __m512i sel = _mm512_inserti64x4(_mm512_set1_epi8(static_cast<char>(1 << (2 * k))),
                                             _mm256_set1_epi8(static_cast<char>(1 << (2 * k + 1))), 1);
      const __mmask64 m = _mm512_test_epi8_mask(hb, sel);
      const __m512i q = nibbles_lo_hi(b->qs + 32 * k);
      w.q[k] = _mm512_mask_add_epi8(q, m, q, _mm512_set1_epi8(16));
    }
  }
};

// ---------------------------------------------------------------- Q6_K
struct KQ6_K : KBase {
  using WBlock = BlockQ6_K;
  static EDGELLM_ALWAYS_INLINE void prefetch(const WBlock* b) { prefetch_ahead(b); }
  static EDGELLM_ALWAYS_INLINE void decode(const WBlock* b, W& w) {
    const __m512i mask4 = _mm512_set1_epi8(0x0F), mask2 = _mm512_set1_epi8(0x03);
    for (int h = 0; h < 2; ++h) {
      // ql[64h .. 64h+63]: low nibbles are elements 128h + [0, 64), high nibbles + [64, 128).
      const __m512i ql = _mm512_loadu_si512(b->ql + 64 * h);
      const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qh + 32 * h)));
      // qh[l] bits (0-1, 2-3) are the top bits of elements l, l+32; (4-5, 6-7) of l+64, l+96.
      const __m512i top01 = _mm512_and_si512(_mm512_srlv_epi64(qh, _mm512_setr_epi64(0, 0, 0, 0, 2, 2, 2, 2)), mask2);
      const __m512i top23 = _mm512_and_si512(_mm512_srlv_epi64(qh, _mm512_setr_epi64(4, 4, 4, 4, 6, 6, 6, 6)), mask2);
      w.q[2 * h] = _mm512_or_si512(_mm512_and_si512(ql, mask4), _mm512_slli_epi16(top01, 4));
      w.q[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), mask4), _mm512_slli_epi16(top23, 4));
    }
    // q[k] covers 16-element groups 4k .. 4k+3: int16 lanes 8i .. 8i+7 belong to group 4k+i.
    const __m256i s16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b->scales)));
    for (int k = 0; k < 4; ++k) w.scale[k] = _mm512_permutexvar_epi16(lanes(kK6Lanes, k), _mm512_castsi256_si512(s16));
    w.mins = s16;
    w.d = half(b->d);
    w.dmin = 0.0f;
  }
  static EDGELLM_ALWAYS_INLINE void madd(const W& w, const X& x, Acc& acc) {
    __m512i isum = dot_codes(w, x);
    // value = code - 32: subtract 32 * sum_k scale_k * bsum_k (8 int32 lanes).
    const __m256i off = _mm256_slli_epi32(_mm256_madd_epi16(x.bsums, w.mins), 5);
    isum = _mm512_sub_epi32(isum, _mm512_zextsi256_si512(off));
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_set1_ps(w.d * x.d), acc);
  }
};

// Prefill tiles: 1 row x 16 tokens, so a decoded super-block (8 ZMM) stays in registers for 16
// tokens next to 16 accumulators (measured 2x the GMAC/s of 4 x 4 tiles, whose decoded rows
// spilled to L1); 4 weight streams for decode.
constexpr int kRT = 1, kTT = 16, kRTDecode = 4;

}  // namespace

// The trampolines of kernel_list.h's K-quant group.
#define EDGELLM_MATMUL_KQUANT(type, fn, K) \
  void fn(EDGELLM_MATMUL_PARAMS) { tiled::matmul_tiled<K, kRT, kTT, kRTDecode>(EDGELLM_MATMUL_ARGS); }
#include "kernels/x86/avx512/kernel_list.h"

}  // namespace edgellm::kernels::avx512
