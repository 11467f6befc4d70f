// The ARM dotprod int8 peak probe (kernels/int8_peak.h): 16 independent sdot chains (latency
// 3-4 cycles, up to 4 per cycle on the widest cores) in 16 of the 32 vector registers.
#include <arm_neon.h>

#include "kernels/int8_peak_isa.h"

namespace edgellm::kernels::dotprod {
namespace {
constexpr int kAccumulators = 16;
}  // namespace

void int8_peak_sdot(const uint8_t* a, const uint8_t* b, int64_t iterations, int32_t* out) {
  int8x16_t va = vreinterpretq_s8_u8(vld1q_u8(a));
  int8x16_t vb = vreinterpretq_s8_u8(vld1q_u8(b));
  int32x4_t acc[kAccumulators];
#pragma GCC unroll 16
  for (int k = 0; k < kAccumulators; ++k) acc[k] = vdupq_n_s32(k);
  for (int64_t i = 0; i < iterations; ++i) {
    // The inputs "may change" here: the products cannot be folded or hoisted (int8_peak.h).
    __asm__ volatile("" : "+w"(va), "+w"(vb));
#pragma GCC unroll 16
    for (int k = 0; k < kAccumulators; ++k) acc[k] = vdotq_s32(acc[k], va, vb);
  }
#pragma GCC unroll 16
  for (int k = 0; k < kAccumulators; ++k) vst1q_s32(out + 4 * k, acc[k]);
}

}  // namespace edgellm::kernels::dotprod
