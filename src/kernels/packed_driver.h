// Internal: the ISA-independent loop of every packed (16-row interleaved, kernels/repack.h) SIMD
// matmul, the counterpart of tile_driver.h for the file layouts. An ISA file describes one packed
// format with a small policy struct P (in its anonymous namespace, so every instantiation has
// internal linkage and that file's target flags):
//   kBlockElems                 elements per block column (32 for Q4_0/Q8_0, 256 for Q4_K)
//   kTokens                     the widest token tile (what the registers hold)
//   template <int TT> static void group(const uint8_t* group, int64_t nb, const uint8_t* x,
//                                       size_t x_row_bytes, float* y, int64_t y_stride)
//                               -- 16 rows starting at `group` x TT tokens, for every TT in
//                               1 .. kTokens; y points at row 0 of the group for token 0 (TT == 1
//                               is the decode path). A token's result must not depend on TT.
//
// Loop order (why): decode streams the row range once, a group at a time. Prefill walks rows in
// chunks of about kChunkBytes of weights, which stay in L2 while every token tile passes over them:
// kTokens-wide tiles, then one tile of the rest (1 .. kTokens - 1 tokens). So a batch of 2 ..
// kTokens tokens (continuous batching's decode entries, a speculative verify forward of k + 1
// tokens) is one pass that decodes each weight column once for all its tokens, reading the
// weights from memory once like decode. Why: with a fixed middle tile (2 tokens for Q4_K) a
// 5-token forward was three passes over every chunk (2 + 2 + 1), each repeating the code unpacking:
// Qwen2.5-1.5B Q4_K_M, a 5-token forward cost 2.7x a one-token one (docs/benchmarks.md, "The
// verify forward's cost curve" has the curve before and after).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/repack.h"
#include "kernels/static_count.h"
#include "kernels/tile_driver.h"  // EDGELLM_ALWAYS_INLINE

namespace edgellm::kernels::packed {

inline constexpr size_t kChunkBytes = 192 * 1024;

// Internal linkage: this header is compiled with each ISA's flags ("Rule for SIMD files" in
// kernels/README.md; for the same reason no std::min/max).
namespace {

// Rows of a prefill chunk: whole 16-row groups, about kChunkBytes of weights.
EDGELLM_ALWAYS_INLINE int64_t chunk_rows_for(size_t w_row_bytes) {
  const int64_t rows = static_cast<int64_t>(kChunkBytes / w_row_bytes) / kPackRows * kPackRows;
  return rows > kPackRows ? rows : kPackRows;
}

}  // namespace

template <class P, int TT>
EDGELLM_ALWAYS_INLINE void groups(const uint8_t* w, size_t w_row_bytes, int64_t nb, int64_t ra, int64_t rb,
                                  const uint8_t* x, size_t x_row_bytes, float* y, int64_t y_stride) {
  for (int64_t r = ra; r < rb; r += kPackRows) {
    P::template group<TT>(w + static_cast<size_t>(r) * w_row_bytes, nb, x, x_row_bytes, y + r, y_stride);
  }
}

// Decode (one token): every group of [ra, rb) once. A policy that provides
//   static void group_pair(const uint8_t* ga, const uint8_t* gb, int64_t nb, const uint8_t* x,
//                          float* ya, float* yb)   -- two groups for the one token
// gets the range as two halves walked side by side: two weight streams per thread instead of
// one. Why: one stream per core reads less than the memory system serves (the bandwidth probe
// of `edgellm bench` reads four per thread). One AVX-512 core on 50 cold copies of a 5632 x
// 2048 matrix, the other core doing the same, paired against the single stream in one process:
// Q4_0 +4.1 / +4.6 %, Q4_K +1.1 / +7.7 %, Q8_0 +1.9 / +8.5 %, Q6_K unchanged; whole models
// +0.7 to +1.8 % (a thread's row claims are shorter there, docs/benchmarks.md). Three or four
// streams were no better than two.
template <class P>
EDGELLM_ALWAYS_INLINE void decode_groups(const uint8_t* w, size_t w_row_bytes, int64_t nb, int64_t ra, int64_t rb,
                                         const uint8_t* x, size_t x_row_bytes, float* y, int64_t y_stride) {
  if constexpr (requires { &P::group_pair; }) {
    const int64_t half = (rb - ra) / kPackRows / 2;
    const int64_t mid = ra + half * kPackRows;
    for (int64_t i = 0; i < half; ++i) {
      const int64_t r = ra + i * kPackRows, s = mid + i * kPackRows;
      P::group_pair(w + static_cast<size_t>(r) * w_row_bytes, w + static_cast<size_t>(s) * w_row_bytes, nb, x, y + r,
                    y + s);
    }
    ra = mid + half * kPackRows;  // an odd group out
  }
  groups<P, 1>(w, w_row_bytes, nb, ra, rb, x, x_row_bytes, y, y_stride);
}

// The MatmulFn contract (kernel_table.h) for a packed format; r0, r1 are multiples of 16.
template <class P>
void matmul(int64_t n, const void* wv, size_t w_row_bytes, int64_t r0, int64_t r1, const void* xq,
            size_t x_row_bytes, int64_t n_tokens, float* y, int64_t y_stride) {
  const int64_t nb = n / P::kBlockElems;
  const auto* w = static_cast<const uint8_t*>(wv);
  const auto* x = static_cast<const uint8_t*>(xq);
  if (n_tokens == 1) {
    decode_groups<P>(w, w_row_bytes, nb, r0, r1, x, x_row_bytes, y, y_stride);
    return;
  }
  const int64_t chunk_rows = chunk_rows_for(w_row_bytes);
  for (int64_t rc = r0; rc < r1; rc += chunk_rows) {
    const int64_t re = rc + chunk_rows < r1 ? rc + chunk_rows : r1;
    auto at = [&](int64_t t) { return x + static_cast<size_t>(t) * x_row_bytes; };
    int64_t t = 0;
    for (; t + P::kTokens <= n_tokens; t += P::kTokens) {
      groups<P, P::kTokens>(w, w_row_bytes, nb, rc, re, at(t), x_row_bytes, y + t * y_stride, y_stride);
    }
    // The rest, 1 .. kTokens - 1 tokens, as one tile (a template argument: its accumulators
    // are registers).
    const auto rest = [&](auto c) {
      groups<P, decltype(c)::kValue>(w, w_row_bytes, nb, rc, re, at(t), x_row_bytes, y + t * y_stride, y_stride);
    };
    with_static_count<P::kTokens - 1>(n_tokens - t, rest);
  }
}

}  // namespace edgellm::kernels::packed
