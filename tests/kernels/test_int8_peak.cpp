// The int8 peak probe kernels (kernels/int8_peak.h) compute exactly the dot products their MAC
// count claims: every int32 lane of every accumulator equals a scalar computation from the
// instruction's definition, for several iteration counts (0: the seeds only; large: wrapping
// modulo 2^32 as the hardware does). A kernel the compiler folded, or one that skipped an
// accumulator or a lane, would differ. Each kernel of this CPU is tested (under qemu -cpu max
// in test-arm64: dotprod and i8mm).
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/int8_peak.h"

namespace edgellm::kernels {
namespace {

using Bytes = std::array<uint8_t, kInt8PeakInputBytes>;

// Lane value of one step, from the instruction's definition.
int64_t step_value(const Int8PeakKernel& k, const Bytes& a, const Bytes& b, int lane) {
  int64_t s = 0;
  const auto sa = [&](int i) { return static_cast<int64_t>(static_cast<int8_t>(a[static_cast<size_t>(i)])); };
  const auto sb = [&](int i) { return static_cast<int64_t>(static_cast<int8_t>(b[static_cast<size_t>(i)])); };
  switch (k.semantics) {
    case Int8PeakSemantics::kUnsignedSignedQuad:
      for (int t = 0; t < 4; ++t) s += static_cast<int64_t>(a[static_cast<size_t>(4 * lane + t)]) * sb(4 * lane + t);
      break;
    case Int8PeakSemantics::kSignedQuad:
      for (int t = 0; t < 4; ++t) s += sa(4 * lane + t) * sb(4 * lane + t);
      break;
    case Int8PeakSemantics::kSignedMatrix2x8: {
      // Lane 2i+c of the 2x2 result: row i of a (2 x 8) . row c of b (2 x 8), within each
      // 16-byte segment (one segment: the kernels with matrix semantics are 128-bit).
      const int i = (lane % 4) / 2, c = lane % 2, base = 16 * (lane / 4);
      for (int t = 0; t < 8; ++t) s += sa(base + 8 * i + t) * sb(base + 8 * c + t);
      break;
    }
    case Int8PeakSemantics::kSignedTile16x64: {
      // C[m][n] = sum_k A[m][k] B[k/4][4n + k%4], A[m][k] = a[(k+4m)%64], B[r][c] = b[(c+4r)%64]
      const int m = lane / 16, n = lane % 16;
      for (int k = 0; k < 64; ++k) s += sa((k + 4 * m) % 64) * sb((4 * n + k % 4 + 4 * (k / 4)) % 64);
      break;
    }
  }
  return s;
}

// Inputs inside the range where vpmaddubsw's int16 pair sums cannot saturate (int8_peak.h).
void fill(std::mt19937& rng, Bytes& a, Bytes& b, bool full_range) {
  std::uniform_int_distribution<int> ua(0, full_range ? 255 : 127), ub(full_range ? -128 : -64, full_range ? 127 : 63);
  for (auto& x : a) x = static_cast<uint8_t>(ua(rng));
  for (auto& x : b) x = static_cast<uint8_t>(static_cast<int8_t>(ub(rng)));
}

TEST(Int8Peak, EveryLaneIsTheDotProductTimesIterationsPlusSeed) {
  const std::vector<Int8PeakKernel> kernels = int8_peak_kernels();
  if (kernels.empty()) GTEST_SKIP() << "NOT CHECKED ON THIS HOST: no int8 dot-product ISA on this CPU";
  std::mt19937 rng(7);
  for (const Int8PeakKernel& k : kernels) {
    ASSERT_LE(k.out_lanes(), kInt8PeakMaxOut) << k.name;
    // vpmaddubsw saturates pairs, the VNNI / ARM instructions do not: full-range bytes for those.
    const bool full_range = std::string(k.name) != "avx2";
    for (const int64_t iterations : {int64_t{0}, int64_t{1}, int64_t{3}, int64_t{1000}, int64_t{100000}}) {
      Bytes a, b;
      fill(rng, a, b, full_range);
      std::vector<int32_t> out(kInt8PeakMaxOut, 0x5A5A5A5A);
      k.run(a.data(), b.data(), iterations, out.data());
      const int lanes = k.vector_bytes / 4;
      for (int acc = 0; acc < k.accumulators; ++acc) {
        for (int j = 0; j < lanes; ++j) {
          // Wrapping int32 arithmetic, as the instructions do.
          const uint32_t want = static_cast<uint32_t>(acc) +
                                static_cast<uint32_t>(static_cast<uint64_t>(iterations) *
                                                      static_cast<uint64_t>(step_value(k, a, b, j)));
          ASSERT_EQ(static_cast<uint32_t>(out[static_cast<size_t>(acc * lanes + j)]), want)
              << k.name << " accumulator " << acc << " lane " << j << " after " << iterations << " iterations";
        }
      }
      for (int i = k.out_lanes(); i < kInt8PeakMaxOut; ++i) {
        ASSERT_EQ(out[static_cast<size_t>(i)], 0x5A5A5A5A) << k.name << " wrote past its lanes";
      }
    }
  }
}

// The MAC count the bench multiplies by is the instruction's: one MAC per byte pair for the
// quad dot products, two per byte pair for smmla's 2x8 by 8x2 product, 16 x 16 x 64 for a tile.
TEST(Int8Peak, MacCountsFollowTheInstructions) {
  for (const Int8PeakKernel& k : int8_peak_kernels()) {
    // tdpbssd: 16 x 16 x 64 MACs per 1 KiB C tile.
    const int per_byte = k.semantics == Int8PeakSemantics::kSignedMatrix2x8    ? 2
                         : k.semantics == Int8PeakSemantics::kSignedTile16x64 ? 16
                                                                              : 1;
    EXPECT_EQ(k.macs_per_step, per_byte * k.vector_bytes) << k.name;
    EXPECT_EQ(k.macs_per_iteration(), static_cast<int64_t>(k.accumulators) * k.macs_per_step) << k.name;
  }
}

TEST(Int8Peak, OffersWhatTheCpuHas) {
  std::set<std::string> names;
  for (const auto& k : int8_peak_kernels()) EXPECT_TRUE(names.insert(k.name).second) << k.name;
  const CpuFeatures& f = cpu_features();
#if defined(EDGELLM_ARCH_X86)
  EXPECT_EQ(names.count("amx_int8"), f.has_amx_kernels() ? 1u : 0u);
  EXPECT_EQ(names.count("avx512_vnni"), f.has_avx512_kernels() ? 1u : 0u);
  EXPECT_EQ(names.count("avx2"), f.has_avx2_kernels() ? 1u : 0u);
  EXPECT_EQ(names.count("avx_vnni"), f.has_avx2_kernels() && f.avx_vnni ? 1u : 0u);
#elif defined(EDGELLM_ARCH_ARM64)
  EXPECT_EQ(names.count("dotprod"), f.dotprod && f.fp16 ? 1u : 0u);
  EXPECT_EQ(names.count("i8mm"), f.i8mm && f.dotprod && f.fp16 ? 1u : 0u);
#else
  EXPECT_TRUE(names.empty());
#endif
}

}  // namespace
}  // namespace edgellm::kernels
