// NEON (armv8-a baseline) matmul for every quantized weight type. The int8 block products use
// SMULL/SMLAL2 into eight int16 pair sums, then SADALP into four int32 lanes (the overflow bound
// is in quant_policies.h). Per-type block decoding lives in quant_policies.h, shared with dotprod/.
#include <arm_neon.h>

#include "kernels/arm/arm_kernels.h"
#include "kernels/arm/quant_policies.h"
#include "kernels/tile_driver.h"

namespace edgellm::kernels::neon {
namespace {

struct DotNeon {
  static EDGELLM_ARM_INLINE int32x4_t dot(int32x4_t acc, int8x16_t a, int8x16_t b) {
    const int16x8_t p = vmlal_high_s8(vmull_s8(vget_low_s8(a), vget_low_s8(b)), a, b);
    return vpadalq_s16(acc, p);
  }
};

// Legacy blocks: 2 rows x 4 tokens for prefill (8 accumulator + 4 weight + 2 activation
// vectors of the 32 registers), 4 rows for decode (four independent weight streams).
constexpr int kRT = 2, kTT = 4, kRTDecode = 4;
// K-quants: the decoded super-block lives in L1, so each extra token costs only activations.
constexpr int kKRT = 2, kKTT = 4, kKRTDecode = 2;

}  // namespace

#define EDGELLM_NEON_MATMUL(name, K, RT, TT, RTD)                                                                \
  void name(int64_t n, const void* w, size_t wrb, int64_t r0, int64_t r1, const void* x, size_t xrb, int64_t nt, \
            float* y, int64_t ys) {                                                                              \
    tiled::matmul_tiled<arm::K<DotNeon>, RT, TT, RTD>(n, w, wrb, r0, r1, x, xrb, nt, y, ys);                     \
  }
EDGELLM_NEON_MATMUL(matmul_q4_0, KQ4_0, kRT, kTT, kRTDecode)
EDGELLM_NEON_MATMUL(matmul_q5_0, KQ5_0, kRT, kTT, kRTDecode)
EDGELLM_NEON_MATMUL(matmul_q8_0, KQ8_0, kRT, kTT, kRTDecode)
EDGELLM_NEON_MATMUL(matmul_q4_1, KQ4_1, kRT, kTT, kRTDecode)
EDGELLM_NEON_MATMUL(matmul_q5_1, KQ5_1, kRT, kTT, kRTDecode)
EDGELLM_NEON_MATMUL(matmul_q4_k, KQ4_K, kKRT, kKTT, kKRTDecode)
EDGELLM_NEON_MATMUL(matmul_q5_k, KQ5_K, kKRT, kKTT, kKRTDecode)
EDGELLM_NEON_MATMUL(matmul_q6_k, KQ6_K, kKRT, kKTT, kKRTDecode)
#undef EDGELLM_NEON_MATMUL

}  // namespace edgellm::kernels::neon
