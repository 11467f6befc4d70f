// Internal: the split of gemm_f32's m rows into register tiles, shared by the SIMD versions
// (x86/{avx2,avx512}/gemm_f32.cpp, arm/neon/gemm_f32.cpp). Full tiles of kMax rows, then one tile
// of the remaining 1 .. kMax-1 rows; fn(RowCount<MR>{}, i) runs rows i .. i+MR-1 with MR a
// compile-time constant (the accumulators are MR x vectors). Like attention_head_groups.h, every
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

template <int kMax, class Fn>
EDGELLM_ALWAYS_INLINE void for_row_tiles(int64_t m, Fn&& fn) {
  static_assert(kMax >= 1 && kMax <= 8, "register tiles of 1 to 8 rows");
  int64_t i = 0;
  for (; i + kMax <= m; i += kMax) fn(RowCount<kMax>{}, i);
  const int64_t rest = m - i;
  if constexpr (kMax > 7) if (rest == 7) fn(RowCount<7>{}, i);
  if constexpr (kMax > 6) if (rest == 6) fn(RowCount<6>{}, i);
  if constexpr (kMax > 5) if (rest == 5) fn(RowCount<5>{}, i);
  if constexpr (kMax > 4) if (rest == 4) fn(RowCount<4>{}, i);
  if constexpr (kMax > 3) if (rest == 3) fn(RowCount<3>{}, i);
  if constexpr (kMax > 2) if (rest == 2) fn(RowCount<2>{}, i);
  if constexpr (kMax > 1) if (rest == 1) fn(RowCount<1>{}, i);
}

}  // namespace edgellm::kernels::gemm
