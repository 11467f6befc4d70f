// AVX-512 matmul for float weights (F32, F16, BF16) against F32 activations, 32 elements (two
// ZMM) per block; widths that are not a multiple of 32 use the AVX2 kernel.
// GCC 12 reports -Wmaybe-uninitialized inside its own AVX-512 intrinsic headers (the
// _mm512_undefined_* pass-through operands, GCC PR105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include "kernels/tile_driver.h"
#include "kernels/x86/avx2/avx2_kernels.h"
#include "kernels/x86/avx512/avx512_kernels.h"
#include "kernels/x86/avx512/avx512_util.h"

namespace edgellm::kernels::avx512 {
namespace {

struct F32Block {
  float v[32];
};
struct U16Block {
  uint16_t v[32];
};

struct Pair {
  __m512 a, b;
};

struct FloatBase {
  static constexpr int64_t kBlockElems = 32;
  using XBlock = F32Block;
  using W = Pair;
  using X = Pair;
  using Acc = __m512;
  static EDGELLM_ALWAYS_INLINE void load_x(const XBlock* b, X& x) {
    x.a = _mm512_loadu_ps(b->v);
    x.b = _mm512_loadu_ps(b->v + 16);
  }
  static EDGELLM_ALWAYS_INLINE void zero(Acc& a) { a = _mm512_setzero_ps(); }
  static EDGELLM_ALWAYS_INLINE void madd(const W& w, const X& x, Acc& acc) {
    acc = _mm512_fmadd_ps(w.b, x.b, _mm512_fmadd_ps(w.a, x.a, acc));
  }
  static EDGELLM_ALWAYS_INLINE float reduce(const Acc& a) { return hsum(a); }
};

struct KF32 : FloatBase {
  using WBlock = F32Block;
  static EDGELLM_ALWAYS_INLINE void prefetch(const WBlock* b) { _mm_prefetch(reinterpret_cast<const char*>(b + 4), _MM_HINT_T0); }
  static EDGELLM_ALWAYS_INLINE void decode(const WBlock* b, W& w) {
    w.a = _mm512_loadu_ps(b->v);
    w.b = _mm512_loadu_ps(b->v + 16);
  }
};

struct KF16 : FloatBase {
  using WBlock = U16Block;
  static EDGELLM_ALWAYS_INLINE void prefetch(const WBlock* b) { _mm_prefetch(reinterpret_cast<const char*>(b + 4), _MM_HINT_T0); }
  static EDGELLM_ALWAYS_INLINE void decode(const WBlock* b, W& w) {
    w.a = load_f16x16(b->v);
    w.b = load_f16x16(b->v + 16);
  }
};

struct KBF16 : FloatBase {
  using WBlock = U16Block;
  static EDGELLM_ALWAYS_INLINE void prefetch(const WBlock* b) { _mm_prefetch(reinterpret_cast<const char*>(b + 4), _MM_HINT_T0); }
  static EDGELLM_ALWAYS_INLINE void decode(const WBlock* b, W& w) {
    w.a = load_bf16x16(b->v);
    w.b = load_bf16x16(b->v + 16);
  }
};

// 4 rows x 4 tokens: 16 accumulators + 8 weight ZMM + 2 activation ZMM.
constexpr int kRT = 4, kTT = 4, kRTDecode = 4;

}  // namespace

// The trampolines of kernel_list.h's float group; rows whose length is not a multiple of the
// ZMM block take the AVX2 kernel.
#define EDGELLM_MATMUL_FLOAT(type, fn, K)                                               \
  void fn(EDGELLM_MATMUL_PARAMS) {                                                      \
    if (n % K::kBlockElems != 0) return avx2::fn(EDGELLM_MATMUL_ARGS);                  \
    tiled::matmul_tiled<K, kRT, kTT, kRTDecode>(EDGELLM_MATMUL_ARGS);                   \
  }
#include "kernels/x86/avx512/kernel_list.h"

}  // namespace edgellm::kernels::avx512
