// Internal: what the AMX prefill matmuls share (kernels/x86/amx; Sapphire Rapids and later Xeons):
// the tile-configuration operand, the ordering of tile stores against vector loads, and the loops
// over spans of tokens, chunks of rows, token tiles and groups (matmul_tiles, run_chunks), from
// the activation rows or from a tiled copy made once by the caller (matmul_pretiled). A format's file
// (matmul_legacy_amx.cpp: Q4_0 / Q5_0 / Q8_0; matmul_kquants_amx.cpp: Q4_K / Q5_K / Q6_K) provides
// its decode / pack / tile policy. Compiled into each AMX file with its flags, so everything here
// has internal linkage (kernels/README.md, rule for SIMD files).
//
// Why tiles: the AVX-512 kernels spend F32 (or int32 scale) work per 32 elements and decode the
// codes per token tile, on the same two vector ports as vpdpbusd; on an AMX Xeon they ran at
// 30-43 % of the vpdpbusd peak (one core, 512 tokens). A tile instruction multiplies 16 tokens x K
// bytes of activations by K x 16 rows of weights on the tile unit (16 x 16 x K MACs); the vector
// ports keep only the F32 end, exactly the AVX-512 kernel's operations, so the results equal the
// AVX-512 kernel's bit for bit and a token's result does not depend on whether its batch ran here
// or on the decode path (tests/kernels/test_repack.cpp).
//
// Structure: the activations are packed once into 16-token tiles (pack: the codes as A tiles,
// zero past the last token, and the d_x), either by the caller for every thread and row range
// (the tiled copy: tile_activations / matmul_pretiled below, kernels.h) or here per span of
// kSpanTokens tokens; per chunk of rows the weights are decoded once into B tiles (decode) in a
// per-thread buffer that stays in L2 while every token tile passes over it (run_chunks); tile()
// runs one 16-row group x one token tile over every column, tile2() (K-quants) two token tiles
// that share each B tile load; both software-pipelined: the tile unit works on column b + 1
// while the vector ports finish column b from its stored C tiles, and column b + 1's C tiles are
// stored after those vector loads (a tile store ahead of them in program order made the loads
// wait for it: Q4_0 2048 x 2048 x 128, one core, 337-348 -> 355-369 G MAC/s).
//
// What bounds it (a 2-core Xeon slice with AMX, no PMU; timing loops): tdpbssd 16.5 cycles, a
// 1 KiB tile store ~13 more on the tile unit; while the tile unit works, vector instructions issue
// at one per cycle instead of two (16 FMAs hide under a tdpbssd, 32 do not).
//
// Memory: per thread that ran one, one buffer (thread_buffer) of the decoded chunk
// (kDecodedChunkBytes, or one group's columns when that is larger: the K-quants decode ~34 bytes
// per element and group, so rows of more than ~30 k elements), plus, for matmul() from the rows, the
// packed span (kSpanTokens x K x 1.02-1.13 bytes: 3.1 MiB for an 11008-wide Q4_0 matrix); kept
// for the thread's later calls, freed when the thread ends. The forward pass passes tiled copies
// (its own buffer, counted in its scratch), so its threads hold only the decoded chunk.
//
// The AMX kernels compute the integer sums from the codes alone; the AVX-512 kernels use the
// activation blocks' code sums (BlockQ8_0S::sum, BlockQ8_K bsums). The two agree because every
// activation quantizer computes those sums from the codes it wrote.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/kernel_table.h"
#include "kernels/repack.h"
#include "kernels/tile_driver.h"  // EDGELLM_ALWAYS_INLINE

namespace edgellm::kernels::amx {

// The calling thread's buffer of at least `bytes` (64-byte aligned), grown on demand and kept for
// the thread's later calls (a pool worker runs many matmuls); nullptr when it cannot be allocated.
uint8_t* thread_buffer(size_t bytes);

namespace {

// Fewer tokens than this go to the AVX-512 kernel: a batch of a few tokens streams the weights
// from memory once, which the AVX-512 kernel's prefetching does at full bandwidth, and the decode
// of a chunk is shared by fewer tiles. One core, Q4_0 2048 x 2048, weights in cache, G MAC/s
// AVX-512 / AMX: 16 tokens 216 / 240, 24 tokens 216 / 237, 32 tokens 216 / 319; a 151936 x 1536
// Q6_K head at 32 tokens (weights from DRAM) 125 / 118.
constexpr int64_t kMinTokens = 32;
constexpr int kTileTokens = 16;
// Decoded weights per chunk: rows x K bytes that every token tile of the call re-reads from L2.
// 1 MiB measured best on a 2 MiB L2 (one core, 512 tokens, 2048 x 2048 / 2048 x 5632 / 5632 x
// 2048: 64 KiB 362 / 346 G MAC/s, 192 KiB 420 / 323, 1 MiB 439 / 442 / 376-420, 1.5 MiB 416 /
// 389 / 376, 4 MiB 322 / 355 / 311): the activations are re-read once per chunk.
constexpr int64_t kDecodedChunkBytes = 1024 * 1024;
// Tokens packed per pass: bounds the packed activations at kSpanTokens x K x 1.02-1.13 bytes (a
// 5632-wide Q4_0 matrix: 1.6 MiB) whatever the batch; each pass decodes the weights again (a few
// vector instructions per decoded byte; not timed separately). A byte budget per span instead
// (768 KiB, 1.5 MiB) measured the same within noise (Q4_K 2048 x 11008: 338 / 372 / 361 G MAC/s).
constexpr int64_t kSpanTokens = 256;
// Tokens per pass over a tiled copy (matmul_pretiled): the forward pass's chunks (n_batch 512 by
// default) in one pass; larger batches in several, each decoding the weights again.
constexpr int64_t kPretiledSpanTokens = 512;
static_assert(kPretiledSpanTokens % kTileTokens == 0);

// The ldtilecfg operand (Intel SDM vol. 1, 3.2 "tile configuration"): palette 1, per tile
// register its rows and bytes per row.
struct alignas(64) TileConfig {
  uint8_t palette_id;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};
static_assert(sizeof(TileConfig) == 64);

// ldtilecfg with palette 1 and, for tmm0 .. tmm(N-1), rows[i] rows of colsb[i] bytes.
template <int N>
EDGELLM_ALWAYS_INLINE void load_tile_config(const uint8_t (&rows)[N], const uint16_t (&colsb)[N]) {
  TileConfig c;
  std::memset(&c, 0, sizeof c);
  c.palette_id = 1;
  for (int i = 0; i < N; ++i) {
    c.rows[i] = rows[i];
    c.colsb[i] = colsb[i];
  }
  _tile_loadconfig(&c);
}

// GCC's tile intrinsics are asm statements without a memory operand: order them against the
// ordinary loads and stores of the same buffers explicitly. A full barrier where the decoded and
// packed buffers are written (no live accumulators there); the C store names its buffer as its
// output, so that the accumulators stay in registers across it (a "memory" clobber in the block
// loop made GCC keep them on the stack).
EDGELLM_ALWAYS_INLINE void compiler_barrier() {
  __asm__ volatile("" ::: "memory");
}
using CTile = int32_t[kTileTokens * 16];
// (AT&T | Intel syntax alternatives, as GCC's own tile intrinsics spell them.)
#define EDGELLM_AMX_STORE_C(tmm, c)                                                              \
  __asm__ volatile("{tilestored\t%%tmm" #tmm ", (%1,%2,1)|tilestored\t[%1+%2*1], %%tmm" #tmm "}" \
                   : "=m"(c)                                                                     \
                   : "r"(&(c)[0]), "r"(64L))

// A format's policy P (matmul_legacy_amx.cpp: Legacy<K>; matmul_kquants_amx.cpp: KQuant<kQ5>, Q6K):
//   kBlockElems                      elements per column (32, 256)
//   kDecodedBytes, kPackedBytes      bytes of one decoded weight column / packed token-tile column
//   kSegmentBytes                    packed activations per K segment (segment_columns; 0: none)
//   configure()                      ldtilecfg of the tile shapes its tile() uses
//   decode(group, nb, b, out)        weight column b of a 16-row group -> its decoded form
//   pack(x, x_row_bytes, m, nb, out) m <= 16 tokens' activation rows -> nb packed columns (zero past m)
//   tile(decoded, nb, xa, m, y, ys[, resume])
//                                    one group x one token tile, every column: y[t][0..15], t < m,
//                                    from y's values when resuming (a later K segment; only where
//                                    kSegmentBytes > 0), else from 0
//   tile2(decoded, nb, xa, tile_bytes, m1, y, ys, resume)   (optional) two token tiles, 16 and m1
// pack() depends on the activation type only (Legacy<*> all read Q8_0_S, KQuant<*> Q8_K_S, Q6K
// Q8_K), which is what lets one tiled copy serve every weight type of an input (kernels.h).
// The compiler barriers order the ordinary stores of pack and decode against the tile loads
// before and after them (the tile intrinsics' asm does not tell GCC it reads memory).

// Tokens in token tile i of n_tokens (16, or fewer in the last).
EDGELLM_ALWAYS_INLINE int tokens_in_tile(int64_t n_tokens, int64_t i) {
  return static_cast<int>(n_tokens - i * kTileTokens < kTileTokens ? n_tokens - i * kTileTokens : kTileTokens);
}

// The decoded-weights buffer: kDecodedChunkBytes, or one group's columns when that is larger.
template <class P>
size_t decoded_buffer_bytes(int64_t nb) {
  const int64_t group_bytes = nb * P::kDecodedBytes;
  return static_cast<size_t>(group_bytes > kDecodedChunkBytes ? group_bytes : kDecodedChunkBytes);
}

// Groups per decoded chunk of nb columns: kDecodedChunkBytes of them, at least one.
template <class P>
int64_t chunk_groups(int64_t nb) {
  const int64_t group_bytes = nb * P::kDecodedBytes;
  return group_bytes > 0 && kDecodedChunkBytes / group_bytes > 1 ? kDecodedChunkBytes / group_bytes : 1;
}

// Columns per K segment for n_tiles token tiles: the segment's packed activations (every token
// tile's columns of it) at most P::kSegmentBytes, so that they stay in L2 beside the decoded
// chunk while each chunk of rows passes over them; the columns split evenly; P::kSegmentBytes 0:
// one segment. Without segments, a 256-token Q4_K down projection (K = 11008: 3 MiB of packed
// activations) re-read them from L3 for every chunk of rows: 330-352 G MAC/s against 423-459 with
// segments of 768 KiB or 1.25 MiB (one core). The Q4_0 kernel gained nothing from segments (K =
// 5632, 256 tokens: 398-422 without, 383-401 with), so it has none.
template <class P>
int64_t segment_columns(int64_t nb, int64_t n_tiles) {
  if constexpr (P::kSegmentBytes == 0) return nb;
  const int64_t fit = P::kSegmentBytes / (n_tiles * P::kPackedBytes);
  const int64_t most = fit > 1 ? fit : 1;
  const int64_t segments = (nb + most - 1) / most;
  return (nb + segments - 1) / segments;
}

// Rows [r0, r1) x the n_tokens tokens whose packed tiles are xa (tile i at xa + i * nb *
// kPackedBytes), into y (token t's row at y + t * y_stride). Per K segment and chunk of groups the
// weights are decoded once into `decoded`, then every token tile passes over them; a segment
// after the first resumes each output from y (tile(..., resume)): the same F32 steps in the same
// order as one pass, so the same bits.
template <class P>
void run_chunks(int64_t nb, const uint8_t* w, size_t w_row_bytes, int64_t r0, int64_t r1, const uint8_t* xa,
                int64_t n_tokens, float* y, int64_t y_stride, uint8_t* decoded) {
  const int64_t tile_bytes = nb * P::kPackedBytes;
  const int64_t n_tiles = (n_tokens + kTileTokens - 1) / kTileTokens;
  const int64_t seg = segment_columns<P>(nb, n_tiles);
  for (int64_t b0 = 0; b0 < nb; b0 += seg) {
    const int64_t sb = nb - b0 < seg ? nb - b0 : seg;
    const int64_t group_bytes = sb * P::kDecodedBytes;
    const int64_t groups = chunk_groups<P>(sb);
    const bool resume = b0 > 0;
    const uint8_t* xs = xa + b0 * P::kPackedBytes;
    for (int64_t rc = r0; rc < r1; rc += groups * kPackRows) {
      compiler_barrier();  // the last chunk's tile loads of `decoded` came before this decode
      const int64_t re = rc + groups * kPackRows < r1 ? rc + groups * kPackRows : r1;
      for (int64_t r = rc; r < re; r += kPackRows) {
        const uint8_t* group = w + static_cast<size_t>(r) * w_row_bytes;
        uint8_t* out = decoded + (r - rc) / kPackRows * group_bytes;
        for (int64_t b = b0; b < b0 + sb; ++b) P::decode(group, nb, b, out + (b - b0) * P::kDecodedBytes);
      }
      compiler_barrier();
      int64_t i = 0;
      if constexpr (requires { &P::tile2; }) {  // two token tiles at a time share each weight tile
        for (; i + 1 < n_tiles; i += 2) {
          for (int64_t r = rc; r < re; r += kPackRows) {
            P::tile2(decoded + (r - rc) / kPackRows * group_bytes, sb, xs + i * tile_bytes, tile_bytes,
                     tokens_in_tile(n_tokens, i + 1), y + i * kTileTokens * y_stride + r, y_stride, resume);
          }
        }
      }
      for (; i < n_tiles; ++i) {
        for (int64_t r = rc; r < re; r += kPackRows) {
          const uint8_t* dg = decoded + (r - rc) / kPackRows * group_bytes;
          float* yt = y + i * kTileTokens * y_stride + r;
          if constexpr (P::kSegmentBytes > 0) {
            P::tile(dg, sb, xs + i * tile_bytes, tokens_in_tile(n_tokens, i), yt, y_stride, resume);
          } else {  // one segment: tile() has no resume
            P::tile(dg, sb, xs + i * tile_bytes, tokens_in_tile(n_tokens, i), yt, y_stride);
          }
        }
      }
    }
  }
}

// Token tiles [tile0, tile1) of xq's n_tokens rows packed into xt (tile i at xt + i * nb *
// kPackedBytes): the tiled copy (kernels.h) and matmul_tiles' spans.
template <class P>
void tile_activations(int64_t n, const void* xq, size_t xq_row_bytes, int64_t n_tokens, int64_t tile0, int64_t tile1,
                      void* xt) {
  const int64_t nb = n / P::kBlockElems;
  const auto* x = static_cast<const uint8_t*>(xq);
  auto* out = static_cast<uint8_t*>(xt);
  for (int64_t i = tile0; i < tile1; ++i) {
    P::pack(x + static_cast<size_t>(i * kTileTokens) * xq_row_bytes, xq_row_bytes, tokens_in_tile(n_tokens, i), nb,
            out + i * nb * P::kPackedBytes);
  }
  compiler_barrier();
}

// matmul from the activation rows: each span of kSpanTokens tokens packed into this thread's
// buffer (after the decoded chunk), then run_chunks over it.
template <class P>
void matmul_tiles(int64_t n, const uint8_t* w, size_t w_row_bytes, int64_t r0, int64_t r1, const uint8_t* x,
                  size_t x_row_bytes, int64_t n_tokens, float* y, int64_t y_stride, uint8_t* scratch) {
  const int64_t nb = n / P::kBlockElems;
  uint8_t* decoded = scratch;
  uint8_t* xa = scratch + decoded_buffer_bytes<P>(nb);
  P::configure();
  for (int64_t s0 = 0; s0 < n_tokens; s0 += kSpanTokens) {
    compiler_barrier();  // the last span's tile loads of xa came before this span's pack
    const int64_t span = n_tokens - s0 < kSpanTokens ? n_tokens - s0 : kSpanTokens;
    tile_activations<P>(n, x + static_cast<size_t>(s0) * x_row_bytes, x_row_bytes, span, 0,
                        (span + kTileTokens - 1) / kTileTokens, xa);  // ends with a compiler barrier
    run_chunks<P>(nb, w, w_row_bytes, r0, r1, xa, span, y + s0 * y_stride, y_stride, decoded);
  }
  _tile_release();
}

template <class P>
void matmul(int64_t n, const void* w, size_t w_row_bytes, int64_t r0, int64_t r1, const void* x, size_t x_row_bytes,
            int64_t n_tokens, float* y, int64_t y_stride, MatmulFn fallback) {
  const int64_t nb = n / P::kBlockElems;
  const int64_t span = n_tokens < kSpanTokens ? n_tokens : kSpanTokens;
  const size_t xa_bytes = static_cast<size_t>((span + kTileTokens - 1) / kTileTokens * nb * P::kPackedBytes);
  uint8_t* scratch = n_tokens >= kMinTokens && nb > 0 ? thread_buffer(decoded_buffer_bytes<P>(nb) + xa_bytes) : nullptr;
  if (scratch == nullptr) {  // a short batch, or no memory for the buffer: the AVX-512 kernel
    fallback(n, w, w_row_bytes, r0, r1, x, x_row_bytes, n_tokens, y, y_stride);
    return;
  }
  matmul_tiles<P>(n, static_cast<const uint8_t*>(w), w_row_bytes, r0, r1, static_cast<const uint8_t*>(x), x_row_bytes,
                  n_tokens, y, y_stride, scratch);
}

// ---------------------------------------------------------------- the tiled copy (kernels.h)
// Every token tile packed once by the caller (tile_activations, any thread, any order of tiles),
// then read by every thread and row range (matmul_pretiled): the packing is not repeated per
// thread and per claimed row range as matmul()'s own is (ForwardPass claims 15-20 row ranges
// per matrix: 8-17 % slower with the packing in each, one core, 128 tokens, Q4_0).
//   layout: tile i (tokens 16i .. 16i + 15) at xt + i * nb * kPackedBytes, P::pack's columns

template <class P>
size_t tiled_bytes(int64_t n, int64_t n_tokens) {
  const int64_t nb = n / P::kBlockElems;
  if (n_tokens < kMinTokens || nb == 0) return 0;
  return static_cast<size_t>((n_tokens + kTileTokens - 1) / kTileTokens * nb * P::kPackedBytes);
}

template <class P>
void matmul_pretiled(int64_t n, const void* w, size_t w_row_bytes, int64_t r0, int64_t r1, const void* x,
                     size_t x_row_bytes, int64_t n_tokens, float* y, int64_t y_stride, const void* xt,
                     MatmulFn fallback) {
  const int64_t nb = n / P::kBlockElems;
  uint8_t* decoded = tiled_bytes<P>(n, n_tokens) > 0 && xt != nullptr ? thread_buffer(decoded_buffer_bytes<P>(nb)) : nullptr;
  if (decoded == nullptr) {  // no tiled copy for this batch, or no memory for the buffer
    fallback(n, w, w_row_bytes, r0, r1, x, x_row_bytes, n_tokens, y, y_stride);
    return;
  }
  P::configure();
  compiler_barrier();  // the caller's pack stores came before these tile loads
  // In spans of kPretiledSpanTokens: a K segment holds every token tile of its span, so a batch
  // of thousands of tokens would otherwise cut K into segments of one or two columns.
  const auto* tiles = static_cast<const uint8_t*>(xt);
  for (int64_t s0 = 0; s0 < n_tokens; s0 += kPretiledSpanTokens) {
    const int64_t span = n_tokens - s0 < kPretiledSpanTokens ? n_tokens - s0 : kPretiledSpanTokens;
    run_chunks<P>(nb, static_cast<const uint8_t*>(w), w_row_bytes, r0, r1, tiles + s0 / kTileTokens * nb * P::kPackedBytes,
                  span, y + s0 * y_stride, y_stride, decoded);
  }
  _tile_release();
}

}  // namespace
}  // namespace edgellm::kernels::amx
