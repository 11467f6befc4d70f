// Internal: the split of gemm_f32's m rows into register tiles, shared by the SIMD versions
// (x86/{avx2,avx512}/gemm_f32.cpp, arm/neon/gemm_f32.cpp). Full tiles of kMax rows, then the
// rest; fn(RowCount<MR>{}, i) runs rows i .. i+MR-1 with MR a compile-time constant (the
// accumulators are MR x vectors). A rest under kMax / 2 rows is merged with the last full tile
// into two near-equal tiles (7 rows with kMax 6: 4 + 3, not 6 + 1): a 1-row tile has too few
// independent FMA chains to hide their latency. Rows are independent, so the split never
// changes a result. Like attention_head_groups.h, every
// instantiation takes a lambda from the calling file's anonymous namespace, so it has internal
// linkage and that file's target flags ("Rule for SIMD files" in kernels/README.md).
#pragma once

#include <cstdint>

#include "kernels/tile_driver.h"  // EDGELLM_ALWAYS_INLINE

namespace edgellm::kernels::gemm {

template <int N>
struct RowCount {
  static constexpr int kValue = N;
};

// Rows i .. i+rest-1 as one tile, rest in 1 .. kMax.
template <int kMax, class Fn>
EDGELLM_ALWAYS_INLINE void row_tile(int64_t rest, int64_t i, Fn& fn) {
  if (rest == kMax) fn(RowCount<kMax>{}, i);
  if constexpr (kMax > 7)
    if (rest == 7) fn(RowCount<7>{}, i);
  if constexpr (kMax > 6)
    if (rest == 6) fn(RowCount<6>{}, i);
  if constexpr (kMax > 5)
    if (rest == 5) fn(RowCount<5>{}, i);
  if constexpr (kMax > 4)
    if (rest == 4) fn(RowCount<4>{}, i);
  if constexpr (kMax > 3)
    if (rest == 3) fn(RowCount<3>{}, i);
  if constexpr (kMax > 2)
    if (rest == 2) fn(RowCount<2>{}, i);
  if constexpr (kMax > 1)
    if (rest == 1) fn(RowCount<1>{}, i);
}

template <int kMax, class Fn>
EDGELLM_ALWAYS_INLINE void for_row_tiles(int64_t m, Fn&& fn) {
  static_assert(kMax >= 1 && kMax <= 8, "register tiles of 1 to 8 rows");
  const int64_t rest = m % kMax;
  const bool merge = m > kMax && rest != 0 && 2 * rest < kMax;
  const int64_t full_end = m - rest - (merge ? kMax : 0);
  int64_t i = 0;
  for (; i < full_end; i += kMax) fn(RowCount<kMax>{}, i);
  if (merge) {
    const int64_t a = (kMax + rest + 1) / 2;  // <= kMax, and kMax + rest - a <= a
    row_tile<kMax>(a, i, fn);
    row_tile<kMax>(kMax + rest - a, i + a, fn);
  } else if (rest != 0) {
    row_tile<kMax>(rest, i, fn);
  }
}

}  // namespace edgellm::kernels::gemm
