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

// The trampolines of kernel_list.h's legacy and K-quant groups.
#define EDGELLM_MATMUL_LEGACY(type, fn, K) \
  void fn(EDGELLM_MATMUL_PARAMS) { tiled::matmul_tiled<K, kRT, kTT, kRTDecode>(EDGELLM_MATMUL_ARGS); }
#define EDGELLM_MATMUL_KQUANT(type, fn, K) \
  void fn(EDGELLM_MATMUL_PARAMS) { tiled::matmul_tiled<K, kKRT, kKTT, kKRTDecode>(EDGELLM_MATMUL_ARGS); }
#include "kernels/arm/dotprod/kernel_list.h"

}  // namespace edgellm::kernels::dotprod
