// Load-time repacking of Q4_0 / Q5_0 / Q8_0 / Q4_K / Q5_K / Q6_K weights into 16-row interleaved groups.
//
// Why: in the file layout one row's blocks are contiguous, so an int8 dot product reduces 64
// products into 16 lanes that all belong to the same (row, token) pair, and every block needs a
// horizontal convert-scale-accumulate per (row, token). Interleaving 16 rows puts row r of the
// group in lane r instead: one vpdpbusd (or sdot) with the token's 4 activation bytes broadcast
// advances all 16 rows by 4 elements, a block of 32 needs 8 of them, and the float work is one
// convert + one FMA per block for 16 rows. Prefill does ~4x fewer instructions per MAC and decode
// (a matrix-vector product) stops being instruction-bound.
//
// Layout of one group of 16 rows (rows 16g .. 16g+15) with nb = n_in / 32 blocks per row; the
// group starts at 16 * g * row_bytes (row_bytes of the source type, so a packed tensor has
// exactly the size of the original and row ranges that are multiples of 16 map to byte ranges;
// Q4_K_X16 below is the exception):
//
//   Q4_0_X16: codes[nb][4][16][4] then scales[nb][16]                (288 bytes per block column)
//     codes[b][j][r][i] = qs byte 4j+i of block b of row r: its low nibble is element 4j+i,
//     its high nibble element 16+4j+i (the ggml Q4_0 order); values 0..15, offset 8.
//   Q8_0_X16: codes[nb][8][16][4] then scales[nb][16]                (544 bytes per block column)
//     codes[b][j][r][i] = qs[4j+i] of block b of row r, plus 128 as an unsigned byte.
//   scales[b][r] = the F16 scale d of block b of row r, unchanged.
//   Q5_0_X16: blocks[nb] of {codes[4][16][4], high[16][4]} then scales[nb][16]
//                                                                    (352 bytes per block column)
//     codes as Q4_0_X16 (the low 4 bits of the 5-bit values); high[r][i] bit j = the fifth bit
//     of element 4j+i, so code vector j (elements 4j .. 4j+3, j < 8, as in Q4_0_X16 where the
//     high-nibble vectors are j = 4..7) takes bit j of every byte; values 0..31, offset 16.
//
//   Q4_K_X16 (256-element super-blocks, nb = n_in / 256): columns[nb] of 2368 bytes, each
//     codes[4][8][16][4]   at 0:    codes[g][k][r][i] = qs byte 32g+4k+i of row r's super-block:
//                                   low nibble = element 64g+4k+i (sub-block 2g), high nibble =
//                                   element 64g+32+4k+i (sub-block 2g+1)
//     scales[8][16]        at 2048: the 6-bit sub-block scale j of row r, unpacked to a byte
//     mins[4][16][2]       at 2176: (min 2i, min 2i+1) of row r, unpacked: int16 pairs after widening
//     d[16], dmin[16]      at 2304, 2336: F16, unchanged
//   (kQ4KX16* below). A column's side data follows its own codes, so decode reads one stream
//   and prefetches it like the codes. The layout before (codes[nb] first, then the side arrays
//   of all columns) needed the side lines prefetched as separate streams; one core, 2048 x 4096,
//   alternating series: AVX2 +3..7%, AVX-512 +0.3..2.9% with this one (TinyLlama Q4_K_M decode
//   unchanged, 36.7 t/s both). 148 bytes per row per super-block (the
//   file's 144 plus 4 for the unpacked scales), so a Q4_K_X16 tensor is 2.8% larger than its
//   file copy; group g starts at 16 g row_bytes of the packed type.
//
//
//   Q5_K_X16 (256-element super-blocks): columns[nb] of 2880 bytes, each a Q4_K_X16 column (the
//     low 4 bits of the 5-bit values, scales, mins, d, dmin at the same offsets) followed by
//     high[8][16][4]       at 2368: high[k][r][i] = qh byte 4k+i of row r's super-block, whose bit j
//                                   is the fifth bit of element 32j+4k+i (sub-block j): so the
//                                   code vector (g, k) of sub-block j = 2g + half takes bit j of
//                                   high vector k, lane for lane. Values 0..31.
//   180 bytes per row per super-block (the file's 176 plus 4).
//
//   Q6_K_X16 (256-element super-blocks), 3360 bytes per super-block column (= 16 x 210, the
//   file's size):
//     blocks[nb] of {ql[8][4][16][4], qh[16][16][4], scales[16][16]}   (3328 bytes each)
//       ql[c][t][r][i]: low nibble = low 4 bits of element 32c+4t+i (sub-block 2c), high
//                       nibble = low 4 bits of element 32c+16+4t+i (sub-block 2c+1)
//       qh[j][r][i]:    bits 2s, 2s+1 = the high 2 bits of element 16j+4s+i (sub-block j)
//       scales[j][r]:   the int8 scale of sub-block j of row r
//     then d[nb][16] F16. Values 0..63, offset 32.
//
// With n_in a multiple of 64 every 64-byte vector of codes is 64-byte aligned when the tensor is.
// Activations are BlockQ8_0S rows (blocks.h): the Q8_0 codes and scale plus the code sum, which
// removes the weights' offset: sum (c - off) x = sum c x - off * sum x. Q4_K_X16 takes
// BlockQ8_KS (sums per 32 elements, for the mins), as does Q5_K_X16; Q6_K_X16 plain Q8_K (bsums per 16).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "kernels/tensor_type.h"

namespace edgellm::kernels {

inline constexpr int64_t kPackRows = 16;

// The revision of the X16 layouts above. Pack files (model/pack_file.h) store repacked matrices
// and record this number: bump it whenever any layout here changes, so files written by an older
// build are refused instead of being read with the wrong layout (the loader's spot check, which
// repacks each tensor's first group and compares, catches a forgotten bump).
// 2: Q5_K matrices are packed too (Q5_K_X16), so a version-1 file of a Q5_K model lacks them and
// is remade rather than leaving them in the slower file layout.
inline constexpr uint32_t kPackedLayoutVersion = 2;

// Q4_K_X16 super-block column: its size and where its parts start (layout above).
inline constexpr int64_t kQ4KX16ColumnBytes = 2368;
inline constexpr int64_t kQ4KX16Scales = 2048;
inline constexpr int64_t kQ4KX16Mins = 2176;
inline constexpr int64_t kQ4KX16D = 2304;
inline constexpr int64_t kQ4KX16Dmin = 2336;
// Q5_K_X16 super-block column: a Q4_K_X16 column, then the fifth bits.
inline constexpr int64_t kQ5KX16ColumnBytes = 2880;
inline constexpr int64_t kQ5KX16High = 2368;

// The interleaved layout of a file type, if there is one (Q4_0 -> Q4_0_X16, Q5_0 -> Q5_0_X16,
// Q8_0 -> Q8_0_X16, Q4_K -> Q4_K_X16, Q5_K -> Q5_K_X16, Q6_K -> Q6_K_X16).
std::optional<TensorType> packed_type_for(TensorType file_type);
bool is_packed_type(TensorType type);

// True when the active ISA has a SIMD kernel for `packed` (otherwise the scalar reference runs
// it, which is correct but slower than the file layout's SIMD kernel: do not repack then).
bool has_fast_packed_kernel(TensorType packed);

// Whether a [n_out, n_in] matrix of `file_type` can be repacked: a packed type exists, n_out is
// a multiple of 16 and n_in of the block size.
bool can_repack(TensorType file_type, int64_t n_in, int64_t n_out);

// Repacks rows [r0, r1) (multiples of 16) of a [n_out, n_in] matrix of `file_type` from `src`
// (the whole tensor in file layout) into `dst` (the whole packed tensor: n_out rows of
// tensor_row_bytes(packed type, n_in)).
// Disjoint row ranges may be repacked concurrently.
void repack_rows(TensorType file_type, const void* src, void* dst, int64_t n_in, int64_t r0, int64_t r1);

// Dequantizes row r of a packed [n_out, n_in] matrix (tests, debugging; not a hot path).
void dequantize_packed_row(TensorType packed, const void* tensor, int64_t n_in, int64_t r, float* dst);

}  // namespace edgellm::kernels
