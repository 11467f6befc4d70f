// AVX-512 versions of the attention inner loops (q . k over an F16 cache, p * v accumulation)
// and their F32 counterparts. Tails use a masked load, so any length runs in vector code.
// GCC 12 reports -Wmaybe-uninitialized inside its own AVX-512 intrinsic headers (the
// _mm512_undefined_* pass-through operands, GCC PR105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <cmath>

#include "kernels/x86/avx2/avx2_kernels.h"
#include "kernels/x86/avx512/avx512_kernels.h"
#include "kernels/x86/avx512/avx512_util.h"

namespace edgellm::kernels::avx512 {
namespace {

// Lanes 0 .. min(left, 16) - 1: a full vector, or the tail of a row.
inline __mmask16 tail_mask(int64_t left) {
  return left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1u);
}

inline __m512 load_f16_masked(const uint16_t* p, __mmask16 m) {
  return _mm512_maskz_cvtph_ps(0xFFFF, _mm256_maskz_loadu_epi16(m, p));
}

// exp(x) per lane: the AVX2 exp_ps polynomial (x86/avx2/avx2_util.h) at 16 lanes, so both ISAs
// give the same value per element. x < -87.33 gives 0, x > 88 gives +inf.
inline __m512 exp16(__m512 x) {
  const __mmask16 lo = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.33f), _CMP_LT_OQ);
  const __mmask16 hi = _mm512_cmp_ps_mask(x, _mm512_set1_ps(88.0f), _CMP_GT_OQ);
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.33f)), _mm512_set1_ps(88.0f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);  // ln2 split hi + lo
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  // p * 2^n by vscalefps: the same bits as multiplying by the float 2^n (exact, and 2^n is normal
  // for the clamped x: n in [-126, 127]), one instruction instead of convert, add, shift, multiply.
  const __m512 out = _mm512_maskz_scalef_ps(static_cast<__mmask16>(~lo), p, n);
  return _mm512_mask_blend_ps(hi, out, _mm512_set1_ps(__builtin_inff()));
}

}  // namespace

float dot_f32(const float* a, const float* b, int64_t n) {
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc0);
    acc1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), acc1);
  }
  for (; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    acc0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), acc0);
  }
  return hsum(_mm512_add_ps(acc0, acc1));
}

float dot_f16_f32(const uint16_t* a, const float* b, int64_t n) {
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm512_fmadd_ps(load_f16x16(a + i), _mm512_loadu_ps(b + i), acc0);
    acc1 = _mm512_fmadd_ps(load_f16x16(a + i + 16), _mm512_loadu_ps(b + i + 16), acc1);
  }
  for (; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    acc0 = _mm512_fmadd_ps(load_f16_masked(a + i, m), _mm512_maskz_loadu_ps(m, b + i), acc0);
  }
  return hsum(_mm512_add_ps(acc0, acc1));
}

void axpy_f32(float a, const float* x, float* y, int64_t n) {
  const __m512 va = _mm512_set1_ps(a);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(va, _mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, y + i)));
  }
}

void axpy_f16(float a, const uint16_t* x, float* y, int64_t n) {
  const __m512 va = _mm512_set1_ps(a);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(va, load_f16_masked(x + i, m), _mm512_maskz_loadu_ps(m, y + i)));
  }
}

// Three passes as the reference (kernels.h): max, exp(x - max) with the sum in two 16-lane
// accumulators (added in double at the end), scale by 1 / sum. Tails are masked.
void softmax(float* x, int64_t n) {
  __m512 vmax = _mm512_set1_ps(-INFINITY);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    vmax = _mm512_max_ps(vmax, _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), m, x + i));
  }
  const float mx = hmax(vmax);
  if (mx == -INFINITY) {
    for (int64_t i = 0; i < n; ++i) x[i] = 0.0f;
    return;
  }
  const __m512 vm = _mm512_set1_ps(mx);
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 e0 = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm));
    const __m512 e1 = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i + 16), vm));
    _mm512_storeu_ps(x + i, e0);
    _mm512_storeu_ps(x + i + 16, e1);
    s0 = _mm512_add_ps(s0, e0);
    s1 = _mm512_add_ps(s1, e1);
  }
  for (; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 e = _mm512_maskz_mov_ps(m, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), vm)));
    _mm512_mask_storeu_ps(x + i, m, e);
    s0 = _mm512_add_ps(s0, e);
  }
  const double sum = static_cast<double>(hsum(s0)) + static_cast<double>(hsum(s1));
  const __m512 inv = _mm512_set1_ps(static_cast<float>(1.0 / sum));
  for (i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(x + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), inv));
  }
}

// The AVX2 kernel's operations at 16 lanes (exp16 is exp_ps per lane), then the AVX2 kernel for
// the last n % 16: the same bits as AVX2 for every element (tests/kernels/test_vector_ops.cpp).
// Prefill runs it over [tokens, n_ff]: 2.5-3.4 % of a pp512 at AVX2 width.
void silu_mul(const float* gate, const float* up, float* out, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 sign = _mm512_set1_ps(-0.0f);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 g = _mm512_loadu_ps(gate + i);
    const __m512 e = exp16(_mm512_xor_ps(g, sign));  // exp(-g)
    const __m512 s = _mm512_div_ps(g, _mm512_add_ps(one, e));
    _mm512_storeu_ps(out + i, _mm512_mul_ps(s, _mm512_loadu_ps(up + i)));
  }
  if (i < n) avx2::silu_mul(gate + i, up + i, out + i, n - i);
}

}  // namespace edgellm::kernels::avx512
