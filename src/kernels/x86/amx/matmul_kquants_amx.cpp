// AMX prefill matmul for the 16-row interleaved Q4_K, Q5_K and Q6_K weights (kernels/repack.h;
// the shared loop and why tiles: amx_driver.h). The K-quants' sub-block scales are folded into the
// weight tiles, split in digits small enough for bytes, so that a 256-element super-block is one
// tile product per digit and one F32 end, not one per sub-block. One core, G MAC/s, AVX-512 ->
// AMX: Q4_K 186-191 -> 435-513 (2048 wide, 512 tokens; 2048 x 11008 x 256 435-459), Q5_K 172 ->
// 441, Q6_K 147-154 -> 428-479 (docs/benchmarks.md, stops 34 and 35).
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

// ---------------------------------------------------------------- Q4_K_X16, Q5_K_X16
// Per 256-element super-block the AVX-512 kernel sums sc_j x (sum of code x over sub-block j) in
// int32, then one F32 end per token: acc + d_r d_x tot - dmin_r d_x m, m = sum_j min_j sums_j
// (kernels/x86/avx512/matmul_packed.cpp, finish_q4_k_column). The 6-bit scales go into the
// weights here, which keeps a super-block in one tile product: with sc = lo + 8 hi (lo, hi < 8),
// B_lo = code x lo and B_hi = code x hi fit unsigned bytes (Q4_K codes < 16: <= 105; Q5_K < 32:
// <= 217), tdpbsud accumulates both over the 256 elements in 4 steps of K = 64, and
// tot = C_lo + 8 C_hi exactly. The vector ports then do one F32 end per super-block, not one per
// 32 elements. m and the F32 steps are the AVX-512 kernel's: bit-identical results.
//
// Decoded column (kDecodedBytes): B_lo[4][16][64], B_hi[4][16][64] (tile q row k: elements
// 64q + 4k .. 64q + 4k + 3 of the 16 rows), d[16], dmin[16] as F32, mins[4] as the int16 pairs
// of the X16 layout widened (4 x 64 bytes). Packed tokens (kPackedBytes): qs[16][256] (tile q =
// bytes 64q .. of each row, stride 256), d_x[16] F32, sums[16][8] int16.
// Tiles: all 16 x 64 bytes (tile() and tile2() name them).
constexpr int64_t kKDecodedBytes = 2 * 4096 + 64 + 64 + 256;
constexpr int64_t kKPackedBytes = 4096 + 64 + 256;

// Every tile 16 x 64 bytes (B: 16 rows of 4 elements x 16 rows).
EDGELLM_ALWAYS_INLINE void configure_k_tiles() {
  constexpr uint8_t r = kTileTokens;
  load_tile_config<8>({r, r, r, r, r, r, r, r}, {64, 64, 64, 64, 64, 64, 64, 64});
}

// The byte multiplier s >= 0 of each dword's row in both 16-bit halves, from 16 rows' values: a
// 16-bit multiply then scales both bytes of a half without carry while code x s < 256 (Q4_K /
// Q5_K: s < 8, code < 32).
EDGELLM_ALWAYS_INLINE __m512i dword_multiplier(__m512i s32) {
  return _mm512_or_si512(s32, _mm512_slli_epi32(s32, 16));
}

// The tile loops both K-quant policies share: per super-block column b, per 64 elements q, two
// weight-digit tiles at d + 1024 q (B_lo, unsigned: tdpbsud) and d + 4096 + 1024 q (B_hi:
// tdpbsud, or tdpbssd when kHiSigned), the token tile's codes at a + 64 q (stride 256), so
// C_lo and C_hi per token tile; P::finish(d, a, lo, hi, acc) is the F32 end. Software-pipelined
// (amx_driver.h): column b + 1's products are issued before column b's finish, and stored after
// it. tile2 runs two token tiles (a and a + tile_bytes) so each B tile is loaded from L2 once for
// 32 tokens (the tile unit's loads, not its products, bound it: with every B tile read from L1,
// Q4_K 2048 x 2048 x 128 ran 14 % faster, one core). Tiles: C tmm0-3, A tmm4/5, B tmm6/7.
template <class P, bool kHiSigned>
struct DigitTiles {
  static constexpr int64_t kSegmentBytes = 1280 * 1024;  // amx_driver.h: segment_columns

  template <int kTiles>
  static EDGELLM_ALWAYS_INLINE void issue(const uint8_t* a, int64_t tile_bytes, const uint8_t* d) {
    _tile_zero(0);
    _tile_zero(1);
    if constexpr (kTiles == 2) {
      _tile_zero(2);
      _tile_zero(3);
    }
    for (int q = 0; q < 4; ++q) {
      _tile_loadd(6, d + q * 1024, 64);
      _tile_loadd(7, d + 4096 + q * 1024, 64);
      _tile_loadd(4, a + 64 * q, 256);
      _tile_dpbsud(0, 4, 6);
      if constexpr (kHiSigned) {
        _tile_dpbssd(1, 4, 7);
      } else {
        _tile_dpbsud(1, 4, 7);
      }
      if constexpr (kTiles == 2) {
        _tile_loadd(5, a + tile_bytes + 64 * q, 256);
        _tile_dpbsud(2, 5, 6);
        if constexpr (kHiSigned) {
          _tile_dpbssd(3, 5, 7);
        } else {
          _tile_dpbsud(3, 5, 7);
        }
      }
    }
  }

  template <int kTiles>
  static EDGELLM_ALWAYS_INLINE void run(const uint8_t* decoded, int64_t nb, const uint8_t* xa, int64_t tile_bytes,
                                        int m_last, float* y, int64_t y_stride, bool resume) {
    alignas(64) CTile c[2][2 * kTiles];  // [column parity][lo0, hi0, lo1, hi1]
    __m512 acc[kTiles][kTileTokens];
#pragma GCC unroll 16
    for (int t = 0; t < kTileTokens; ++t) {
#pragma GCC unroll 2
      for (int k = 0; k < kTiles; ++k) {
        const int m = k == kTiles - 1 ? m_last : kTileTokens;  // tokens of token tile k
        acc[k][t] = resume && t < m ? _mm512_loadu_ps(y + (k * kTileTokens + t) * y_stride) : _mm512_setzero_ps();
      }
    }
    const auto store = [&](int64_t b) __attribute__((always_inline)) {
      EDGELLM_AMX_STORE_C(0, c[b & 1][0]);
      EDGELLM_AMX_STORE_C(1, c[b & 1][1]);
      if constexpr (kTiles == 2) {
        EDGELLM_AMX_STORE_C(2, c[b & 1][2]);
        EDGELLM_AMX_STORE_C(3, c[b & 1][3]);
      }
    };
    issue<kTiles>(xa, tile_bytes, decoded);
    store(0);
    for (int64_t b = 0; b < nb; ++b) {
      if (b + 1 < nb) issue<kTiles>(xa + (b + 1) * P::kPackedBytes, tile_bytes, decoded + (b + 1) * P::kDecodedBytes);
      const uint8_t* d = decoded + b * P::kDecodedBytes;
      const uint8_t* a = xa + b * P::kPackedBytes;
      P::finish(d, a, c[b & 1][0], c[b & 1][1], acc[0]);
      if constexpr (kTiles == 2) P::finish(d, a + tile_bytes, c[b & 1][2], c[b & 1][3], acc[1]);
      if (b + 1 < nb) store(b + 1);
    }
#pragma GCC unroll 16
    for (int t = 0; t < kTileTokens; ++t) {
      if (kTiles == 2 || t < m_last) _mm512_storeu_ps(y + t * y_stride, acc[0][t]);
      if constexpr (kTiles == 2) {
        if (t < m_last) _mm512_storeu_ps(y + (kTileTokens + t) * y_stride, acc[kTiles - 1][t]);
      }
    }
  }

  // One group x one token tile of m tokens; two token tiles (16 and m1 tokens).
  static EDGELLM_ALWAYS_INLINE void tile(const uint8_t* decoded, int64_t nb, const uint8_t* xa, int m, float* y,
                                         int64_t y_stride, bool resume) {
    run<1>(decoded, nb, xa, 0, m, y, y_stride, resume);
  }
  static EDGELLM_ALWAYS_INLINE void tile2(const uint8_t* decoded, int64_t nb, const uint8_t* xa, int64_t tile_bytes,
                                          int m1, float* y, int64_t y_stride, bool resume) {
    run<2>(decoded, nb, xa, tile_bytes, m1, y, y_stride, resume);
  }
};

template <bool kQ5>
struct KQuant : DigitTiles<KQuant<kQ5>, false> {
  static constexpr int64_t kBlockElems = kQK_K;
  static constexpr int64_t kDecodedBytes = kKDecodedBytes, kPackedBytes = kKPackedBytes;
  static constexpr int64_t kColumnBytes = kQ5 ? kQ5KX16ColumnBytes : kQ4KX16ColumnBytes;

  static void configure() { configure_k_tiles(); }

  static EDGELLM_ALWAYS_INLINE __m512i fifth_bits(__m512i codes, const uint8_t* cb, int k, int j) {
    if constexpr (!kQ5) {
      return codes;
    } else {  // sub-block j's code vector k gains 16 where bit j of high vector k is set
      const __m512i high = _mm512_loadu_si512(cb + kQ5KX16High + k * 64);
      const __mmask64 m = _mm512_test_epi8_mask(high, _mm512_set1_epi8(static_cast<char>(1 << j)));
      return _mm512_mask_add_epi8(codes, m, codes, _mm512_set1_epi8(16));
    }
  }

  static EDGELLM_ALWAYS_INLINE void decode(const uint8_t* group, int64_t /*nb*/, int64_t b, uint8_t* out) {
    const uint8_t* cb = group + b * kColumnBytes;
    const __m512i mask = _mm512_set1_epi8(0x0F), seven = _mm512_set1_epi32(7);
    for (int q = 0; q < 4; ++q) {
      __m512i lo[2], hi[2];  // sub-blocks 2q (tile rows 0..7) and 2q + 1 (rows 8..15)
      for (int h = 0; h < 2; ++h) {
        const __m512i sc = _mm512_cvtepu8_epi32(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(cb + kQ4KX16Scales + (2 * q + h) * kPackRows)));
        lo[h] = dword_multiplier(_mm512_and_si512(sc, seven));
        hi[h] = dword_multiplier(_mm512_srli_epi32(sc, 3));
      }
      for (int k = 0; k < 8; ++k) {
        const __m512i v = _mm512_loadu_si512(cb + (q * 8 + k) * 64);
        const __m512i c0 = fifth_bits(_mm512_and_si512(v, mask), cb, k, 2 * q);
        const __m512i c1 = fifth_bits(_mm512_and_si512(_mm512_srli_epi16(v, 4), mask), cb, k, 2 * q + 1);
        uint8_t* t_lo = out + q * 1024;
        uint8_t* t_hi = out + 4096 + q * 1024;
        _mm512_store_si512(t_lo + 64 * k, _mm512_mullo_epi16(c0, lo[0]));
        _mm512_store_si512(t_lo + 64 * (8 + k), _mm512_mullo_epi16(c1, lo[1]));
        _mm512_store_si512(t_hi + 64 * k, _mm512_mullo_epi16(c0, hi[0]));
        _mm512_store_si512(t_hi + 64 * (8 + k), _mm512_mullo_epi16(c1, hi[1]));
      }
    }
    _mm512_store_ps(out + 8192, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(cb + kQ4KX16D))));
    _mm512_store_ps(out + 8256,
                    _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(cb + kQ4KX16Dmin))));
    for (int i = 0; i < 4; ++i) {
      _mm512_store_si512(
          out + 8320 + 64 * i,
          _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(cb + kQ4KX16Mins + i * 32))));
    }
  }

  static EDGELLM_ALWAYS_INLINE void pack(const uint8_t* x, size_t x_row_bytes, int m, int64_t nb, uint8_t* xa) {
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* out = xa + b * kPackedBytes;
      auto* dx = reinterpret_cast<float*>(out + 4096);
      uint8_t* sums = out + 4096 + 64;
      for (int t = 0; t < kTileTokens; ++t) {
        if (t < m) {
          const BlockQ8_KS& xb = reinterpret_cast<const BlockQ8_KS*>(x + static_cast<size_t>(t) * x_row_bytes)[b];
          for (int i = 0; i < 4; ++i) {
            _mm512_store_si512(out + 256 * t + 64 * i, _mm512_loadu_si512(xb.qs + 64 * i));
          }
          dx[t] = xb.d;
          std::memcpy(sums + 16 * t, xb.sums, 16);
        } else {
          for (int i = 0; i < 4; ++i) _mm512_store_si512(out + 256 * t + 64 * i, _mm512_setzero_si512());
          dx[t] = 0.0f;
          std::memset(sums + 16 * t, 0, 16);
        }
      }
    }
  }

  // The F32 end of super-block b for one token tile: acc[t] += d_w d_x tot - dmin d_x m (the
  // AVX-512 kernel's operations), from its C_lo / C_hi sums and its packed column a.
  static EDGELLM_ALWAYS_INLINE void finish(const uint8_t* d, const uint8_t* a, const int32_t* lo, const int32_t* hi,
                                           __m512* acc) {
    const __m512 dw = _mm512_load_ps(d + 8192), dmin = _mm512_load_ps(d + 8256);
    __m512i mins[4];
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) mins[i] = _mm512_load_si512(d + 8320 + 64 * i);
    const auto* dx = reinterpret_cast<const float*>(a + 4096);
    const uint8_t* sums = a + 4096 + 64;  // per token 8 int16: 4 pairs
#pragma GCC unroll 16
    for (int t = 0; t < kTileTokens; ++t) {
      const __m512i tot =
          _mm512_add_epi32(_mm512_load_si512(lo + 16 * t), _mm512_slli_epi32(_mm512_load_si512(hi + 16 * t), 3));
      __m512i mm = _mm512_setzero_si512();
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) {
        int32_t pair;
        std::memcpy(&pair, sums + 16 * t + 4 * i, 4);
        mm = _mm512_dpwssd_epi32(mm, mins[i], _mm512_set1_epi32(pair));
      }
      const __m512 x = _mm512_set1_ps(dx[t]);
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(tot), _mm512_mul_ps(dw, x), acc[t]);
      acc[t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(mm), _mm512_mul_ps(dmin, x), acc[t]);
    }
  }

};

// ---------------------------------------------------------------- Q6_K_X16
// The AVX-512 kernel sums sc_j x (sum of (q - 32) x over sub-block j) per 16-element sub-block in
// int32, then one F32 end per super-block. Here each weight's product P = (q - 32) sc_j (|P| <=
// 32 x 128 = 4096, an int16) goes into the weights as its two bytes: P = P_lo + 256 P_hi with
// P_lo the low byte (unsigned, 0..255) and P_hi the high byte (signed, -16..16). Two B tiles per
// 64 elements: tdpbsud into C_lo, tdpbssd into C_hi, and tot = C_lo + 256 C_hi is the AVX-512
// kernel's integer (|C_lo| <= 255 x 128 x 256 and |tot| <= 4096 x 128 x 256: no overflow).
// (Stop 34 split q and sc into 4-bit digits instead: four B tiles and three C tiles per token
// tile, too many tile registers for two token tiles; 222-282 G MAC/s, one core.)
// Decoded column (kDecodedBytes): B_lo[4][16][64], B_hi[4][16][64] (tile q row k: elements
// 64q + 4k .. 64q + 4k + 3 of the 16 rows), d[16] F32. Packed tokens: qs[16][256], d_x[16] F32.
constexpr int64_t kQ6DecodedBytes = 2 * 4096 + 64;
constexpr int64_t kQ6PackedBytes = 4096 + 64;
constexpr int64_t kQ6ColumnBytes = 2048 + 1024 + 256;  // repack.h: ql, qh, scales per column

struct Q6K : DigitTiles<Q6K, true> {
  static constexpr int64_t kBlockElems = kQK_K;
  static constexpr int64_t kDecodedBytes = kQ6DecodedBytes, kPackedBytes = kQ6PackedBytes;

  static void configure() { configure_k_tiles(); }

  static EDGELLM_ALWAYS_INLINE void decode(const uint8_t* group, int64_t nb, int64_t b, uint8_t* out) {
    const uint8_t* col = group + b * kQ6ColumnBytes;
    const __m512i m4 = _mm512_set1_epi8(0x0F), m3 = _mm512_set1_epi8(0x03), off = _mm512_set1_epi8(32);
    const __m512i low16 = _mm512_set1_epi32(0x0000FFFF), low8 = _mm512_set1_epi16(0x00FF);
    const __m512i high8 = _mm512_set1_epi16(static_cast<int16_t>(0xFF00));
    for (int q = 0; q < 4; ++q) {
      uint8_t* t = out + q * 1024;
      for (int jj = 0; jj < 4; ++jj) {
        const int j = 4 * q + jj, c = j / 2, half = j % 2;
        // sub-block j's signed scale of each row (dword), in both 16-bit halves
        const __m512i sc = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(col + 3072 + j * 16)));
        const __m512i sc16 = _mm512_or_si512(_mm512_and_si512(sc, low16), _mm512_slli_epi32(sc, 16));
        const __m512i qh = _mm512_loadu_si512(col + 2048 + j * 64);
        for (int s4 = 0; s4 < 4; ++s4) {
          const __m512i v = _mm512_loadu_si512(col + (4 * c + s4) * 64);
          const __m512i lo = _mm512_and_si512(half ? _mm512_srli_epi16(v, 4) : v, m4);
          const __m512i h = _mm512_and_si512(_mm512_srli_epi16(qh, 2 * s4), m3);  // 0..3: no carry below
          const __m512i w = _mm512_sub_epi8(_mm512_or_si512(lo, _mm512_slli_epi16(h, 4)), off);  // q - 32
          // P of the even and the odd bytes as int16 (sign-extended bytes x the row's scale)
          const __m512i pe = _mm512_mullo_epi16(_mm512_srai_epi16(_mm512_slli_epi16(w, 8), 8), sc16);
          const __m512i po = _mm512_mullo_epi16(_mm512_srai_epi16(w, 8), sc16);
          const int row = 4 * jj + s4;
          _mm512_store_si512(t + 64 * row, _mm512_or_si512(_mm512_and_si512(pe, low8), _mm512_slli_epi16(po, 8)));
          _mm512_store_si512(t + 4096 + 64 * row,
                             _mm512_or_si512(_mm512_srli_epi16(pe, 8), _mm512_and_si512(po, high8)));
        }
      }
    }
    const auto* dd = reinterpret_cast<const uint16_t*>(group + nb * kQ6ColumnBytes) + b * kPackRows;
    _mm512_store_ps(out + 8192, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(dd))));
  }

  static EDGELLM_ALWAYS_INLINE void pack(const uint8_t* x, size_t x_row_bytes, int m, int64_t nb, uint8_t* xa) {
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* out = xa + b * kPackedBytes;
      auto* dx = reinterpret_cast<float*>(out + 4096);
      for (int t = 0; t < kTileTokens; ++t) {
        if (t < m) {
          const BlockQ8_K& xb = reinterpret_cast<const BlockQ8_K*>(x + static_cast<size_t>(t) * x_row_bytes)[b];
          for (int i = 0; i < 4; ++i) _mm512_store_si512(out + 256 * t + 64 * i, _mm512_loadu_si512(xb.qs + 64 * i));
          dx[t] = xb.d;
        } else {
          for (int i = 0; i < 4; ++i) _mm512_store_si512(out + 256 * t + 64 * i, _mm512_setzero_si512());
          dx[t] = 0.0f;
        }
      }
    }
  }

  // acc[t] += float(C_lo + 256 C_hi) x (d_w d_x): the AVX-512 kernel's F32 end.
  static EDGELLM_ALWAYS_INLINE void finish(const uint8_t* d, const uint8_t* a, const int32_t* lo, const int32_t* hi,
                                           __m512* acc) {
    const __m512 dw = _mm512_load_ps(d + 8192);
    const auto* dx = reinterpret_cast<const float*>(a + 4096);
#pragma GCC unroll 16
    for (int t = 0; t < kTileTokens; ++t) {
      const __m512i tot =
          _mm512_add_epi32(_mm512_load_si512(lo + 16 * t), _mm512_slli_epi32(_mm512_load_si512(hi + 16 * t), 8));
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(tot), _mm512_mul_ps(dw, _mm512_set1_ps(dx[t])), acc[t]);
    }
  }
};

}  // namespace

void matmul_q4_k_x16(EDGELLM_MATMUL_PARAMS) {
  matmul<KQuant<false>>(EDGELLM_MATMUL_ARGS, avx512::matmul_q4_k_x16);
}

void matmul_q5_k_x16(EDGELLM_MATMUL_PARAMS) {
  matmul<KQuant<true>>(EDGELLM_MATMUL_ARGS, avx512::matmul_q5_k_x16);
}

void matmul_q6_k_x16(EDGELLM_MATMUL_PARAMS) {
  matmul<Q6K>(EDGELLM_MATMUL_ARGS, avx512::matmul_q6_k_x16);
}

// The tiled copies of Q8_K_S activations (Q4_K and Q5_K pack the same way) and of Q8_K (Q6_K).
size_t tiled_bytes_q8_ks(int64_t n, int64_t n_tokens) { return tiled_bytes<KQuant<false>>(n, n_tokens); }
size_t tiled_bytes_q8_k(int64_t n, int64_t n_tokens) { return tiled_bytes<Q6K>(n, n_tokens); }

void tile_q8_ks(EDGELLM_TILE_PARAMS) { tile_activations<KQuant<false>>(EDGELLM_TILE_ARGS); }
void tile_q8_k(EDGELLM_TILE_PARAMS) { tile_activations<Q6K>(EDGELLM_TILE_ARGS); }

void matmul_q4_k_x16_tiled(EDGELLM_TILED_MATMUL_PARAMS) {
  matmul_pretiled<KQuant<false>>(EDGELLM_MATMUL_ARGS, xt, avx512::matmul_q4_k_x16);
}

void matmul_q5_k_x16_tiled(EDGELLM_TILED_MATMUL_PARAMS) {
  matmul_pretiled<KQuant<true>>(EDGELLM_MATMUL_ARGS, xt, avx512::matmul_q5_k_x16);
}

void matmul_q6_k_x16_tiled(EDGELLM_TILED_MATMUL_PARAMS) {
  matmul_pretiled<Q6K>(EDGELLM_MATMUL_ARGS, xt, avx512::matmul_q6_k_x16);
}

}  // namespace edgellm::kernels::amx
