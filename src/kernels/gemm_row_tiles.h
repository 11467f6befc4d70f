// Internal: the split of gemm_f32's m rows into register tiles, shared by the SIMD versions
// (x86/{avx2,avx512}/gemm_f32.cpp, arm/neon/gemm_f32.cpp). Full tiles of kMax rows, then the
// rest; fn(StaticCount<MR>{}, i) runs rows i .. i+MR-1 with MR a compile-time constant (the
// accumulators are MR x vectors). A rest under kMax / 2 rows is merged with the last full tile
// into two near-equal tiles (7 rows with kMax 6: 4 + 3, not 6 + 1): a 1-row tile has too few
// independent FMA chains to hide their latency. Rows are independent, so the split never
// changes a result. Like attention_head_groups.h, every
// instantiation takes a lambda from the calling file's anonymous namespace, so it has internal
// linkage and that file's target flags ("Rule for SIMD files" in kernels/README.md).
#pragma once

#include <cstdint>

#include "kernels/static_count.h"

namespace edgellm::kernels::gemm {

template <int kMax, class Fn>
EDGELLM_ALWAYS_INLINE void for_row_tiles(int64_t m, Fn&& fn) {
  static_assert(kMax >= 1 && kMax <= 8, "register tiles of 1 to 8 rows");
  const int64_t rest = m % kMax;
  const bool merge = m > kMax && rest != 0 && 2 * rest < kMax;
  const int64_t full_end = m - rest - (merge ? kMax : 0);
  int64_t i = 0;
  for (; i < full_end; i += kMax) fn(StaticCount<kMax>{}, i);
  if (merge) {
    const int64_t a = (kMax + rest + 1) / 2;  // <= kMax, and kMax + rest - a <= a
    with_static_count<kMax>(a, fn, i);
    with_static_count<kMax>(kMax + rest - a, fn, i + a);
  } else if (rest != 0) {
    with_static_count<kMax>(rest, fn, i);
  }
}

}  // namespace edgellm::kernels::gemm
