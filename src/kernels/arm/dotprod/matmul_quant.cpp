// dotprod (armv8.2-a+dotprod) matmul for every quantized weight type: the int8 block products
// are SDOT instructions (16 products into 4 int32 lanes each). Block decoding is shared with the
// baseline NEON kernels (quant_policies.h); only the dot primitive differs.
#include <arm_neon.h>

#include "kernels/arm/arm_kernels.h"
#include "kernels/arm/quant_policies.h"
#include "kernels/tile_driver.h"

namespace edgellm::kernels::dotprod {
namespace {

struct DotSdot {
  static EDGELLM_ARM_INLINE int32x4_t dot(int32x4_t acc, int8x16_t a, int8x16_t b) { return vdotq_s32(acc, a, b); }
};

// SDOT frees the registers the widening sequence needed: 2 rows x 4 tokens for prefill,
// 4 rows for decode.
constexpr int kRT = 2, kTT = 4, kRTDecode = 4;
constexpr int kKRT = 2, kKTT = 4, kKRTDecode = 2;

}  // namespace

#define EDGELLM_DOTPROD_MATMUL(name, K, RT, TT, RTD)                                                             \
  void name(int64_t n, const void* w, size_t wrb, int64_t r0, int64_t r1, const void* x, size_t xrb, int64_t nt, \
            float* y, int64_t ys) {                                                                              \
    tiled::matmul_tiled<arm::K<DotSdot>, RT, TT, RTD>(n, w, wrb, r0, r1, x, xrb, nt, y, ys);                     \
  }
EDGELLM_DOTPROD_MATMUL(matmul_q4_0, KQ4_0, kRT, kTT, kRTDecode)
EDGELLM_DOTPROD_MATMUL(matmul_q5_0, KQ5_0, kRT, kTT, kRTDecode)
EDGELLM_DOTPROD_MATMUL(matmul_q8_0, KQ8_0, kRT, kTT, kRTDecode)
EDGELLM_DOTPROD_MATMUL(matmul_q4_1, KQ4_1, kRT, kTT, kRTDecode)
EDGELLM_DOTPROD_MATMUL(matmul_q5_1, KQ5_1, kRT, kTT, kRTDecode)
EDGELLM_DOTPROD_MATMUL(matmul_q4_k, KQ4_K, kKRT, kKTT, kKRTDecode)
EDGELLM_DOTPROD_MATMUL(matmul_q5_k, KQ5_K, kKRT, kKTT, kKRTDecode)
EDGELLM_DOTPROD_MATMUL(matmul_q6_k, KQ6_K, kKRT, kKTT, kKRTDecode)
#undef EDGELLM_DOTPROD_MATMUL

}  // namespace edgellm::kernels::dotprod
