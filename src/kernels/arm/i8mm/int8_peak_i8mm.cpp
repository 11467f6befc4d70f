// The ARM i8mm int8 peak probe (kernels/int8_peak.h): 16 independent smmla chains. One smmla
// is 32 MACs (a 2 x 8 by 8 x 2 product), twice an sdot's 16, at the same issue rate on the
// cores that have it (Cortex-A510/A710/X2 and later).
#include <arm_neon.h>

#include "kernels/int8_peak_isa.h"

namespace edgellm::kernels::i8mm {
namespace {
constexpr int kAccumulators = 16;
}  // namespace

void int8_peak_smmla(const uint8_t* a, const uint8_t* b, int64_t iterations, int32_t* out) {
  int8x16_t va = vreinterpretq_s8_u8(vld1q_u8(a));
  int8x16_t vb = vreinterpretq_s8_u8(vld1q_u8(b));
  int32x4_t acc[kAccumulators];
#pragma GCC unroll 16
  for (int k = 0; k < kAccumulators; ++k) acc[k] = vdupq_n_s32(k);
  for (int64_t i = 0; i < iterations; ++i) {
    __asm__ volatile("" : "+w"(va), "+w"(vb));
#pragma GCC unroll 16
    for (int k = 0; k < kAccumulators; ++k) acc[k] = vmmlaq_s32(acc[k], va, vb);
  }
#pragma GCC unroll 16
  for (int k = 0; k < kAccumulators; ++k) vst1q_s32(out + 4 * k, acc[k]);
}

}  // namespace edgellm::kernels::i8mm
