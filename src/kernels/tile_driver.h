// Internal: the ISA-independent part of every SIMD matmul — the loop over row x token tiles.
// An ISA file describes one weight type with a small policy struct K and instantiates
// matmul_tiled<K, ...>; the policy does the per-block arithmetic with that ISA's intrinsics.
//
// Policy K (all static, defined in an anonymous namespace of the ISA's .cpp so every
// instantiation has internal linkage and is compiled only with that file's target flags):
//   kBlockElems            elements per weight block (32 for Q4_0..Q8_0, 256 for K-quants)
//   WBlock, XBlock         weight / activation block structs (one block each)
//   W                      a decoded weight block (registers or an L1-resident struct)
//   X                      a loaded activation block
//   Acc                    the running sum of one (row, token) pair
//   decode(const WBlock*, W&), load_x(const XBlock*, X&), zero(Acc&),
//   madd(const W&, const X&, Acc&)  -- Acc += dot(block of W row, block of X row)
//   reduce(const Acc&) -> float, prefetch(const WBlock*)  -- hint the block some distance ahead
//
// Loop order (why): rows are processed in chunks of kRowChunk so the chunk's weights stay in L2
// while every token tile passes over them; inside a tile each weight block is decoded once and
// reused for TT tokens, and each activation block is loaded once for RT rows.
#pragma once

#include <cstddef>
#include <cstdint>

namespace edgellm::kernels::tiled {

#if defined(__GNUC__)
#define EDGELLM_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define EDGELLM_ALWAYS_INLINE inline
#endif

// Rows per L2 chunk for prefill (a 4096-wide Q8_0 row is 4.3 KB: 32 rows ~ 140 KB).
inline constexpr int64_t kRowChunk = 32;

template <class K, int RT, int TT>
EDGELLM_ALWAYS_INLINE void run_tile(int64_t nb, const uint8_t* w, size_t w_row_bytes, const uint8_t* x,
                                    size_t x_row_bytes, float* y, int64_t y_stride) {
  typename K::Acc acc[RT][TT];
  for (int r = 0; r < RT; ++r)
    for (int t = 0; t < TT; ++t) K::zero(acc[r][t]);
  const typename K::WBlock* wr[RT];
  for (int r = 0; r < RT; ++r) wr[r] = reinterpret_cast<const typename K::WBlock*>(w + r * w_row_bytes);
  const typename K::XBlock* xt[TT];
  for (int t = 0; t < TT; ++t) xt[t] = reinterpret_cast<const typename K::XBlock*>(x + t * x_row_bytes);
  for (int64_t b = 0; b < nb; ++b) {
    typename K::W wd[RT];
    for (int r = 0; r < RT; ++r) {
      K::prefetch(wr[r] + b);
      K::decode(wr[r] + b, wd[r]);
    }
    for (int t = 0; t < TT; ++t) {
      typename K::X xd;
      K::load_x(xt[t] + b, xd);
      for (int r = 0; r < RT; ++r) K::madd(wd[r], xd, acc[r][t]);
    }
  }
  for (int t = 0; t < TT; ++t)
    for (int r = 0; r < RT; ++r) y[t * y_stride + r] = K::reduce(acc[r][t]);
}

// Rows [ra, rb) x TT tokens starting at x / y.
template <class K, int RT, int TT>
EDGELLM_ALWAYS_INLINE void rows_by_tokens(int64_t nb, const uint8_t* w, size_t w_row_bytes, int64_t ra, int64_t rb,
                                          const uint8_t* x, size_t x_row_bytes, float* y, int64_t y_stride) {
  int64_t r = ra;
  for (; r + RT <= rb; r += RT) {
    run_tile<K, RT, TT>(nb, w + static_cast<size_t>(r) * w_row_bytes, w_row_bytes, x, x_row_bytes, y + r, y_stride);
  }
  for (; r < rb; ++r) {
    run_tile<K, 1, TT>(nb, w + static_cast<size_t>(r) * w_row_bytes, w_row_bytes, x, x_row_bytes, y + r, y_stride);
  }
}

// RT x TT tiles for prefill, RT_DECODE x 1 tiles for single tokens (decode: a matrix-vector
// product that streams W once, RT_DECODE rows at a time).
template <class K, int RT, int TT, int RT_DECODE>
void matmul_tiled(int64_t n, const void* w, size_t w_row_bytes, int64_t r0, int64_t r1, const void* xq,
                  size_t xq_row_bytes, int64_t n_tokens, float* y, int64_t y_stride) {
  const int64_t nb = n / K::kBlockElems;
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* xb = static_cast<const uint8_t*>(xq);
  if (n_tokens == 1) {
    rows_by_tokens<K, RT_DECODE, 1>(nb, wb, w_row_bytes, r0, r1, xb, xq_row_bytes, y, y_stride);
    return;
  }
  for (int64_t rc = r0; rc < r1; rc += kRowChunk) {
    const int64_t re = rc + kRowChunk < r1 ? rc + kRowChunk : r1;
    int64_t t = 0;
    for (; t + TT <= n_tokens; t += TT) {
      rows_by_tokens<K, RT, TT>(nb, wb, w_row_bytes, rc, re, xb + static_cast<size_t>(t) * xq_row_bytes, xq_row_bytes,
                                y + t * y_stride, y_stride);
    }
    for (; t < n_tokens; ++t) {
      rows_by_tokens<K, RT_DECODE, 1>(nb, wb, w_row_bytes, rc, re, xb + static_cast<size_t>(t) * xq_row_bytes,
                                      xq_row_bytes, y + t * y_stride, y_stride);
    }
  }
}

}  // namespace edgellm::kernels::tiled
