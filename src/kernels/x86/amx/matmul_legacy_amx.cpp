// AMX prefill matmul for the 16-row interleaved Q4_0, Q5_0 and Q8_0 weights (kernels/repack.h;
// the shared loop and why tiles: amx_driver.h).
//
// One tdpbssd per 32-element block (K = 32: one scale per block, half the instruction's 64):
//   A  tmm2/3: 16 tokens x 32 bytes   the tokens' Q8_0 codes of block b (pack_tokens: 512 bytes,
//                                     then their 16 d_x as F32)
//   B  tmm4/5: 8 x 64 bytes           the block's weights as signed int8 (nibbles -> code - 8,
//                                     Q5_0 -> code - 16, Q8_0 bytes -> code - 128), row j =
//                                     elements 4j .. 4j+3 of the 16 rows: the X16 code vector j
//                                     (decode_block, then the 16 rows' d_w as F32)
//   C  tmm0/1: 16 tokens x 16 int32   sum_k x[t][k] * w[r][k], exact (tmm0 even, tmm1 odd blocks)
// then per token acc += float(C) * (d_w * d_x), the AVX-512 kernel's F32 end (which adds the
// offset back as -off * sum(x) to the same integer). That end (48 vector instructions per block)
// and the tile unit's loads and stores bound it together, neither alone: one core, 2048 x 2048 x
// 128, one block per step, 370 G MAC/s; without the F32 end 580; without the products (loads
// and stores kept) 437; the F32 end alone 700. Now (two blocks per step, tiled input, 512
// tokens): 412-448 G MAC/s against ~210 for the AVX-512 kernel.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
// GCC 12's own AVX-512 intrinsic headers (_mm512_*_ps with an undefined pass-through operand).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/blocks.h"
#include "kernels/x86/amx/amx_driver.h"
#include "kernels/x86/amx/amx_kernels.h"
#include "kernels/x86/avx512/avx512_kernels.h"

namespace edgellm::kernels::amx {
namespace {

// Per 16-row group and block: the B tile (512 bytes) and the 16 rows' d_w as F32 (64 bytes).
constexpr int64_t kDecodedTileBytes = 512;
constexpr int64_t kDecodedBlockBytes = kDecodedTileBytes + 64;

enum class Kind { kQ4_0, kQ5_0, kQ8_0 };

template <Kind K>
constexpr int64_t code_bytes() {  // packed code bytes per block column of a group (repack.h)
  return K == Kind::kQ8_0   ? kPackRows * kQK8_0
         : K == Kind::kQ5_0 ? kPackRows * (kQK5_0 / 2 + 4)
                            : kPackRows * (kQK4_0 / 2);
}

EDGELLM_ALWAYS_INLINE void configure_tiles() {  // C tmm0/1, A tmm2/3, B tmm4/5
  load_tile_config<6>({kTileTokens, kTileTokens, kTileTokens, kTileTokens, 8, 8}, {64, 64, 32, 32, 64, 64});
}

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
      _mm512_store_si512(out + 64 * (j + 4), _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(v, 4), mask), eight));
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
  alignas(64) CTile c[2][2];
  __m512 acc[kTileTokens];
#pragma GCC unroll 16
  for (int t = 0; t < kTileTokens; ++t) acc[t] = _mm512_setzero_ps();
  // Software pipeline, two blocks per step: the tile unit multiplies blocks b + 2 and b + 3 while
  // the vector ports finish b and b + 1 from their stored C tiles; b + 2's and b + 3's C tiles are
  // stored after those finishes (amx_driver.h). Two blocks per step rather than one: one core,
  // tiled input, 2048 x 2048 x 512 382-405 -> 412-448 G MAC/s, 5632 x 2048 x 256 386-393 ->
  // 404-417 (more independent vector work per tile-unit round trip).
  const auto issue2 = [&](int64_t blk) __attribute__((always_inline)) {  // blocks blk, blk + 1
    const uint8_t* d = decoded + blk * kDecodedBlockBytes;
    const uint8_t* a = xa + blk * kDecodedBlockBytes;
    _tile_loadd(2, a, 32);
    _tile_loadd(4, d, 64);
    _tile_loadd(3, a + kDecodedBlockBytes, 32);
    _tile_loadd(5, d + kDecodedBlockBytes, 64);
    _tile_zero(0);
    _tile_zero(1);
    _tile_dpbssd(0, 2, 4);
    _tile_dpbssd(1, 3, 5);
  };
  const auto finish = [&](int64_t blk, const int32_t* cb) __attribute__((always_inline)) {
    const float* dw = reinterpret_cast<const float*>(decoded + blk * kDecodedBlockBytes + kDecodedTileBytes);
    finish_block(cb, dw, reinterpret_cast<const float*>(xa + blk * kDecodedBlockBytes + kDecodedTileBytes), acc);
  };
  const int64_t pairs = nb / 2;
  if (pairs > 0) {
    issue2(0);
    EDGELLM_AMX_STORE_C(0, c[0][0]);
    EDGELLM_AMX_STORE_C(1, c[0][1]);
  }
  for (int64_t p = 0; p < pairs; ++p) {
    if (p + 1 < pairs) issue2(2 * (p + 1));
    finish(2 * p, c[p & 1][0]);
    finish(2 * p + 1, c[p & 1][1]);
    if (p + 1 < pairs) {
      EDGELLM_AMX_STORE_C(0, c[(p + 1) & 1][0]);
      EDGELLM_AMX_STORE_C(1, c[(p + 1) & 1][1]);
    }
  }
  if (nb % 2 != 0) {  // the last block of an odd count
    const int64_t blk = nb - 1;
    _tile_loadd(2, xa + blk * kDecodedBlockBytes, 32);
    _tile_loadd(4, decoded + blk * kDecodedBlockBytes, 64);
    _tile_zero(0);
    _tile_dpbssd(0, 2, 4);
    EDGELLM_AMX_STORE_C(0, c[0][0]);
    finish(blk, c[0][0]);
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
        _mm256_store_si256(reinterpret_cast<__m256i*>(out + 32 * t),
                           _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.qs)));
        dx[t] = xb.d;
      } else {
        _mm256_store_si256(reinterpret_cast<__m256i*>(out + 32 * t), _mm256_setzero_si256());
        dx[t] = 0.0f;
      }
    }
  }
}

template <Kind K>
struct Legacy {
  static constexpr int64_t kBlockElems = kQK8_0;
  static constexpr int64_t kDecodedBytes = kDecodedBlockBytes, kPackedBytes = kDecodedBlockBytes;
  static constexpr int64_t kSegmentBytes = 0;  // amx_driver.h: segment_columns
  static void configure() { configure_tiles(); }
  static EDGELLM_ALWAYS_INLINE void decode(const uint8_t* group, int64_t nb, int64_t b, uint8_t* out) {
    decode_block<K>(group, nb, b, out);
  }
  static EDGELLM_ALWAYS_INLINE void pack(const uint8_t* x, size_t x_row_bytes, int m, int64_t nb, uint8_t* xa) {
    pack_tokens(x, x_row_bytes, m, nb, xa);
  }
  static EDGELLM_ALWAYS_INLINE void tile(const uint8_t* decoded, int64_t nb, const uint8_t* xa, int m, float* y,
                                         int64_t y_stride) {
    group_tile(decoded, nb, xa, m, y, y_stride);
  }
};

}  // namespace

void matmul_q4_0_x16(EDGELLM_MATMUL_PARAMS) {
  matmul<Legacy<Kind::kQ4_0>>(EDGELLM_MATMUL_ARGS, avx512::matmul_q4_0_x16);
}

void matmul_q5_0_x16(EDGELLM_MATMUL_PARAMS) {
  matmul<Legacy<Kind::kQ5_0>>(EDGELLM_MATMUL_ARGS, avx512::matmul_q5_0_x16);
}

void matmul_q8_0_x16(EDGELLM_MATMUL_PARAMS) {
  matmul<Legacy<Kind::kQ8_0>>(EDGELLM_MATMUL_ARGS, avx512::matmul_q8_0_x16);
}

// The tiled copy of Q8_0_S activations (every Legacy<K> packs the same way).
size_t tiled_bytes_q8_0s(int64_t n, int64_t n_tokens) { return tiled_bytes<Legacy<Kind::kQ4_0>>(n, n_tokens); }

void tile_q8_0s(EDGELLM_TILE_PARAMS) { tile_activations<Legacy<Kind::kQ4_0>>(EDGELLM_TILE_ARGS); }

void matmul_q4_0_x16_tiled(EDGELLM_TILED_MATMUL_PARAMS) {
  matmul_pretiled<Legacy<Kind::kQ4_0>>(EDGELLM_MATMUL_ARGS, xt, avx512::matmul_q4_0_x16);
}

void matmul_q5_0_x16_tiled(EDGELLM_TILED_MATMUL_PARAMS) {
  matmul_pretiled<Legacy<Kind::kQ5_0>>(EDGELLM_MATMUL_ARGS, xt, avx512::matmul_q5_0_x16);
}

void matmul_q8_0_x16_tiled(EDGELLM_TILED_MATMUL_PARAMS) {
  matmul_pretiled<Legacy<Kind::kQ8_0>>(EDGELLM_MATMUL_ARGS, xt, avx512::matmul_q8_0_x16);
}

}  // namespace edgellm::kernels::amx
