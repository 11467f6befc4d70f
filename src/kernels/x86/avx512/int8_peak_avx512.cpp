// The AVX-512 VNNI int8 peak probe (kernels/int8_peak.h): 16 independent vpdpbusd zmm chains.
// vpdpbusd has a latency of 5 cycles and, on cores with two 512-bit FMA ports, a throughput of
// two per cycle, so 10 chains keep it busy; 16 leave margin and fit the 32 zmm registers with
// the two inputs.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include "kernels/int8_peak_isa.h"

namespace edgellm::kernels::avx512 {
namespace {
constexpr int kAccumulators = 16;
}  // namespace

void int8_peak_vpdpbusd(const uint8_t* a, const uint8_t* b, int64_t iterations, int32_t* out) {
  __m512i va = _mm512_loadu_si512(a);
  __m512i vb = _mm512_loadu_si512(b);
  __m512i acc[kAccumulators];
#pragma GCC unroll 16
  for (int k = 0; k < kAccumulators; ++k) acc[k] = _mm512_set1_epi32(k);
  for (int64_t i = 0; i < iterations; ++i) {
    // The inputs "may change" here: the products cannot be folded or hoisted (int8_peak.h).
    __asm__ volatile("" : "+v"(va), "+v"(vb));
#pragma GCC unroll 16
    for (int k = 0; k < kAccumulators; ++k) acc[k] = _mm512_dpbusd_epi32(acc[k], va, vb);
  }
#pragma GCC unroll 16
  for (int k = 0; k < kAccumulators; ++k) _mm512_storeu_si512(out + 16 * k, acc[k]);
}

}  // namespace edgellm::kernels::avx512
