// The AVX2 and AVX-VNNI int8 peak probes (kernels/int8_peak.h).
//   avx2:     vpmaddubsw (u8 x s8 pairs -> int16) + vpmaddwd by ones (-> int32) + vpaddd, the
//             sequence the AVX2 quantized matmuls use; only the add is on the accumulator's
//             chain (latency 1), so 8 accumulators are plenty; every step re-reads the inputs
//             through an empty asm, so the two multiplies are issued once per step.
//   avx_vnni: the VEX-encoded vpdpbusd ymm (Alder Lake, Sapphire Rapids and later), compiled
//             for that one function with a target attribute (no kernel folder is built with
//             -mavxvnni); 12 chains (latency 5, two per cycle) plus the two inputs fit the 16
//             ymm registers VEX code can address.
#include <immintrin.h>

#include "kernels/int8_peak_isa.h"

namespace edgellm::kernels::avx2 {
namespace {
constexpr int kMaddubsAccumulators = 8;
constexpr int kVnniAccumulators = 12;
}  // namespace

void int8_peak_maddubs(const uint8_t* a, const uint8_t* b, int64_t iterations, int32_t* out) {
  __m256i va = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a));
  __m256i vb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i acc[kMaddubsAccumulators];
#pragma GCC unroll 8
  for (int k = 0; k < kMaddubsAccumulators; ++k) acc[k] = _mm256_set1_epi32(k);
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 8
    for (int k = 0; k < kMaddubsAccumulators; ++k) {
      // Per step: the product does not read the accumulator, so without this every step would
      // share one vpmaddubsw (and the loop would fold to a multiply).
      __asm__ volatile("" : "+x"(va), "+x"(vb));
      acc[k] = _mm256_add_epi32(acc[k], _mm256_madd_epi16(_mm256_maddubs_epi16(va, vb), ones));
    }
  }
#pragma GCC unroll 8
  for (int k = 0; k < kMaddubsAccumulators; ++k) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 8 * k), acc[k]);
  }
}

__attribute__((target("avx2,avxvnni"))) void int8_peak_avx_vnni(const uint8_t* a, const uint8_t* b,
                                                                 int64_t iterations, int32_t* out) {
  __m256i va = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a));
  __m256i vb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
  __m256i acc[kVnniAccumulators];
#pragma GCC unroll 12
  for (int k = 0; k < kVnniAccumulators; ++k) acc[k] = _mm256_set1_epi32(k);
  for (int64_t i = 0; i < iterations; ++i) {
    __asm__ volatile("" : "+x"(va), "+x"(vb));
#pragma GCC unroll 12
    for (int k = 0; k < kVnniAccumulators; ++k) acc[k] = _mm256_dpbusd_avx_epi32(acc[k], va, vb);
  }
#pragma GCC unroll 12
  for (int k = 0; k < kVnniAccumulators; ++k) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 8 * k), acc[k]);
  }
}

}  // namespace edgellm::kernels::avx2
