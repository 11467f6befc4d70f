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

// The scalar row dot of each float weight type, for rows whose length is not a multiple of the
// YMM block.
constexpr scalar::VecDotFn scalar_dot(TensorType t) {
  return t == TensorType::F32 ? scalar::vec_dot_f32 : t == TensorType::F16 ? scalar::vec_dot_f16 : scalar::vec_dot_bf16;
}

}  // namespace

// The trampolines of kernel_list.h's float group.
#define EDGELLM_MATMUL_FLOAT(type, fn, K)                                                             \
  void fn(EDGELLM_MATMUL_PARAMS) {                                                                    \
    if (n % K::kBlockElems != 0) return scalar::matmul_with(scalar_dot(TensorType::type), EDGELLM_MATMUL_ARGS); \
    tiled::matmul_tiled<K, kRT, kTT, kRTDecode>(EDGELLM_MATMUL_ARGS);                                 \
  }
#include "kernels/x86/avx2/kernel_list.h"

}  // namespace edgellm::kernels::avx2
