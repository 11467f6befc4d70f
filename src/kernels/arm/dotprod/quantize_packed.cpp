// Activation quantizers for the repacked weights (blocks.h): BlockQ8_0S rows for Q4_0_X16 /
// Q8_0_X16 (the Q8_0 codes, the F16-rounded scale as F32 and the code sum) and BlockQ8_KS rows
// for Q4_K_X16 (the Q8_K scale and codes plus the code sum of each 32-element sub-block). Both
// reuse the NEON Q8_0 / Q8_K quantizers, which are bit-identical to the scalar reference, and
// add the derived fields, so their bytes equal scalar::quantize_q8_0s / quantize_q8_ks.
// Installed in the dotprod table only: the packed layouts are used only where
// has_fast_packed_kernel() is true (dotprod and i8mm on ARM).
#include <arm_neon.h>

#include <cstring>

#include "kernels/arm/arm_kernels.h"
#include "kernels/arm/arm_util.h"
#include "kernels/blocks.h"

namespace edgellm::kernels::dotprod {
namespace {

// Blocks quantized per call of the NEON Q8_0 quantizer (34 bytes each on the stack).
constexpr int64_t kChunkBlocks = 32;
// Super-blocks quantized per call of the NEON Q8_K quantizer (292 bytes each on the stack).
constexpr int64_t kChunkSuperBlocks = 8;

}  // namespace

void quantize_q8_0s(const float* x, void* dst, int64_t n) {
  auto* out = static_cast<BlockQ8_0S*>(dst);
  const int64_t nb = n / kQK8_0;
  BlockQ8_0 tmp[kChunkBlocks];
  for (int64_t b0 = 0; b0 < nb; b0 += kChunkBlocks) {
    const int64_t count = nb - b0 < kChunkBlocks ? nb - b0 : kChunkBlocks;
    // Out-of-line call into the baseline NEON file (arm_util.h: no shared inline code).
    neon::quantize_q8_0(x + b0 * kQK8_0, tmp, count * kQK8_0);
    for (int64_t i = 0; i < count; ++i) {
      const BlockQ8_0& q = tmp[i];
      BlockQ8_0S& o = out[b0 + i];
      o.d = arm::half_to_float(q.d);  // exact, like fp16_to_fp32
      const int8x16_t lo = vld1q_s8(q.qs), hi = vld1q_s8(q.qs + 16);
      o.sum = vaddlvq_s8(lo) + vaddlvq_s8(hi);  // each half's sum is <= 16 * 128 in magnitude: fits vaddlvq's int16
      std::memcpy(o.qs, q.qs, sizeof o.qs);
    }
  }
}

void quantize_q8_ks(const float* x, void* dst, int64_t n) {
  auto* out = static_cast<BlockQ8_KS*>(dst);
  const int64_t nb = n / kQK_K;
  BlockQ8_K tmp[kChunkSuperBlocks];
  for (int64_t b0 = 0; b0 < nb; b0 += kChunkSuperBlocks) {
    const int64_t count = nb - b0 < kChunkSuperBlocks ? nb - b0 : kChunkSuperBlocks;
    neon::quantize_q8_k(x + b0 * kQK_K, tmp, count * kQK_K);
    for (int64_t i = 0; i < count; ++i) {
      const BlockQ8_K& q = tmp[i];
      BlockQ8_KS& o = out[b0 + i];
      o.d = q.d;
      // Sub-block j's sum = bsums[2j] + bsums[2j+1] (16-element sums, |sum| <= 32 * 127: no
      // int16 overflow), as scalar::q8_k_to_q8_ks.
      vst1q_s16(o.sums, vpaddq_s16(vld1q_s16(q.bsums), vld1q_s16(q.bsums + 8)));
      std::memcpy(o.qs, q.qs, sizeof o.qs);
    }
  }
}

}  // namespace edgellm::kernels::dotprod
