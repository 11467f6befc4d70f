// Dequantization of hand-built blocks: each test writes specific bytes into one block and checks
// the exact floats worked out by hand from the format definition (arithmetic in the comments).
// Every ISA's table is checked (dequantize may be specialised per ISA).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/error.h"
#include "kernels/blocks.h"
#include "kernels/kernels.h"

namespace edgellm::kernels {
namespace {

// F16 bit patterns used below: 0x3C00 = 1.0, 0x3800 = 0.5, 0x3400 = 0.25, 0x4000 = 2.0,
// 0xC000 = -2.0.
constexpr uint16_t kHalfOne = 0x3C00, kHalfHalf = 0x3800, kHalfQuarter = 0x3400, kHalfTwo = 0x4000,
                   kHalfMinusTwo = 0xC000;

template <class Block>
std::vector<float> dequant_all_isas(TensorType type, const Block& b, int64_t n) {
  std::vector<float> first;
  const Isa saved = active_isa();
  for (Isa isa : supported_isas()) {
    set_active_isa(isa);
    std::vector<float> out(static_cast<size_t>(n), -12345.0f);
    dequantize_row(type, &b, out.data(), n);
    if (first.empty()) {
      first = out;
    } else {
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(out[i], first[i]) << isa_name(isa) << " element " << i;
    }
  }
  set_active_isa(saved);
  return first;
}

void expect_equal(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << "element " << i;
}

TEST(Dequantize, Q4_0) {
  BlockQ4_0 b;
  b.d = kHalfHalf;                                   // d = 0.5
  std::memset(b.qs, 0x88, sizeof b.qs);              // code 8 -> (8 - 8) * 0.5 = 0
  b.qs[0] = 0x1F;                                    // el 0: (15-8)*0.5 = 3.5; el 16: (1-8)*0.5 = -3.5
  b.qs[1] = 0x80;                                    // el 1: (0-8)*0.5 = -4;   el 17: (8-8)*0.5 = 0
  std::vector<float> want(32, 0.0f);
  want[0] = 3.5f;
  want[16] = -3.5f;
  want[1] = -4.0f;
  expect_equal(dequant_all_isas(TensorType::Q4_0, b, 32), want);
}

TEST(Dequantize, Q4_1) {
  BlockQ4_1 b;
  b.d = kHalfOne;        // d = 1
  b.m = kHalfMinusTwo;   // m = -2
  std::memset(b.qs, 0x22, sizeof b.qs);  // code 2 -> 2*1 - 2 = 0
  b.qs[0] = 0x3A;        // el 0: 10 - 2 = 8;  el 16: 3 - 2 = 1
  b.qs[15] = 0xF0;       // el 15: 0 - 2 = -2; el 31: 15 - 2 = 13
  std::vector<float> want(32, 0.0f);
  want[0] = 8;
  want[16] = 1;
  want[15] = -2;
  want[31] = 13;
  expect_equal(dequant_all_isas(TensorType::Q4_1, b, 32), want);
}

TEST(Dequantize, Q5_0) {
  BlockQ5_0 b;
  b.d = kHalfTwo;  // d = 2
  std::memset(b.qs, 0, sizeof b.qs);  // code 0 without fifth bit -> (0 - 16) * 2 = -32
  // qh little endian: bit 0 (el 0) and bit 19 (el 19) set -> bytes {0x01, 0x00, 0x08, 0x00}.
  b.qh[0] = 0x01;
  b.qh[1] = 0x00;
  b.qh[2] = 0x08;
  b.qh[3] = 0x00;
  b.qs[0] = 0x21;  // el 0: (1 | 16) - 16 = 1 -> 2;    el 16: 2 - 16 = -14 -> -28
  b.qs[3] = 0xF0;  // el 3: 0 - 16 = -16 -> -32;       el 19: (15 | 16) - 16 = 15 -> 30
  std::vector<float> want(32, -32.0f);
  want[0] = 2;
  want[16] = -28;
  want[3] = -32;
  want[19] = 30;
  expect_equal(dequant_all_isas(TensorType::Q5_0, b, 32), want);
}

TEST(Dequantize, Q5_1) {
  BlockQ5_1 b;
  b.d = kHalfHalf;  // d = 0.5
  b.m = kHalfOne;   // m = 1
  std::memset(b.qs, 0, sizeof b.qs);  // code 0 -> 0 * 0.5 + 1 = 1
  // Bits 1 and 17 of qh -> bytes {0x02, 0x00, 0x02, 0x00}.
  b.qh[0] = 0x02;
  b.qh[1] = 0x00;
  b.qh[2] = 0x02;
  b.qh[3] = 0x00;
  b.qs[1] = 0x7F;  // el 1: (15 | 16) = 31 -> 15.5 + 1 = 16.5;  el 17: (7 | 16) = 23 -> 11.5 + 1 = 12.5
  std::vector<float> want(32, 1.0f);
  want[1] = 16.5f;
  want[17] = 12.5f;
  expect_equal(dequant_all_isas(TensorType::Q5_1, b, 32), want);
}

TEST(Dequantize, Q8_0) {
  BlockQ8_0 b;
  b.d = kHalfQuarter;  // d = 0.25
  std::memset(b.qs, 0, sizeof b.qs);
  b.qs[0] = -128;  // -32
  b.qs[5] = 127;   // 31.75
  b.qs[31] = -3;   // -0.75
  std::vector<float> want(32, 0.0f);
  want[0] = -32;
  want[5] = 31.75f;
  want[31] = -0.75f;
  expect_equal(dequant_all_isas(TensorType::Q8_0, b, 32), want);
}

TEST(Dequantize, Q8_1) {
  BlockQ8_1 b;
  b.d = kHalfOne;
  b.s = kHalfTwo;  // not used by dequantization
  std::memset(b.qs, 0, sizeof b.qs);
  b.qs[2] = 5;
  std::vector<float> want(32, 0.0f);
  want[2] = 5;
  expect_equal(dequant_all_isas(TensorType::Q8_1, b, 32), want);
}

TEST(Dequantize, Q4_K) {
  BlockQ4_K b;
  std::memset(&b, 0, sizeof b);
  b.d = kHalfOne;      // d = 1
  b.dmin = kHalfHalf;  // dmin = 0.5
  // Sub-block 0: scale 3 (scales[0] low 6 bits), min 2 (scales[4] low 6 bits).
  b.scales[0] = 3;
  b.scales[4] = 2;
  // Sub-block 1: scale 1 (scales[1] low 6 bits), min 0.
  // Sub-block 5: scale 37 = 0b10'0101 -> low nibble 5 in scales[9], top 2 bits (2) in scales[1] bits 6-7;
  //              min 20 = 0b01'0100 -> low nibble 4 in scales[9] high nibble, top bits (1) in scales[5] bits 6-7.
  b.scales[1] = static_cast<uint8_t>(1 | (2 << 6));
  b.scales[5] = static_cast<uint8_t>(0 | (1 << 6));
  b.scales[9] = 0x45;
  // Group 0 = qs[0..31]: low nibbles sub-block 0, high nibbles sub-block 1.
  b.qs[0] = 0x07;  // el 0 (sub 0): 1*3*7 - 0.5*2 = 20; el 32 (sub 1): 1*1*0 - 0.5*0 = 0
  b.qs[1] = 0x30;  // el 1 (sub 0): 0*3 - 1 = -1;       el 33 (sub 1): 1*1*3 - 0 = 3
  // Group 2 = qs[64..95]: low nibbles sub-block 4 (scale 0, min 0), high nibbles sub-block 5.
  b.qs[64] = 0xA0;  // el 160 (sub 5): 1*37*10 - 0.5*20 = 360
  std::vector<float> want(256, 0.0f);
  for (int i = 0; i < 32; ++i) want[i] = -1.0f;         // sub 0: q = 0 -> -dmin*2 = -1
  want[0] = 20;
  want[33] = 3;
  for (int i = 160; i < 192; ++i) want[i] = -10.0f;     // sub 5: q = 0 -> -0.5*20
  want[160] = 360;
  expect_equal(dequant_all_isas(TensorType::Q4_K, b, 256), want);
}

TEST(Dequantize, Q5_K) {
  BlockQ5_K b;
  std::memset(&b, 0, sizeof b);
  b.d = kHalfOne;      // d = 1
  b.dmin = kHalfHalf;  // dmin = 0.5
  b.scales[0] = 3;     // sub 0 scale 3
  b.scales[4] = 2;     // sub 0 min 2   -> offset -1
  b.scales[1] = 2;     // sub 1 scale 2
  b.scales[5] = 4;     // sub 1 min 4   -> offset -2
  b.qs[0] = 0x07;      // el 0 (sub 0) low nibble 7, qh[0] bit 0 set: 3*(7+16) - 1 = 68
  b.qh[0] = 0x01;
  b.qs[3] = 0x50;      // el 35 (sub 1) high nibble 5, qh[3] bit 1 set: 2*(5+16) - 2 = 40
  b.qh[3] = 0x02;      // el 3 (sub 0): low nibble 0, bit 0 clear: 0 - 1 = -1
  std::vector<float> want(256, 0.0f);
  for (int i = 0; i < 32; ++i) want[i] = -1.0f;
  for (int i = 32; i < 64; ++i) want[i] = -2.0f;
  want[0] = 68;
  want[35] = 40;
  expect_equal(dequant_all_isas(TensorType::Q5_K, b, 256), want);
}

TEST(Dequantize, Q6_K) {
  BlockQ6_K b;
  std::memset(&b, 0, sizeof b);
  b.d = kHalfOne;     // d = 1
  b.scales[0] = 2;    // elements 0..15
  b.scales[2] = -3;   // elements 32..47
  b.scales[8] = 5;    // elements 128..143 (first group of the second half)
  // el 0: ql[0] low nibble 5, qh[0] bits 0-1 = 2 -> q = 5 | 32 = 37 - 32 = 5 -> 2*5 = 10
  b.ql[0] = 0x05;     // high nibble 0 is el 64 (scale[4] = 0) -> 0
  b.qh[0] = 0x02;     // bits 2-3 = 0 -> el 32's top bits are 0
  // el 32: ql[32] low nibble 1, top bits 0 -> 1 - 32 = -31 -> -3 * -31 = 93
  b.ql[32] = 0x01;
  // el 128: second half l = 0: ql[64] low nibble 15, qh[32] bits 0-1 = 3 -> 63 - 32 = 31 -> 5*31 = 155
  b.ql[64] = 0x0F;
  b.qh[32] = 0x03;
  std::vector<float> want(256, 0.0f);
  for (int i = 1; i < 16; ++i) want[i] = -64.0f;       // q = 0 -> -32 * 2
  for (int i = 33; i < 48; ++i) want[i] = 96.0f;       // -32 * -3
  for (int i = 129; i < 144; ++i) want[i] = -160.0f;   // -32 * 5
  want[0] = 10;
  want[32] = 93;
  want[128] = 155;
  expect_equal(dequant_all_isas(TensorType::Q6_K, b, 256), want);
}

TEST(Dequantize, Q8_K) {
  BlockQ8_K b;
  std::memset(&b, 0, sizeof b);
  b.d = 0.5f;
  b.qs[3] = -7;    // -3.5
  b.qs[255] = 127; // 63.5
  std::vector<float> want(256, 0.0f);
  want[3] = -3.5f;
  want[255] = 63.5f;
  expect_equal(dequant_all_isas(TensorType::Q8_K, b, 256), want);
}

TEST(Dequantize, FloatTypes) {
  // F16 0xC500 = -5.0 (sign, exponent 17 -> 2^2, mantissa 0x100 -> 1.25); BF16 0x4049 = 3.140625.
  const uint16_t h[2] = {0xC500, 0x0001};  // 0x0001 = smallest subnormal half = 2^-24
  std::vector<float> out(2);
  dequantize_row(TensorType::F16, h, out.data(), 2);
  EXPECT_EQ(out[0], -5.0f);
  EXPECT_EQ(out[1], 5.9604644775390625e-08f);
  const uint16_t bf[1] = {0x4049};
  dequantize_row(TensorType::BF16, bf, out.data(), 1);
  EXPECT_EQ(out[0], 3.140625f);
}

TEST(Dequantize, RejectsPartialBlocks) {
  BlockQ4_0 b{};
  float out[32];
  EXPECT_THROW(dequantize_row(TensorType::Q4_0, &b, out, 31), Error);
}

}  // namespace
}  // namespace edgellm::kernels
