// Internal: decode-time software prefetch for the packed (16-row interleaved, kernels/repack.h)
// weights, shared by the AVX2 and AVX-512 kernels (include only from files compiled for x86).
//
// Decode reads each weight byte once from DRAM. The hardware prefetchers restart at every 4 KiB
// page and leave one core well below the ~15 GB/s it can stream, so the kernels prefetch:
//  - the codes: each line twice, into L2 far ahead (kPrefetchL2Bytes), which hides the DRAM
//    latency without holding an L1 fill buffer all that time, and into L1 a little ahead
//    (kPrefetchBytes: 1.5 KiB for AVX2, 3 KiB for AVX-512, prefetch_distance.h), which then
//    only waits for L2. Measured on one Sapphire Rapids-class core (Q4_0 / Q8_0 / Q5_0 _X16,
//    377 MB of weights): 13.4 / 14.5 / 12.0 GB/s with one L1 prefetch 20 KiB ahead, 14.0 / 15.0
//    / 13.2 GB/s with 1.5 + 16 KiB (best of 1-2 KiB x 6-16 KiB);
//  - the d array that follows a Q4_0 / Q5_0 / Q8_0 / Q6_K group's codes. The code prefetch runs
//    ahead through the codes and on into the next group's codes but never reaches the array's
//    first lines in time, so every group would start on a DRAM miss. Those lines are prefetched
//    a few block columns early, counting on into the next group (column_ahead). (Q4_K_X16 keeps
//    each column's side data after its own codes: one stream, the kernels prefetch all of it.)
//
// Everything is in an anonymous namespace ("Rule for SIMD files", kernels/README.md).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/repack.h"
#include "kernels/tile_driver.h"  // EDGELLM_ALWAYS_INLINE
#include "kernels/x86/prefetch_distance.h"

namespace edgellm::kernels::x86 {
namespace {

// This file's L1 distance: each kernel file includes it with its own ISA flags.
#if defined(__AVX512F__)
constexpr int kPrefetchBytes = kPrefetchL1BytesAvx512;
#else
constexpr int kPrefetchBytes = kPrefetchL1BytesAvx2;
#endif

// Both prefetches for the code line at p.
EDGELLM_ALWAYS_INLINE void prefetch_line(const void* p) {
  _mm_prefetch(static_cast<const char*>(p) + kPrefetchBytes, _MM_HINT_T0);
  _mm_prefetch(static_cast<const char*>(p) + kPrefetchL2Bytes, _MM_HINT_T1);
}

// Block column b + ahead of the group at `group` (group_bytes long, nb columns), counted on into
// the following groups. A thread's decode rows are consecutive groups; a prefetch past the end of
// the matrix is dropped by the CPU, never faults.
struct ColumnRef {
  const uint8_t* group;
  int64_t b;
};
EDGELLM_ALWAYS_INLINE ColumnRef column_ahead(const uint8_t* group, size_t group_bytes, int64_t nb, int64_t b,
                                             int64_t ahead) {
  ColumnRef ref{group, b + ahead};
  while (ref.b >= nb) {
    ref.group += group_bytes;
    ref.b -= nb;
  }
  return ref;
}

// Q4_0 / Q5_0 / Q8_0 / Q6_K _X16: after kCodeBytes of codes per block column comes one F16
// d[nb][16] array (a line serves two columns). prefetch_line run over the array covers it from
// kPrefetchBytes on; its first lines are prefetched about 4 KiB of codes early. One core,
// 2048 x 4096, mean of 3-4 alternating runs, before -> after: Q4_0 14.3 -> 15.0, Q5_0 13.5 ->
// 13.7, Q8_0 15.2 -> 15.5, Q6_K 13.4 -> 13.7 GB/s; 4864 x 896 (small groups, already covered
// by the code prefetch) Q4_0 unchanged. Prefetching the whole array that way instead of with
// prefetch_line measured 4-6% slower.
template <int64_t kCodeBytes>
EDGELLM_ALWAYS_INLINE void prefetch_d_array(const uint8_t* group, int64_t nb, int64_t b) {
  constexpr int64_t kDBytes = 2 * kPackRows;
  if ((b & 1) == 0) prefetch_line(group + nb * kCodeBytes + b * kDBytes);
  constexpr int64_t kAhead = (4096 + kCodeBytes - 1) / kCodeBytes;
  const ColumnRef at = column_ahead(group, static_cast<size_t>(nb * (kCodeBytes + kDBytes)), nb, b, kAhead);
  if (at.b * kDBytes < kPrefetchBytes && (at.b & 1) == 0) {
    _mm_prefetch(reinterpret_cast<const char*>(at.group + nb * kCodeBytes + at.b * kDBytes), _MM_HINT_T0);
  }
}

// Q4_0 / Q5_0 / Q8_0 _X16 decode: all code lines of block column b (a few hundred bytes, one
// burst) and its share of the d array.
template <int64_t kCodeBytes>
EDGELLM_ALWAYS_INLINE void prefetch_legacy_column(const uint8_t* group, int64_t nb, int64_t b) {
  const uint8_t* codes = group + b * kCodeBytes;
  for (int64_t off = 0; off < kCodeBytes; off += 64) prefetch_line(codes + off);
  prefetch_d_array<kCodeBytes>(group, nb, b);
}

}  // namespace
}  // namespace edgellm::kernels::x86
