// Internal: the head-group dispatch shared by the SIMD attention kernels
// (x86/{avx2,avx512}/attention_*.cpp, arm/neon/attention_neon.cpp).
//
// The g query heads of a GQA group read the same K/V rows; a kernel keeps one set of
// accumulators per head in registers, so the head count must be a compile-time constant.
// for_head_groups splits g into passes of at most kMaxHeadsPerPass heads and calls
// fn(HeadCount<NH>{}, h0) for each pass (heads h0 .. h0+NH-1). Like packed_driver.h, every
// instantiation takes a lambda from the calling file's anonymous namespace, so it has internal
// linkage and that file's target flags ("Rule for SIMD files" in kernels/README.md).
#pragma once

#include <cstdint>

#include "kernels/tile_driver.h"  // EDGELLM_ALWAYS_INLINE

namespace edgellm::kernels::attention {

template <int N>
struct HeadCount {
  static constexpr int kValue = N;
};

// Heads per pass: the AVX-512 scores tile holds 16 transposed row registers plus one
// accumulator per head (and partials) in its 32 registers.
inline constexpr int kMaxHeadsPerPass = 8;

template <class Fn>
EDGELLM_ALWAYS_INLINE void for_head_groups(int64_t g, Fn&& fn) {
  for (int64_t h0 = 0; h0 < g; h0 += kMaxHeadsPerPass) {
    switch (g - h0 < kMaxHeadsPerPass ? g - h0 : kMaxHeadsPerPass) {
      case 1: fn(HeadCount<1>{}, h0); break;
      case 2: fn(HeadCount<2>{}, h0); break;
      case 3: fn(HeadCount<3>{}, h0); break;
      case 4: fn(HeadCount<4>{}, h0); break;
      case 5: fn(HeadCount<5>{}, h0); break;
      case 6: fn(HeadCount<6>{}, h0); break;
      case 7: fn(HeadCount<7>{}, h0); break;
      default: fn(HeadCount<8>{}, h0); break;
    }
  }
}

}  // namespace edgellm::kernels::attention
