// Internal AVX-512 helpers (include only from files compiled with the AVX-512 flags). Anonymous
// namespace for the reason given in x86/avx2/avx2_util.h (no cross-ISA inline merging).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace edgellm::kernels::avx512 {
namespace {

inline float half(uint16_t h) {
  return _cvtsh_ss(h);
}

// Folds the 16 lanes of v with an associative op given for 8- and 4-float vectors: halves, then
// quarters, then within 128 bits. (Written out rather than _mm512_reduce_add_ps / _max_ps, and
// masked forms of extract / cvtph below: GCC 12 warns -Wmaybe-uninitialized on the
// _mm512_undefined_* inside the unmasked intrinsics.)
template <class Op8, class Op4>
inline float hfold(__m512 v, Op8 op8, Op4 op4) {
  const __m256 hi = _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xF, _mm512_castps_pd(v), 1));
  const __m256 f8 = op8(_mm512_castps512_ps256(v), hi);
  __m128 f = op4(_mm256_castps256_ps128(f8), _mm256_extractf128_ps(f8, 1));
  f = op4(f, _mm_movehl_ps(f, f));
  f = op4(f, _mm_movehdup_ps(f));
  return _mm_cvtss_f32(f);
}

inline float hsum(__m512 v) {
  return hfold(
      v, [](__m256 a, __m256 b) { return _mm256_add_ps(a, b); }, [](__m128 a, __m128 b) { return _mm_add_ps(a, b); });
}

inline float hmax(__m512 v) {
  return hfold(
      v, [](__m256 a, __m256 b) { return _mm256_max_ps(a, b); }, [](__m128 a, __m128 b) { return _mm_max_ps(a, b); });
}

// A ZMM whose lanes 0-7 hold a and lanes 8-15 hold b (per-block scales of two 32-element blocks).
inline __m512 two_halves(float a, float b) {
  return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_set1_ps(a)), _mm256_set1_ps(b), 1);
}

// As two_halves(half(a), half(b)) with one conversion: the two F16 values travel as one 32-bit
// word, are widened together and spread by one permute (3 vector ops instead of 8).
inline __m512 two_halves_f16(uint16_t a, uint16_t b) {
  const __m128 f =
      _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(static_cast<uint32_t>(a) | (static_cast<uint32_t>(b) << 16))));
  return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1),
                               _mm512_castps128_ps512(f));
}

// 32 + 32 bytes from two addresses as one ZMM.
inline __m512i load_2x32(const void* lo, const void* hi) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(static_cast<const __m256i*>(lo))),
                            _mm256_loadu_si256(static_cast<const __m256i*>(hi)), 1);
}

// 16 halves -> 16 floats.
inline __m512 load_f16x16(const uint16_t* p) {
  return _mm512_maskz_cvtph_ps(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

inline __m512 load_bf16x16(const uint16_t* p) {
  const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}

}  // namespace
// Decode streams every weight byte from DRAM once; the hardware prefetchers stop at each 4 KiB
// page and leave a core well short of the bandwidth it can pull. Hint every cache line of the
// block twice: into L2 kPrefetchL2AheadBytes ahead (hides the DRAM latency) and into L1
// kPrefetchAheadBytes ahead (then only the L2 latency). The same scheme as the packed kernels
// (matmul_packed.cpp, where it was tuned); for the file layouts one L1 prefetch 6 KiB ahead took
// the Q4_K matrix-vector product from ~5.7 to ~9 GB/s on one core.
inline constexpr int kPrefetchAheadBytes = 1536;
inline constexpr int kPrefetchL2AheadBytes = 16384;
template <class Block>
inline void prefetch_ahead(const Block* b) {
  constexpr int kSize = static_cast<int>(sizeof(Block));
  constexpr int kAhead = (kPrefetchAheadBytes + kSize - 1) / kSize;
  constexpr int kAheadL2 = (kPrefetchL2AheadBytes + kSize - 1) / kSize;
  const char* p = reinterpret_cast<const char*>(b + kAhead);
  const char* q = reinterpret_cast<const char*>(b + kAheadL2);
  for (int off = 0; off < kSize; off += 64) {
    _mm_prefetch(p + off, _MM_HINT_T0);
    _mm_prefetch(q + off, _MM_HINT_T1);
  }
}

}  // namespace edgellm::kernels::avx512
