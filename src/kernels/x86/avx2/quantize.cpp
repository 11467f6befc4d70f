// AVX2 activation quantization (runs once per matmul input row). Produces exactly the bytes of
// the scalar reference: same float operations in the same order per element, Q8_0/Q8_1 round
// half away from zero like roundf, Q8_K rounds half to even like nearest_int.
#include <immintrin.h>

#include <cstring>

#include "kernels/blocks.h"
#include "kernels/scalar/scalar_kernels.h"
#include "kernels/x86/avx2/avx2_kernels.h"
#include "kernels/x86/avx2/avx2_util.h"

namespace edgellm::kernels::avx2 {
namespace {

inline __m256 abs_ps(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

// roundf(v) for |v| < 2^23: truncate, then step away from zero when the dropped part is >= 0.5.
inline __m256i round_away(__m256 v) {
  const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 frac = abs_ps(_mm256_sub_ps(v, t));
  const __m256 step = _mm256_and_ps(_mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ),
                                    _mm256_or_ps(_mm256_set1_ps(1.0f), _mm256_and_ps(v, _mm256_set1_ps(-0.0f))));
  return _mm256_cvttps_epi32(_mm256_add_ps(t, step));
}

// 4 x 8 int32 (each in [-127, 127]) -> 32 int8 in order.
inline __m256i pack_i8(__m256i a, __m256i b, __m256i c, __m256i d) {
  const __m256i ab = _mm256_packs_epi32(a, b);  // lane-interleaved: a0-3 b0-3 | a4-7 b4-7
  const __m256i cd = _mm256_packs_epi32(c, d);
  const __m256i abcd = _mm256_packs_epi16(ab, cd);  // a0-3 b0-3 c0-3 d0-3 | a4-7 b4-7 c4-7 d4-7
  return _mm256_permutevar8x32_epi32(abcd, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

inline uint16_t to_half(float f) {
  return static_cast<uint16_t>(_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(f), _MM_FROUND_TO_NEAREST_INT), 0));
}

// One 32-element block, Q8_0 rule: d = amax / 127, q = roundf(x * (1/d)). Returns sum(q) and
// the unrounded d (Q8_1's s is computed from it, as in the reference).
inline int quantize_block32(const float* x, uint16_t* d_out, int8_t* qs, float* d_float) {
  const __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8), v2 = _mm256_loadu_ps(x + 16),
               v3 = _mm256_loadu_ps(x + 24);
  const __m256 m = _mm256_max_ps(_mm256_max_ps(abs_ps(v0), abs_ps(v1)), _mm256_max_ps(abs_ps(v2), abs_ps(v3)));
  const float amax = hmax(m);
  const float d = amax / 127;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  *d_out = to_half(d);
  *d_float = d;
  const __m256 vid = _mm256_set1_ps(id);
  const __m256i q0 = round_away(_mm256_mul_ps(v0, vid)), q1 = round_away(_mm256_mul_ps(v1, vid)),
                q2 = round_away(_mm256_mul_ps(v2, vid)), q3 = round_away(_mm256_mul_ps(v3, vid));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs), pack_i8(q0, q1, q2, q3));
  return hsum_i32(_mm256_add_epi32(_mm256_add_epi32(q0, q1), _mm256_add_epi32(q2, q3)));
}

}  // namespace

void quantize_q8_0(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ8_0*>(dst);
  float d;
  for (int64_t i = 0; i < n / kQK8_0; ++i) quantize_block32(x + i * kQK8_0, &y[i].d, y[i].qs, &d);
}

// Q8_0 codes with the F16-rounded scale as float and the code sum (repacked weights' input).
void quantize_q8_0s(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ8_0S*>(dst);
  for (int64_t i = 0; i < n / kQK8_0; ++i) {
    uint16_t d16;
    float d;
    y[i].sum = quantize_block32(x + i * kQK8_0, &d16, y[i].qs, &d);
    y[i].d = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(d16)));
  }
}

void quantize_q8_1(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ8_1*>(dst);
  for (int64_t i = 0; i < n / kQK8_1; ++i) {
    float d;
    const int sum = quantize_block32(x + i * kQK8_1, &y[i].d, y[i].qs, &d);
    y[i].s = to_half(static_cast<float>(sum) * d);
  }
}

// Q8_K: iscale = -127 / (signed value of largest magnitude, first on ties), q = round-half-even,
// d = 1 / iscale, bsums over 16.
void quantize_q8_k(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ8_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float* b = x + i * kQK_K;
    __m256 m = _mm256_setzero_ps();
    for (int k = 0; k < kQK_K; k += 8) m = _mm256_max_ps(m, abs_ps(_mm256_loadu_ps(b + k)));
    const float amax = hmax(m);
    if (amax == 0.0f) {
      std::memset(&y[i], 0, sizeof y[i]);
      continue;
    }
    // The first element of magnitude amax, 8 at a time (an element-by-element search was most of
    // this function's time: the maximum is anywhere in the 256).
    float max_signed = 0;
    const __m256 vamax = _mm256_set1_ps(amax);
    for (int k = 0; k < kQK_K; k += 8) {
      const int hit = _mm256_movemask_ps(_mm256_cmp_ps(abs_ps(_mm256_loadu_ps(b + k)), vamax, _CMP_EQ_OQ));
      if (hit != 0) {
        max_signed = b[k + __builtin_ctz(static_cast<unsigned>(hit))];
        break;
      }
    }
    const float iscale = -127.f / max_signed;
    const __m256 vs = _mm256_set1_ps(iscale);
    const __m256i lo = _mm256_set1_epi32(-127), hi = _mm256_set1_epi32(127);
    for (int k = 0; k < kQK_K; k += 32) {
      __m256i q[4];
      for (int j = 0; j < 4; ++j) {
        const __m256i v = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(b + k + 8 * j), vs));
        q[j] = _mm256_max_epi32(lo, _mm256_min_epi32(hi, v));
      }
      const __m256i packed = pack_i8(q[0], q[1], q[2], q[3]);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[i].qs + k), packed);
      // Sums of the two 16-element groups of these 32 values.
      const __m256i s16 = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), packed), _mm256_set1_epi16(1));
      // s16 lanes: [g0 g0 g1 g1 | g0' ...] as 4-element partial sums: lanes 0-3 = elements 0..15.
      alignas(32) int32_t parts[8];
      _mm256_store_si256(reinterpret_cast<__m256i*>(parts), s16);
      y[i].bsums[k / 16] = static_cast<int16_t>(parts[0] + parts[1] + parts[2] + parts[3]);
      y[i].bsums[k / 16 + 1] = static_cast<int16_t>(parts[4] + parts[5] + parts[6] + parts[7]);
    }
    y[i].d = 1.0f / iscale;
  }
}

void quantize_q8_ks(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ8_KS*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    BlockQ8_K q;
    quantize_q8_k(x + i * kQK_K, &q, kQK_K);
    scalar::q8_k_to_q8_ks(q, y[i]);
  }
}

}  // namespace edgellm::kernels::avx2
