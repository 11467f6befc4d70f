// Internal: a run-time count turned into a compile-time one. SIMD kernels keep one register set
// per row or head, so those counts must be template arguments; with_static_count calls
// fn(StaticCount<n>{}, args...) for n in 1 .. kMax and the callee reads decltype(c)::kValue.
// Used by the attention head groups (attention_head_groups.h) and the gemm_f32 row tiles
// (gemm_row_tiles.h). Include only from files compiled with their own ISA flags, like them.
#pragma once

#include <cstdint>
#include <utility>

#include "kernels/tile_driver.h"  // EDGELLM_ALWAYS_INLINE

namespace edgellm::kernels {

template <int N>
struct StaticCount {
  static constexpr int kValue = N;
};

namespace detail {
template <class Fn, class... Args, int... I>
EDGELLM_ALWAYS_INLINE void with_static_count(int64_t n, std::integer_sequence<int, I...>, Fn& fn, Args... args) {
  (void)((n == I + 1 ? (fn(StaticCount<I + 1>{}, args...), true) : false) || ...);
}
}  // namespace detail

// n in 1 .. kMax (anything else calls nothing).
template <int kMax, class Fn, class... Args>
EDGELLM_ALWAYS_INLINE void with_static_count(int64_t n, Fn& fn, Args... args) {
  detail::with_static_count(n, std::make_integer_sequence<int, kMax>{}, fn, args...);
}

}  // namespace edgellm::kernels
