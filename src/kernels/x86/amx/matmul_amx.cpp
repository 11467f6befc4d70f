// AMX (Sapphire Rapids and later Xeons) prefill matmul for the 16-row interleaved Q4_0, Q5_0 and
// Q8_0 weights (kernels/repack.h). Decode and batches under kMinTokens stay on the AVX-512 kernels.
//
// Why: the AVX-512 tile spends an F32 convert + multiply + FMA per 8 vpdpbusd and decodes the
// nibbles per token tile, on the same two vector ports as vpdpbusd; on an AMX Xeon it ran at 42 %
// of the vpdpbusd peak (one core, 512 tokens). One tdpbssd multiplies a 16-token x 32-element tile
// of activations by a 32-element x 16-row tile of weights (8192 MACs) on the tile unit, which
// leaves the vector ports only the per-block F32 end: for each token, convert the 16 rows' int32
// sums, multiply the rows' d_w by the token's d_x and FMA, exactly what the AVX-512 kernel does.
//
// Shapes (tmm registers, palette 1; C and A double-buffered so block b + 1 runs on the tile unit
// while the vector ports finish block b):
//   A  tmm2/3: 16 tokens x 32 bytes   the tokens' Q8_0 codes of block b (pack_tokens: 512 bytes,
//                                     then their 16 d_x as F32; zero past the tile's tokens)
//   B  tmm4/5: 8 x 64 bytes           the block's weights as signed int8, row j = elements
//                                     4j .. 4j+3 of the 16 rows: the X16 code vector j
//                                     (decode_block, then the 16 rows' d_w as F32)
//   C  tmm0/1: 16 tokens x 16 int32   sum_k x[t][k] * w[r][k], exact; stored, then the F32 end
// K = 32 per tdpbssd (one scale per 32 elements) is half the instruction's 64.
//
// What bounds it (measured on a 2-core Xeon slice with AMX, no PMU, timing loops): tdpbssd 16.5
// cycles, a 1 KiB tile store ~13 more on the tile unit; while the tile unit works, vector
// instructions issue at one per cycle instead of two (16 FMAs hide under a tdpbssd, 32 do not),
// and the convert is slower still there. The F32 end (48 vector instructions per block) is the
// limit: ~70 cycles (at the ~3.85 GHz the probes imply) per block of 16 x 16 x 32 MACs, 440 G MAC/s per core against 210 for the
// AVX-512 kernel (2048 x 2048 and 2048 x 5632, 512 tokens).
//
// The weights are decoded once per chunk of rows (nibbles -> code - 8, Q5_0 -> code - 16, Q8_0
// bytes -> code - 128, d_w -> F32) into a per-thread buffer that stays in L2 while every 16-token
// tile of a span passes over it. The integer sum equals the AVX-512 kernel's (which adds the
// offset back as -off * sum(x)) and the F32 steps are the same in the same block order: the
// result equals the AVX-512 kernel's bit for bit, so a token's result does not depend on whether
// its batch ran here or on the decode path (tests/kernels/test_repack.cpp).
//
// Memory: per thread that ran it, one buffer of the decoded chunk (<= kDecodedChunkBytes for
// rows up to 58 k elements) plus the packed span (kSpanTokens x K x 1.125 bytes: 3.1 MiB for an
// 11008-wide matrix), kept for the thread's later calls and freed when the thread ends.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
// GCC 12's own AVX-512 intrinsic headers (_mm512_*_ps with an undefined pass-through operand).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "kernels/blocks.h"
#include "kernels/kernel_table.h"
#include "kernels/repack.h"
#include "kernels/tile_driver.h"  // EDGELLM_ALWAYS_INLINE
#include "kernels/x86/amx/amx_kernels.h"
#include "kernels/x86/avx512/avx512_kernels.h"

namespace edgellm::kernels::amx {
namespace {

// Fewer tokens than this go to the AVX-512 kernel: a batch of a few tokens streams the weights
// from memory once, which the AVX-512 kernel's prefetching does at full bandwidth, and decoding a
// chunk for a handful of tokens would cost more than it saves.
constexpr int64_t kMinTokens = 32;
constexpr int kTileTokens = 16;
constexpr int64_t kBlockElems = 32;
// Per 16-row group and block: the B tile (512 bytes) and the 16 rows' d_w as F32 (64 bytes).
constexpr int64_t kDecodedTileBytes = 512;
constexpr int64_t kDecodedBlockBytes = kDecodedTileBytes + 64;
// Decoded weights per chunk: rows x K bytes that every token tile of the call re-reads from L2.
// 1 MiB measured best on a 2 MiB L2 (one core, 512 tokens, 2048 x 2048 / 2048 x 5632 / 5632 x
// 2048: 64 KiB 362 / 346 G MAC/s, 192 KiB 420 / 323, 1 MiB 439 / 442 / 376-420, 1.5 MiB 416 /
// 389 / 376, 4 MiB 322 / 355 / 311): the activations are re-read once per chunk.
constexpr int64_t kDecodedChunkBytes = 1024 * 1024;
// Tokens packed per pass: bounds the packed activations at kSpanTokens x K x 1.125 bytes (a
// 5632-wide matrix: 1.6 MiB) whatever the batch; each pass decodes the weights again (~2 % of a
// pass's time at 256 tokens).
constexpr int64_t kSpanTokens = 256;

enum class Kind { kQ4_0, kQ5_0, kQ8_0 };

template <Kind K>
constexpr int64_t code_bytes() {  // packed code bytes per block column of a group (repack.h)
  return K == Kind::kQ8_0 ? kPackRows * kQK8_0 : K == Kind::kQ5_0 ? kPackRows * (kQK5_0 / 2 + 4) : kPackRows * (kQK4_0 / 2);
}

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

EDGELLM_ALWAYS_INLINE void configure_tiles() {
  TileConfig c;
  std::memset(&c, 0, sizeof c);
  c.palette_id = 1;
  for (int i = 0; i < 2; ++i) {
    c.rows[i] = kTileTokens;  // C
    c.colsb[i] = 64;
    c.rows[2 + i] = kTileTokens;  // A
    c.colsb[2 + i] = 32;
    c.rows[4 + i] = 8;  // B
    c.colsb[4 + i] = 64;
  }
  _tile_loadconfig(&c);
}

// GCC's tile intrinsics are asm statements without a memory operand: order them against the
// ordinary loads and stores of the same buffers explicitly. A full barrier where the decoded and
// packed buffers are written (no live accumulators there); the C store names its buffer as its
// output, so that the accumulators stay in registers across it (a "memory" clobber in the block
// loop made GCC keep them on the stack).
EDGELLM_ALWAYS_INLINE void compiler_barrier() { __asm__ volatile("" ::: "memory"); }
using CTile = int32_t[kTileTokens * 16];
#define EDGELLM_AMX_STORE_C(tmm, c) \
  __asm__ volatile("tilestored %%tmm" #tmm ", (%1,%2,1)" : "=m"(c) : "r"(&(c)[0]), "r"(64L))

// One thread's buffer (decoded chunk, then the packed span), grown on demand and kept for the
// thread's later calls: a pool worker runs many matmuls.
struct Scratch {
  uint8_t* data = nullptr;
  size_t bytes = 0;
  ~Scratch() { std::free(data); }
  uint8_t* reserve(size_t want) {
    if (want <= bytes) return data;
    std::free(data);
    bytes = (want + 63) / 64 * 64;
    data = static_cast<uint8_t*>(std::aligned_alloc(64, bytes));
    if (data == nullptr) bytes = 0;
    return data;
  }
};
thread_local Scratch t_scratch;

// Block column b of one packed group -> its decoded B tile and F32 scales.
template <Kind K>
EDGELLM_ALWAYS_INLINE void decode_block(const uint8_t* group, int64_t nb, int64_t b, uint8_t* out) {
  const uint8_t* cb = group + b * code_bytes<K>();
  if constexpr (K == Kind::kQ8_0) {
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));  // code + 128 -> code
    for (int j = 0; j < 8; ++j) {
      _mm512_store_si512(out + 64 * j, _mm512_xor_si512(_mm512_loadu_si512(cb + 64 * j), flip));
    }
  } else if constexpr (K == Kind::kQ4_0) {  // nibbles 0..15, offset 8
    const __m512i mask = _mm512_set1_epi8(0x0F), eight = _mm512_set1_epi8(8);
    for (int j = 0; j < 4; ++j) {
      const __m512i v = _mm512_loadu_si512(cb + 64 * j);
      _mm512_store_si512(out + 64 * j, _mm512_sub_epi8(_mm512_and_si512(v, mask), eight));
      _mm512_store_si512(out + 64 * (j + 4),
                         _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(v, 4), mask), eight));
    }
  } else {  // Q5_0: nibbles plus bit j of `high` as the fifth bit of code vector j; offset 16
    const __m512i mask = _mm512_set1_epi8(0x0F), sixteen = _mm512_set1_epi8(16);
    const __m512i high = _mm512_loadu_si512(cb + 256);
    for (int j = 0; j < 8; ++j) {
      const __m512i v = _mm512_loadu_si512(cb + 64 * (j & 3));
      const __m512i nib = _mm512_and_si512(j < 4 ? v : _mm512_srli_epi16(v, 4), mask);
      // code - 16 = nib - 16 where the fifth bit is clear, nib where it is set
      const __mmask64 set = _mm512_test_epi8_mask(high, _mm512_set1_epi8(static_cast<char>(1 << j)));
      _mm512_store_si512(out + 64 * j, _mm512_mask_sub_epi8(nib, _knot_mask64(set), nib, sixteen));
    }
  }
  const auto* scales = reinterpret_cast<const uint16_t*>(group + nb * code_bytes<K>()) + b * kPackRows;
  _mm512_store_ps(out + kDecodedTileBytes,
                  _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales))));
}

// The F32 end of one block for the tile's 16 token slots: acc[t] += float(c[t]) * (d_w * d_x[t]),
// the AVX-512 kernel's operations (slots past the tile's tokens compute on zeros and are not
// stored).
EDGELLM_ALWAYS_INLINE void finish_block(const int32_t* c, const float* dw, const float* dx, __m512* acc) {
  const __m512 w = _mm512_load_ps(dw);
#pragma GCC unroll 16
  for (int t = 0; t < kTileTokens; ++t) {
    const __m512 s = _mm512_mul_ps(w, _mm512_set1_ps(dx[t]));
    acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c + 16 * t)), s, acc[t]);
  }
}

// One 16-row group x one token tile, every block: y[t][0..15] for the tile's m tokens.
//   decoded: the group's decoded blocks; xa: the tile's packed blocks (kDecodedBlockBytes each)
EDGELLM_ALWAYS_INLINE void group_tile(const uint8_t* decoded, int64_t nb, const uint8_t* xa, int m, float* y,
                                      int64_t y_stride) {
  alignas(64) CTile c[2];
  __m512 acc[kTileTokens];
#pragma GCC unroll 16
  for (int t = 0; t < kTileTokens; ++t) acc[t] = _mm512_setzero_ps();
  // Software pipeline: the tile unit multiplies block b + 1 (and stores its sums) while the
  // vector ports finish block b, on alternating tile registers and C buffers.
  const auto issue = [&](int64_t blk) __attribute__((always_inline)) {
    const uint8_t* d = decoded + blk * kDecodedBlockBytes;
    if (blk & 1) {
      _tile_loadd(3, xa + blk * kDecodedBlockBytes, 32);
      _tile_loadd(5, d, 64);
      _tile_zero(1);
      _tile_dpbssd(1, 3, 5);
      EDGELLM_AMX_STORE_C(1, c[1]);
    } else {
      _tile_loadd(2, xa + blk * kDecodedBlockBytes, 32);
      _tile_loadd(4, d, 64);
      _tile_zero(0);
      _tile_dpbssd(0, 2, 4);
      EDGELLM_AMX_STORE_C(0, c[0]);
    }
  };
  issue(0);
  for (int64_t b = 0; b < nb; ++b) {
    if (b + 1 < nb) issue(b + 1);
    const float* dw = reinterpret_cast<const float*>(decoded + b * kDecodedBlockBytes + kDecodedTileBytes);
    finish_block(c[b & 1], dw, reinterpret_cast<const float*>(xa + b * kDecodedBlockBytes + kDecodedTileBytes), acc);
  }
  // Constant indices only (unrolled, the bound tested inside): an acc[] indexed by a variable
  // would live on the stack, and every block's FMAs with it.
#pragma GCC unroll 16
  for (int t = 0; t < kTileTokens; ++t) {
    if (t < m) _mm512_storeu_ps(y + t * y_stride, acc[t]);
  }
}

// The activations of m <= 16 tokens as A tiles: per block, codes[16][32] and d_x[16]
// (kDecodedBlockBytes), zero past m so that every tile has 16 rows. Why a copy: tile loads of
// 32 bytes in place from the BlockQ8_0S rows (40-byte blocks, half the rows across two lines)
// made the kernel 15 % slower.
EDGELLM_ALWAYS_INLINE void pack_tokens(const uint8_t* x, size_t x_row_bytes, int m, int64_t nb, uint8_t* xa) {
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t* out = xa + b * kDecodedBlockBytes;
    auto* dx = reinterpret_cast<float*>(out + kDecodedTileBytes);
    for (int t = 0; t < kTileTokens; ++t) {
      if (t < m) {
        const BlockQ8_0S& xb = reinterpret_cast<const BlockQ8_0S*>(x + static_cast<size_t>(t) * x_row_bytes)[b];
        _mm256_store_si256(reinterpret_cast<__m256i*>(out + 32 * t), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.qs)));
        dx[t] = xb.d;
      } else {
        _mm256_store_si256(reinterpret_cast<__m256i*>(out + 32 * t), _mm256_setzero_si256());
        dx[t] = 0.0f;
      }
    }
  }
}

template <Kind K>
void matmul_tiles(int64_t n, const uint8_t* w, size_t w_row_bytes, int64_t r0, int64_t r1, const uint8_t* x,
                  size_t x_row_bytes, int64_t n_tokens, float* y, int64_t y_stride, uint8_t* scratch,
                  int64_t chunk_groups) {
  const int64_t nb = n / kBlockElems;
  const int64_t group_bytes = nb * kDecodedBlockBytes;
  uint8_t* decoded = scratch;
  uint8_t* xa = scratch + chunk_groups * group_bytes;
  configure_tiles();
  for (int64_t s0 = 0; s0 < n_tokens; s0 += kSpanTokens) {
    const int64_t span = n_tokens - s0 < kSpanTokens ? n_tokens - s0 : kSpanTokens;
    const int64_t n_tiles = (span + kTileTokens - 1) / kTileTokens;
    const auto tokens_in = [&](int64_t i) {
      return static_cast<int>(span - i * kTileTokens < kTileTokens ? span - i * kTileTokens : kTileTokens);
    };
    for (int64_t i = 0; i < n_tiles; ++i) {
      pack_tokens(x + static_cast<size_t>(s0 + i * kTileTokens) * x_row_bytes, x_row_bytes, tokens_in(i), nb,
                  xa + i * group_bytes);
    }
    for (int64_t rc = r0; rc < r1; rc += chunk_groups * kPackRows) {
      const int64_t re = rc + chunk_groups * kPackRows < r1 ? rc + chunk_groups * kPackRows : r1;
      for (int64_t r = rc; r < re; r += kPackRows) {
        const uint8_t* group = w + static_cast<size_t>(r) * w_row_bytes;
        uint8_t* out = decoded + (r - rc) / kPackRows * group_bytes;
        for (int64_t b = 0; b < nb; ++b) decode_block<K>(group, nb, b, out + b * kDecodedBlockBytes);
      }
      compiler_barrier();
      for (int64_t i = 0; i < n_tiles; ++i) {
        for (int64_t r = rc; r < re; r += kPackRows) {
          group_tile(decoded + (r - rc) / kPackRows * group_bytes, nb, xa + i * group_bytes, tokens_in(i),
                     y + (s0 + i * kTileTokens) * y_stride + r, y_stride);
        }
      }
    }
  }
  _tile_release();
}

template <Kind K>
void matmul(int64_t n, const void* w, size_t w_row_bytes, int64_t r0, int64_t r1, const void* x, size_t x_row_bytes,
            int64_t n_tokens, float* y, int64_t y_stride, MatmulFn fallback) {
  const int64_t nb = n / kBlockElems;
  const int64_t group_bytes = nb * kDecodedBlockBytes;
  const int64_t chunk_groups = kDecodedChunkBytes / group_bytes > 1 ? kDecodedChunkBytes / group_bytes : 1;
  const int64_t span = n_tokens < kSpanTokens ? n_tokens : kSpanTokens;
  const size_t xa_bytes = static_cast<size_t>((span + kTileTokens - 1) / kTileTokens * group_bytes);
  uint8_t* scratch = n_tokens >= kMinTokens
                         ? t_scratch.reserve(static_cast<size_t>(chunk_groups * group_bytes) + xa_bytes)
                         : nullptr;
  if (scratch == nullptr) {  // a short batch, or no memory for the buffer: the AVX-512 kernel
    fallback(n, w, w_row_bytes, r0, r1, x, x_row_bytes, n_tokens, y, y_stride);
    return;
  }
  matmul_tiles<K>(n, static_cast<const uint8_t*>(w), w_row_bytes, r0, r1, static_cast<const uint8_t*>(x),
                  x_row_bytes, n_tokens, y, y_stride, scratch, chunk_groups);
}

}  // namespace

void matmul_q4_0_x16(EDGELLM_MATMUL_PARAMS) {
  matmul<Kind::kQ4_0>(EDGELLM_MATMUL_ARGS, avx512::matmul_q4_0_x16);
}

void matmul_q5_0_x16(EDGELLM_MATMUL_PARAMS) {
  matmul<Kind::kQ5_0>(EDGELLM_MATMUL_ARGS, avx512::matmul_q5_0_x16);
}

void matmul_q8_0_x16(EDGELLM_MATMUL_PARAMS) {
  matmul<Kind::kQ8_0>(EDGELLM_MATMUL_ARGS, avx512::matmul_q8_0_x16);
}

void install(KernelTable& t) {
  t.matmul[type_slot(TensorType::Q4_0_X16)] = matmul_q4_0_x16;
  t.matmul[type_slot(TensorType::Q5_0_X16)] = matmul_q5_0_x16;
  t.matmul[type_slot(TensorType::Q8_0_X16)] = matmul_q8_0_x16;
}

}  // namespace edgellm::kernels::amx
