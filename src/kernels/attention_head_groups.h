// Internal: the head-group dispatch shared by the SIMD attention kernels
// (x86/{avx2,avx512}/attention_*.cpp, arm/neon/attention_neon.cpp).
//
// The g query heads of a GQA group read the same K/V rows; a kernel keeps one set of
// accumulators per head in registers, so the head count must be a compile-time constant.
// for_head_groups splits g into passes of at most kMaxHeadsPerPass heads and calls
// fn(StaticCount<NH>{}, h0) for each pass (heads h0 .. h0+NH-1). Like packed_driver.h, every
// instantiation takes a lambda from the calling file's anonymous namespace, so it has internal
// linkage and that file's target flags ("Rule for SIMD files" in kernels/README.md).
#pragma once

#include <cstdint>

#include "kernels/static_count.h"

namespace edgellm::kernels::attention {

// Heads per pass: the AVX-512 scores tile holds 16 transposed row registers plus one
// accumulator per head (and partials) in its 32 registers.
inline constexpr int kMaxHeadsPerPass = 8;

template <class Fn>
EDGELLM_ALWAYS_INLINE void for_head_groups(int64_t g, Fn&& fn) {
  for (int64_t h0 = 0; h0 < g; h0 += kMaxHeadsPerPass) {
    with_static_count<kMaxHeadsPerPass>(g - h0 < kMaxHeadsPerPass ? g - h0 : kMaxHeadsPerPass, fn, h0);
  }
}

}  // namespace edgellm::kernels::attention
