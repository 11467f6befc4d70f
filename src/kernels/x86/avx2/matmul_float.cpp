// AVX2 matmul for float weights (F32, F16, BF16) against F32 activations: weights are widened to
// F32 in registers (F16C for halves, a 16-bit shift for bfloat16) and multiplied with FMA.
// Blocks are 16 elements (two YMM); rows whose length is not a multiple of 16 use the scalar
// reference (never the case for real model widths).
#include <immintrin.h>

#include "kernels/scalar/scalar_kernels.h"
#include "kernels/tile_driver.h"
#include "kernels/x86/avx2/avx2_kernels.h"
#include "kernels/x86/avx2/avx2_util.h"

namespace edgellm::kernels::avx2 {
namespace {

struct F32Block {
  float v[16];
};
struct U16Block {
  uint16_t v[16];
};

struct Pair {
  __m256 a, b;
};

struct FloatBase {
  static constexpr int64_t kBlockElems = 16;
  using XBlock = F32Block;
  using W = Pair;
  using X = Pair;
  using Acc = Pair;  // two accumulators: independent FMA chains
  static EDGELLM_ALWAYS_INLINE void load_x(const XBlock* b, X& x) {
    x.a = _mm256_loadu_ps(b->v);
    x.b = _mm256_loadu_ps(b->v + 8);
  }
  static EDGELLM_ALWAYS_INLINE void zero(Acc& a) { a.a = a.b = _mm256_setzero_ps(); }
  static EDGELLM_ALWAYS_INLINE void madd(const W& w, const X& x, Acc& acc) {
    acc.a = _mm256_fmadd_ps(w.a, x.a, acc.a);
    acc.b = _mm256_fmadd_ps(w.b, x.b, acc.b);
  }
  static EDGELLM_ALWAYS_INLINE float reduce(const Acc& a) { return hsum(_mm256_add_ps(a.a, a.b)); }
};

struct KF32 : FloatBase {
  using WBlock = F32Block;
  static EDGELLM_ALWAYS_INLINE void prefetch(const WBlock* b) { _mm_prefetch(reinterpret_cast<const char*>(b + 8), _MM_HINT_T0); }
  static EDGELLM_ALWAYS_INLINE void decode(const WBlock* b, W& w) {
    w.a = _mm256_loadu_ps(b->v);
    w.b = _mm256_loadu_ps(b->v + 8);
  }
};

struct KF16 : FloatBase {
  using WBlock = U16Block;
  static EDGELLM_ALWAYS_INLINE void prefetch(const WBlock* b) { _mm_prefetch(reinterpret_cast<const char*>(b + 8), _MM_HINT_T0); }
  static EDGELLM_ALWAYS_INLINE void decode(const WBlock* b, W& w) {
    w.a = load_f16x8(b->v);
    w.b = load_f16x8(b->v + 8);
  }
};

struct KBF16 : FloatBase {
  using WBlock = U16Block;
  static EDGELLM_ALWAYS_INLINE void prefetch(const WBlock* b) { _mm_prefetch(reinterpret_cast<const char*>(b + 8), _MM_HINT_T0); }
  static EDGELLM_ALWAYS_INLINE void decode(const WBlock* b, W& w) {
    w.a = load_bf16x8(b->v);
    w.b = load_bf16x8(b->v + 8);
  }
};

constexpr int kRT = 2, kTT = 3, kRTDecode = 4;

}  // namespace

void matmul_f32(int64_t n, const void* w, size_t wrb, int64_t r0, int64_t r1, const void* x, size_t xrb, int64_t nt,
                float* y, int64_t ys) {
  if (n % KF32::kBlockElems != 0) return scalar::matmul_with(scalar::vec_dot_f32, n, w, wrb, r0, r1, x, xrb, nt, y, ys);
  tiled::matmul_tiled<KF32, kRT, kTT, kRTDecode>(n, w, wrb, r0, r1, x, xrb, nt, y, ys);
}
void matmul_f16(int64_t n, const void* w, size_t wrb, int64_t r0, int64_t r1, const void* x, size_t xrb, int64_t nt,
                float* y, int64_t ys) {
  if (n % KF16::kBlockElems != 0) return scalar::matmul_with(scalar::vec_dot_f16, n, w, wrb, r0, r1, x, xrb, nt, y, ys);
  tiled::matmul_tiled<KF16, kRT, kTT, kRTDecode>(n, w, wrb, r0, r1, x, xrb, nt, y, ys);
}
void matmul_bf16(int64_t n, const void* w, size_t wrb, int64_t r0, int64_t r1, const void* x, size_t xrb, int64_t nt,
                 float* y, int64_t ys) {
  if (n % KBF16::kBlockElems != 0) return scalar::matmul_with(scalar::vec_dot_bf16, n, w, wrb, r0, r1, x, xrb, nt, y, ys);
  tiled::matmul_tiled<KBF16, kRT, kTT, kRTDecode>(n, w, wrb, r0, r1, x, xrb, nt, y, ys);
}

}  // namespace edgellm::kernels::avx2
