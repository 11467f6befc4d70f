// NEON matmul for float weights (F32, F16, BF16) against F32 activations: halves are widened
// with FCVTL, bfloat16 with a 16-bit left shift (SHLL), then FMLA. Blocks are 16 elements (four
// Q registers); rows whose length is not a multiple of 16 use the scalar reference (never the
// case for real model widths).
#include <arm_neon.h>

#include "kernels/arm/arm_kernels.h"
#include "kernels/arm/arm_util.h"
#include "kernels/scalar/scalar_kernels.h"
#include "kernels/tile_driver.h"

namespace edgellm::kernels::neon {
namespace {

using arm::load_bf16x4;
using arm::load_f16x4;

struct F32Block {
  float v[16];
};
struct U16Block {
  uint16_t v[16];
};

struct Quad {
  float32x4_t v[4];
};

struct Pair {
  float32x4_t a, b;  // two independent FMA chains
};

struct FloatBase {
  static constexpr int64_t kBlockElems = 16;
  using XBlock = F32Block;
  using W = Quad;
  using X = Quad;
  using Acc = Pair;
  static EDGELLM_ARM_INLINE void load_x(const XBlock* b, X& x) {
    for (int k = 0; k < 4; ++k) x.v[k] = vld1q_f32(b->v + 4 * k);
  }
  static EDGELLM_ARM_INLINE void zero(Acc& a) { a.a = a.b = vdupq_n_f32(0.0f); }
  static EDGELLM_ARM_INLINE void madd(const W& w, const X& x, Acc& acc) {
    acc.a = vfmaq_f32(acc.a, w.v[0], x.v[0]);
    acc.b = vfmaq_f32(acc.b, w.v[1], x.v[1]);
    acc.a = vfmaq_f32(acc.a, w.v[2], x.v[2]);
    acc.b = vfmaq_f32(acc.b, w.v[3], x.v[3]);
  }
  static EDGELLM_ARM_INLINE float reduce(const Acc& a) { return vaddvq_f32(vaddq_f32(a.a, a.b)); }
};

struct KF32 : FloatBase {
  using WBlock = F32Block;
  static EDGELLM_ARM_INLINE void prefetch(const WBlock* b) { arm::prefetch(b + 8); }
  static EDGELLM_ARM_INLINE void decode(const WBlock* b, W& w) {
    for (int k = 0; k < 4; ++k) w.v[k] = vld1q_f32(b->v + 4 * k);
  }
};

struct KF16 : FloatBase {
  using WBlock = U16Block;
  static EDGELLM_ARM_INLINE void prefetch(const WBlock* b) { arm::prefetch(b + 8); }
  static EDGELLM_ARM_INLINE void decode(const WBlock* b, W& w) {
    for (int k = 0; k < 4; ++k) w.v[k] = load_f16x4(b->v + 4 * k);
  }
};

struct KBF16 : FloatBase {
  using WBlock = U16Block;
  static EDGELLM_ARM_INLINE void prefetch(const WBlock* b) { arm::prefetch(b + 8); }
  static EDGELLM_ARM_INLINE void decode(const WBlock* b, W& w) {
    for (int k = 0; k < 4; ++k) w.v[k] = load_bf16x4(b->v + 4 * k);
  }
};

// 2 rows x 3 tokens: 8 weight + 4 activation + 12 accumulator registers of the 32.
constexpr int kRT = 2, kTT = 3, kRTDecode = 4;

// The scalar row dot of each float weight type, for rows whose length is not a multiple of the
// NEON block.
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
#include "kernels/arm/neon/kernel_list.h"

}  // namespace edgellm::kernels::neon
