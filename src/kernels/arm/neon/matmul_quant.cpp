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
constexpr int kLegacyRT = 2, kLegacyTT = 4, kLegacyRTDecode = 4;
// K-quants: the decoded super-block lives in L1, so each extra token costs only activations.
constexpr int kKRT = 2, kKTT = 4, kKRTDecode = 2;

}  // namespace

// The trampolines of kernel_list.h's legacy and K-quant groups.
#define EDGELLM_MATMUL_LEGACY(type, fn, K) \
  void fn(EDGELLM_MATMUL_PARAMS) { tiled::matmul_tiled<K, kLegacyRT, kLegacyTT, kLegacyRTDecode>(EDGELLM_MATMUL_ARGS); }
#define EDGELLM_MATMUL_KQUANT(type, fn, K) \
  void fn(EDGELLM_MATMUL_PARAMS) { tiled::matmul_tiled<K, kKRT, kKTT, kKRTDecode>(EDGELLM_MATMUL_ARGS); }
#include "kernels/arm/neon/kernel_list.h"

}  // namespace edgellm::kernels::neon
