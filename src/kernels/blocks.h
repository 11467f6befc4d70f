// GGUF / ggml quantization block layouts, bit for bit. Every struct is packed to the exact size
// ggml uses so that a weight tensor in a mapped file is an array of these blocks.
//
// Element order inside a block (what dequantization must reproduce):
//  Q4_0/Q4_1: element j (j < 16) is the low nibble of qs[j], element j+16 the high nibble.
//  Q5_0/Q5_1: as Q4, plus the fifth bit of element j in bit j of the 32-bit little-endian qh.
//  Q8_0:      x = d * qs[j].
//  Q4_K:      256 = 8 sub-blocks of 32; 6-bit scale and min per sub-block packed in scales[12];
//             qs holds 4 groups of 32 bytes, low nibbles = sub-block 2g, high = sub-block 2g+1.
//  Q5_K:      as Q4_K plus qh[32]: bit (2g) / (2g+1) of qh[l] is the fifth bit for those sub-blocks.
//  Q6_K:      16 sub-blocks of 16 with int8 scales; ql low 4 bits, qh high 2 bits, value - 32.
//  Q8_K:      activation blocks for K-quant dots: float scale, 256 int8, 16 partial sums.
#pragma once

#include <cstdint>

namespace edgellm {

inline constexpr int kQK4_0 = 32;
inline constexpr int kQK4_1 = 32;
inline constexpr int kQK5_0 = 32;
inline constexpr int kQK5_1 = 32;
inline constexpr int kQK8_0 = 32;
inline constexpr int kQK8_1 = 32;
inline constexpr int kQK_K = 256;
inline constexpr int kKScaleBytes = 12;  // packed 6-bit scales/mins of Q4_K / Q5_K

struct BlockQ4_0 {
  uint16_t d;  // F16 scale
  uint8_t qs[kQK4_0 / 2];
};
static_assert(sizeof(BlockQ4_0) == 18);

struct BlockQ4_1 {
  uint16_t d;  // F16 scale
  uint16_t m;  // F16 min
  uint8_t qs[kQK4_1 / 2];
};
static_assert(sizeof(BlockQ4_1) == 20);

struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQK5_0 / 2];
};
static_assert(sizeof(BlockQ5_0) == 22);

struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK5_1 / 2];
};
static_assert(sizeof(BlockQ5_1) == 24);

struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK8_0];
};
static_assert(sizeof(BlockQ8_0) == 34);

// Activation block for the repacked Q4_0_X16 / Q8_0_X16 weights (kernels/repack.h): the Q8_0
// codes and scale of the same input (d is the F16-rounded Q8_0 scale, kept as float so the kernel
// need not convert it), plus the integer sum of the codes that cancels the weights' code offset.
struct BlockQ8_0S {
  float d;
  int32_t sum;
  int8_t qs[kQK8_0];
};
static_assert(sizeof(BlockQ8_0S) == 40);

struct BlockQ8_1 {
  uint16_t d;  // F16 scale
  uint16_t s;  // F16 of d * sum(qs)
  int8_t qs[kQK8_1];
};
static_assert(sizeof(BlockQ8_1) == 36);

struct BlockQ4_K {
  uint16_t d;     // F16 super-block scale for the sub-block scales
  uint16_t dmin;  // F16 super-block scale for the sub-block mins
  uint8_t scales[kKScaleBytes];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockQ4_K) == 144);

struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockQ5_K) == 176);

struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;
};
static_assert(sizeof(BlockQ6_K) == 210);

struct BlockQ8_K {
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];
};
static_assert(sizeof(BlockQ8_K) == 292);

// Activation block for repacked Q4_K_X16 weights: Q8_K's scale and codes, plus the code sum of
// each 32-element sub-block (in int16 pairs, the operand layout of vpdpwssd / sdot-free mins).
struct BlockQ8_KS {
  float d;
  int16_t sums[kQK_K / 32];
  int8_t qs[kQK_K];
};
static_assert(sizeof(BlockQ8_KS) == 276);

// Bytes per row per 256 elements of the 16-row interleaved Q4_K layout (kernels/repack.h):
// 16 rows share 2048 bytes of codes, 128 of 6-bit scales, 128 of 6-bit mins and 64 of F16 d/dmin.
inline constexpr size_t kQ4KX16RowBlockBytes = (2048 + 128 + 128 + 64) / 16;
static_assert(kQ4KX16RowBlockBytes == 148);
// Q5_K: the same plus 512 bytes of fifth bits per 16 rows.
inline constexpr size_t kQ5KX16RowBlockBytes = (2048 + 128 + 128 + 64 + 512) / 16;
static_assert(kQ5KX16RowBlockBytes == 180);

}  // namespace edgellm
