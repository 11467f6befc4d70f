// Load-time repacking (kernels/repack.h): the packed layout round-trips to the file layout's
// values exactly, and the packed matmul on every ISA matches a double-precision reference built
// from the dequantized file-layout weights and the Q8_0-quantized activations, as well as the
// file-layout matmul. Shapes: n_in 64 / 96 (odd block count) / 4096, 48 rows, row sub-ranges,
// token counts that exercise the 8-, 4- and 1-token tiles.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include "core/error.h"
#include "kernels/blocks.h"
#include "kernels/kernels.h"
#include "kernels/repack.h"
#include "support/isa_guard.h"

namespace edgellm::kernels {
namespace {

// The integer block sums are exact; what differs from the double reference is F32 rounding of
// the scale products and the accumulation over <= 128 blocks: at most 1.01e-7 of sum |w x|
// measured here over every case and ISA (packed vs file layout: 1.09e-7), so 1e-6 is ~10x.
constexpr double kRefRelTol = 1e-6;

struct Case {
  TensorType file_type;
  int64_t n_in, rows;
};

using test::IsaGuard;

std::vector<float> gaussian(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = g(rng);
  return v;
}

// rows x n Gaussian weights (scale 0.5) quantized to file_type, and the same rows repacked.
struct PackedMatrix {
  TensorType pt;         // the packed type
  size_t rb, packed_rb;  // row bytes of the file and the packed layout
  std::vector<uint8_t> file, packed;
};
PackedMatrix pack_gaussian(TensorType file_type, int64_t rows, int64_t n, uint32_t seed) {
  PackedMatrix m;
  m.pt = *packed_type_for(file_type);
  m.rb = tensor_row_bytes(file_type, n);
  m.packed_rb = tensor_row_bytes(m.pt, n);
  const auto src = gaussian(static_cast<size_t>(rows * n), seed, 0.5f);
  m.file.resize(m.rb * static_cast<size_t>(rows));
  m.packed.resize(m.packed_rb * static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) quantize_row(file_type, src.data() + r * n, m.file.data() + r * m.rb, n);
  repack_rows(file_type, m.file.data(), m.packed.data(), n, 0, rows);
  return m;
}

// Double-precision reference of output (row r, token t): sum_k w[r][k] x[t][k] over n elements,
// and sum |w x|, the scale its F32 rounding error is measured against.
struct RefDot {
  double sum = 0, magnitude = 0;
};
RefDot reference_dot(const std::vector<float>& wf, const std::vector<float>& xf, int64_t n, int64_t r, int64_t t) {
  RefDot d;
  for (int64_t k = 0; k < n; ++k) {
    const double p = static_cast<double>(wf[static_cast<size_t>(r * n + k)]) * xf[static_cast<size_t>(t * n + k)];
    d.sum += p;
    d.magnitude += std::fabs(p);
  }
  return d;
}

TEST(Repack, PackedTypesAreInternal) {
  EXPECT_EQ(packed_type_for(TensorType::Q4_0), TensorType::Q4_0_X16);
  EXPECT_EQ(packed_type_for(TensorType::Q8_0), TensorType::Q8_0_X16);
  EXPECT_EQ(packed_type_for(TensorType::Q4_K), TensorType::Q4_K_X16);
  EXPECT_EQ(packed_type_for(TensorType::Q5_0), TensorType::Q5_0_X16);
  EXPECT_EQ(packed_type_for(TensorType::Q6_K), TensorType::Q6_K_X16);
  EXPECT_EQ(packed_type_for(TensorType::Q5_K), TensorType::Q5_K_X16);
  EXPECT_TRUE(can_repack(TensorType::Q5_K, 256, 16));
  EXPECT_FALSE(packed_type_for(TensorType::Q4_1).has_value());
  // Q5_0_X16 and Q6_K_X16 keep the file's bytes per row.
  EXPECT_EQ(tensor_row_bytes(TensorType::Q6_K_X16, 512), tensor_row_bytes(TensorType::Q6_K, 512));
  EXPECT_EQ(tensor_row_bytes(TensorType::Q5_0_X16, 96), tensor_row_bytes(TensorType::Q5_0, 96));
  EXPECT_FALSE(tensor_type_traits(TensorType::Q6_K_X16).in_files);
  // Q4_K_X16 keeps 4 more bytes per row per super-block (unpacked 6-bit scales).
  EXPECT_EQ(tensor_row_bytes(TensorType::Q4_K_X16, 512), 2 * 148u);
  // Q5_K_X16 too: 180 bytes where the file has 176.
  EXPECT_EQ(tensor_row_bytes(TensorType::Q5_K_X16, 512), 2 * 180u);
  EXPECT_FALSE(tensor_type_traits(TensorType::Q4_0_X16).in_files);
  EXPECT_TRUE(tensor_type_traits(TensorType::Q4_0).in_files);
  EXPECT_TRUE(can_repack(TensorType::Q4_0, 896, 4864));
  EXPECT_FALSE(can_repack(TensorType::Q4_0, 896, 4865));  // not whole 16-row groups
  EXPECT_TRUE(can_repack(TensorType::Q6_K, 256, 16));
}

TEST(Repack, RoundTripsExactly) {
  for (const Case c : {Case{TensorType::Q4_0, 96, 32}, Case{TensorType::Q8_0, 96, 32}, Case{TensorType::Q4_0, 4096, 16},
                       Case{TensorType::Q4_K, 512, 32}, Case{TensorType::Q5_0, 96, 32}, Case{TensorType::Q5_0, 4096, 16},
                       Case{TensorType::Q6_K, 512, 32}, Case{TensorType::Q5_K, 512, 32}, Case{TensorType::Q5_K, 2048, 16}}) {
    const size_t rb = tensor_row_bytes(c.file_type, c.n_in);
    const auto src = gaussian(static_cast<size_t>(c.rows * c.n_in), 7, 1.0f);
    std::vector<uint8_t> file(rb * static_cast<size_t>(c.rows));
    std::vector<uint8_t> packed(tensor_row_bytes(*packed_type_for(c.file_type), c.n_in) * static_cast<size_t>(c.rows));
    for (int64_t r = 0; r < c.rows; ++r) quantize_row(c.file_type, src.data() + r * c.n_in, file.data() + r * rb, c.n_in);
    // Two halves, as two threads would do it.
    repack_rows(c.file_type, file.data(), packed.data(), c.n_in, 0, 16);
    repack_rows(c.file_type, file.data(), packed.data(), c.n_in, 16, c.rows);
    const TensorType pt = *packed_type_for(c.file_type);
    std::vector<float> a(static_cast<size_t>(c.n_in)), b(a.size());
    for (int64_t r = 0; r < c.rows; ++r) {
      dequantize_row(c.file_type, file.data() + r * rb, a.data(), c.n_in);
      dequantize_packed_row(pt, packed.data(), c.n_in, r, b.data());
      for (int64_t i = 0; i < c.n_in; ++i) ASSERT_EQ(a[static_cast<size_t>(i)], b[static_cast<size_t>(i)]) << r << "," << i;
    }
  }
}

TEST(Repack, RejectsBadInput) {
  std::vector<uint8_t> buf(34 * 16 * 2);
  EXPECT_THROW(repack_rows(TensorType::Q4_1, buf.data(), buf.data(), 32, 0, 16), Error);  // no interleaved layout
  EXPECT_THROW(repack_rows(TensorType::Q6_K, buf.data(), buf.data(), 128, 0, 16), Error);  // half a super-block
  EXPECT_THROW(repack_rows(TensorType::Q8_0, buf.data(), buf.data(), 64, 0, 8), Error);   // half a group
  EXPECT_THROW(repack_rows(TensorType::Q8_0, buf.data(), buf.data(), 48, 0, 16), Error);  // not whole blocks
  std::vector<float> out(64);
  EXPECT_THROW(dequantize_row(TensorType::Q8_0_X16, buf.data(), out.data(), 64), Error);
  std::vector<uint8_t> xq(activation_row_bytes(TensorType::Q8_0_X16, 64));
  std::vector<float> y(32);
  EXPECT_THROW(matmul(TensorType::Q8_0_X16, 64, buf.data(), 68, 8, 24, xq.data(), xq.size(), 1, y.data(), 32), Error);
}

TEST(Repack, MatmulMatchesReferenceOnEveryIsa) {
  IsaGuard guard;
  const int64_t token_counts[] = {1, 3, 4, 8, 13, 17, 45};  // 45: AMX prefill (32 and more) where the CPU has it
  for (const Case c :
       {Case{TensorType::Q4_0, 64, 48}, Case{TensorType::Q8_0, 64, 48}, Case{TensorType::Q4_0, 96, 48},
        Case{TensorType::Q8_0, 96, 48}, Case{TensorType::Q4_0, 4096, 32}, Case{TensorType::Q8_0, 4096, 32},
        Case{TensorType::Q4_K, 256, 48}, Case{TensorType::Q4_K, 1536, 32}, Case{TensorType::Q5_0, 64, 48},
        Case{TensorType::Q5_0, 96, 48}, Case{TensorType::Q5_0, 4096, 32}, Case{TensorType::Q6_K, 256, 48},
        Case{TensorType::Q6_K, 1536, 32}, Case{TensorType::Q5_K, 256, 48}, Case{TensorType::Q5_K, 1536, 32},
        // Rows [16, 96): five groups, so decode walks two pairs side by side and
        // one group alone (packed_driver.h: decode_groups).
        Case{TensorType::Q4_0, 64, 96}, Case{TensorType::Q8_0, 64, 96}, Case{TensorType::Q5_0, 64, 96},
        Case{TensorType::Q4_K, 256, 96}, Case{TensorType::Q5_K, 256, 96}, Case{TensorType::Q6_K, 256, 96}}) {
    const PackedMatrix m = pack_gaussian(c.file_type, c.rows, c.n_in, 11);
    const size_t rb = m.rb, packed_rb = m.packed_rb;
    const std::vector<uint8_t>& file = m.file;
    const std::vector<uint8_t>& packed = m.packed;
    const TensorType pt = m.pt;
    std::vector<float> wf(static_cast<size_t>(c.rows * c.n_in));
    for (int64_t r = 0; r < c.rows; ++r) dequantize_row(c.file_type, file.data() + r * rb, wf.data() + r * c.n_in, c.n_in);

    for (const int64_t nt : token_counts) {
      const auto x = gaussian(static_cast<size_t>(nt * c.n_in), static_cast<uint32_t>(100 + nt), 1.0f);
      // Reference activations: the Q8_0 (Q8_K for Q4_K) quantization of x, dequantized (what
      // both kernels multiply).
      const TensorType act = activation_type(c.file_type);
      std::vector<float> xf(x.size());
      std::vector<uint8_t> q8(tensor_row_bytes(act, c.n_in));
      for (int64_t t = 0; t < nt; ++t) {
        quantize_row(act, x.data() + t * c.n_in, q8.data(), c.n_in);
        dequantize_row(act, q8.data(), xf.data() + t * c.n_in, c.n_in);
      }
      for (const Isa isa : supported_isas()) {
        set_active_isa(isa);
        const size_t prb = activation_row_bytes(pt, c.n_in), frb = activation_row_bytes(c.file_type, c.n_in);
        std::vector<uint8_t> xp(prb * static_cast<size_t>(nt)), xfile(frb * static_cast<size_t>(nt));
        for (int64_t t = 0; t < nt; ++t) {
          quantize_activation_row(pt, x.data() + t * c.n_in, xp.data() + t * prb, c.n_in);
          quantize_activation_row(c.file_type, x.data() + t * c.n_in, xfile.data() + t * frb, c.n_in);
        }
        // Rows [16, rows): a sub-range that does not start at 0.
        const int64_t r0 = 16, r1 = c.rows;
        std::vector<float> yp(static_cast<size_t>(nt * c.rows), NAN), yf(yp.size(), NAN);
        matmul(pt, c.n_in, packed.data(), packed_rb, r0, r1, xp.data(), prb, nt, yp.data(), c.rows);
        matmul(c.file_type, c.n_in, file.data(), rb, r0, r1, xfile.data(), frb, nt, yf.data(), c.rows);
        for (int64_t t = 0; t < nt; ++t) {
          for (int64_t r = 0; r < c.rows; ++r) {
            const size_t i = static_cast<size_t>(t * c.rows + r);
            if (r < r0) {
              ASSERT_TRUE(std::isnan(yp[i])) << "wrote outside the row range";
              continue;
            }
            const RefDot d = reference_dot(wf, xf, c.n_in, r, t);
            const double ref = d.sum, scale = d.magnitude;
            ASSERT_NEAR(yp[i], ref, kRefRelTol * scale)
                << isa_name(isa) << " " << tensor_type_name(pt) << " n_in " << c.n_in << " token " << t << " row " << r;
            ASSERT_NEAR(yp[i], yf[i], 2 * kRefRelTol * scale) << isa_name(isa) << " packed vs file layout";
          }
        }
      }
    }
  }
}

// A token's output does not depend on the tile it falls in: the packed matmul over 45 tokens
// (AVX-512: 8-token tiles, a 4- or 2-token tile, 1-token remainders; ARM: 4-token tiles and
// remainders; AMX: two 16-token tiles and a 13-token one) equals, bit for
// bit, 45 one-token (decode) matmuls of the same rows, on every ISA and packed type. This is what lets a prompt prefilled in chunks give the logits of a single
// pass (ContextTest.ChunkingAndThreadsDoNotChangeLogits checks that on stories260K, which has no
// K-quant weights).
TEST(Repack, BatchedMatmulEqualsTokenByToken) {
  IsaGuard guard;
  constexpr int64_t kRows = 96;
  // Every tile width of every ISA (packed_driver.h: kTokens-wide tiles, then one tile of the
  // rest): 2 .. 9 tokens are one tile (or kTokens + 1), 45 mixes full tiles and a rest.
  for (const int64_t n_tokens : {2, 3, 4, 5, 6, 7, 8, 9, 45}) {
    for (const TensorType ft :
         {TensorType::Q4_0, TensorType::Q8_0, TensorType::Q5_0, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K}) {
      const int64_t n = 512;
      const PackedMatrix m = pack_gaussian(ft, kRows, n, 41);
      const TensorType pt = m.pt;
      const size_t prb_w = m.packed_rb;
      const std::vector<uint8_t>& packed = m.packed;
      const auto x = gaussian(static_cast<size_t>(n_tokens * n), 43, 1.0f);
      for (const Isa isa : supported_isas()) {
        set_active_isa(isa);
        const size_t prb = activation_row_bytes(pt, n);
        std::vector<uint8_t> xq(prb * static_cast<size_t>(n_tokens));
        for (int64_t t = 0; t < n_tokens; ++t) quantize_activation_row(pt, x.data() + t * n, xq.data() + t * prb, n);
        std::vector<float> batched(static_cast<size_t>(n_tokens * kRows)), single(batched.size());
        matmul(pt, n, packed.data(), prb_w, 0, kRows, xq.data(), prb, n_tokens, batched.data(), kRows);
        for (int64_t t = 0; t < n_tokens; ++t) {
          matmul(pt, n, packed.data(), prb_w, 0, kRows, xq.data() + t * prb, prb, 1, single.data() + t * kRows, kRows);
        }
        for (size_t i = 0; i < batched.size(); ++i) {
          ASSERT_EQ(batched[i], single[i]) << isa_name(isa) << " " << tensor_type_name(pt) << " " << n_tokens
                                           << " tokens: token " << i / kRows << " row " << i % kRows;
        }
      }
    }
  }
}

// The AMX prefill matmul (kernels/x86/amx) equals the AVX-512 kernel bit for bit: the same
// integer block sums (tdpbssd on the codes minus their offset, against vpdpbusd on the codes with
// -offset x sum(x) as seed; for the K-quants tdpbsud / tdpbssd on codes x scale split in digits,
// against per-sub-block sums times the scale) and the same F32 steps in column order. Shapes
// cover what its loops split: 1 and 2-column rows and an odd column count, one 16-row group and
// odd group counts, row ranges that start past row 0 and end before the last row (rows outside
// untouched), more rows than one 1 MiB decode chunk holds, token counts with a partial 16-token
// tile, 257 and 300 tokens (a second 256-token span of 1 and of 44), and 31 tokens, which go to
// the AVX-512 kernel.
TEST(Repack, AmxPrefillEqualsAvx512) {
  IsaGuard guard;
  const auto isas = supported_isas();
  if (std::find(isas.begin(), isas.end(), Isa::kAmx) == isas.end()) {
    GTEST_SKIP() << "NOT CHECKED ON THIS HOST: no AMX on this CPU, so the AMX prefill kernels (the default on AMX "
                    "hosts) were not compared with AVX-512 (docs/testing.md, \"What depends on the host\")";
  }
  struct Shape {
    int64_t n, rows, r0, r1;  // n in columns; rows [r0, r1) computed
  };
  for (const TensorType ft : {TensorType::Q4_0, TensorType::Q8_0, TensorType::Q5_0, TensorType::Q4_K, TensorType::Q5_K,
                              TensorType::Q6_K}) {
    // Block columns of 32 elements, or of 256 (K-quants: the same column counts)
    const int64_t col = (ft == TensorType::Q4_K || ft == TensorType::Q5_K || ft == TensorType::Q6_K) ? 256 : 32;
    for (Shape sh : {Shape{1, 48, 0, 48}, Shape{2, 16, 0, 16}, Shape{3, 80, 32, 64}, Shape{256, 160, 16, 160}}) {
      sh.n *= col;
      // 256 columns (Q4_0 / Q5_0 / Q8_0 8192 wide) and 17 (the K-quants 4352 wide): a 1 MiB
      // decode chunk holds 112 rows (Q6_K: 48), so [16, 160) takes two chunks (Q6_K three).
      if (col == 256 && sh.n > 4096) sh.n = 17 * 256;
      const PackedMatrix m = pack_gaussian(ft, sh.rows, sh.n, static_cast<uint32_t>(sh.n + sh.rows));
      for (const int64_t nt : {int64_t{31}, int64_t{32}, int64_t{45}, int64_t{257}, int64_t{300}}) {
        const auto x = gaussian(static_cast<size_t>(nt * sh.n), static_cast<uint32_t>(300 + nt), 1.0f);
        const size_t prb = activation_row_bytes(m.pt, sh.n);
        std::vector<uint8_t> xq(prb * static_cast<size_t>(nt));
        for (int64_t t = 0; t < nt; ++t) quantize_activation_row(m.pt, x.data() + t * sh.n, xq.data() + t * prb, sh.n);
        std::vector<float> want(static_cast<size_t>(nt * sh.rows), NAN), got(want.size(), NAN);
        set_active_isa(Isa::kAvx512);
        matmul(m.pt, sh.n, m.packed.data(), m.packed_rb, sh.r0, sh.r1, xq.data(), prb, nt, want.data(), sh.rows);
        set_active_isa(Isa::kAmx);
        matmul(m.pt, sh.n, m.packed.data(), m.packed_rb, sh.r0, sh.r1, xq.data(), prb, nt, got.data(), sh.rows);
        for (int64_t t = 0; t < nt; ++t) {
          for (int64_t r = 0; r < sh.rows; ++r) {
            const size_t i = static_cast<size_t>(t * sh.rows + r);
            if (r < sh.r0 || r >= sh.r1) {
              ASSERT_TRUE(std::isnan(got[i])) << "row " << r << " is outside the range and was written";
              continue;
            }
            ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
                << tensor_type_name(m.pt) << " n " << sh.n << " rows " << sh.rows << " tokens " << nt << " token " << t
                << " row " << r << ": " << got[i] << " vs " << want[i];
          }
        }
      }
    }
  }
}

// Tiled inputs (kernels.h: tile_activations, matmul_tiled), as the forward pass uses them: one
// copy of an input made tile by tile (in reverse order, into a buffer of garbage), then read by
// several row ranges (a guided split: [0, 16), [16, 48), [48, 80)) and, through the shared
// layout, by every weight type of its activation type (Q4_0 / Q5_0 / Q8_0 from one copy, Q4_K /
// Q5_K from one). Each range equals the AVX-512 kernel bit for bit. Token counts: 31 (no tiled
// form: matmul_tiled is matmul), 32 and 64 (whole tile pairs), 45 (a pair, then one partial
// tile), 300 (more than a 256-token span), 600 (two passes over the tiled copy: 512 + 88). A copy
// that is not 64-byte aligned, or null, is refused. Every other ISA has no tiled form, and its
// matmul_tiled is its matmul. Without AMX only that last claim is checked, and the test reports
// itself skipped.
TEST(Repack, TiledInputsEqualAvx512) {
  IsaGuard guard;
  const auto isas = supported_isas();
  const bool amx = std::find(isas.begin(), isas.end(), Isa::kAmx) != isas.end();
  const int64_t rows = 80;
  const int64_t ranges[][2] = {{0, 16}, {16, 48}, {48, 80}};
  const std::vector<std::vector<TensorType>> families = {
      {TensorType::Q4_0, TensorType::Q5_0, TensorType::Q8_0}, {TensorType::Q4_K, TensorType::Q5_K}, {TensorType::Q6_K}};
  for (const auto& family : families) {
    const bool k_quant = family[0] == TensorType::Q4_K || family[0] == TensorType::Q6_K;
    // K-quants also 6144 wide: at 300 tokens (19 tiles) their packed activations exceed one K
    // segment (amx_driver.h: segment_columns), so the later segment resumes from y.
    std::vector<int64_t> widths = {k_quant ? 3 * 256 : 17 * 32};
    if (k_quant) widths.push_back(24 * 256);
    for (const int64_t n : widths) {
      std::vector<PackedMatrix> ms;
      for (size_t f = 0; f < family.size(); ++f) ms.push_back(pack_gaussian(family[f], rows, n, static_cast<uint32_t>(7 + f)));
      const TensorType maker = ms[0].pt;  // the type whose tile_activations makes the shared copy
      for (const int64_t nt : {int64_t{31}, int64_t{32}, int64_t{45}, int64_t{64}, int64_t{300}, int64_t{600}}) {
        if (n > 4096 && nt != 45 && nt != 300) continue;
        const auto x = gaussian(static_cast<size_t>(nt * n), static_cast<uint32_t>(500 + nt), 1.0f);
        const size_t prb = activation_row_bytes(maker, n);
        std::vector<uint8_t> xq(prb * static_cast<size_t>(nt));
        for (int64_t t = 0; t < nt; ++t) quantize_activation_row(maker, x.data() + t * n, xq.data() + t * prb, n);
        for (const Isa isa : isas) {
          set_active_isa(isa);
          const size_t bytes = tiled_activation_bytes(maker, n, nt);
          if (isa != Isa::kAmx) {
            EXPECT_EQ(bytes, 0u) << isa_name(isa) << " has no tile kernels";
            continue;
          }
          EXPECT_EQ(bytes == 0, nt < 32) << "tokens " << nt;
        }
        if (!amx) continue;
        set_active_isa(Isa::kAmx);
        const int64_t n_tiles = (nt + kActivationTileTokens - 1) / kActivationTileTokens;
        const size_t bytes = tiled_activation_bytes(maker, n, nt);
        std::vector<uint8_t> xt(bytes + 64, 0xAB);
        uint8_t* xt_at = xt.data() + (64 - reinterpret_cast<uintptr_t>(xt.data()) % 64) % 64;
        if (bytes > 0) {
          for (int64_t i = n_tiles - 1; i >= 0; --i) tile_activations(maker, n, xq.data(), prb, nt, i, i + 1, xt_at);
          EXPECT_THROW(tile_activations(maker, n, xq.data(), prb, nt, 0, n_tiles + 1, xt_at), Error);
          EXPECT_THROW(tile_activations(maker, n, xq.data(), prb, nt, 0, 1, xt_at + 32), Error);  // not 64-aligned
          EXPECT_THROW(tile_activations(maker, n, xq.data(), prb, nt, 0, 1, nullptr), Error);
        } else {
          EXPECT_THROW(tile_activations(maker, n, xq.data(), prb, nt, 0, 1, xt_at), Error);
        }
        for (const PackedMatrix& m : ms) {
          std::vector<float> want(static_cast<size_t>(nt * rows), NAN), got(want.size(), NAN), rowwise(want.size(), NAN);
          set_active_isa(Isa::kAvx512);
          matmul(m.pt, n, m.packed.data(), m.packed_rb, 0, rows, xq.data(), prb, nt, want.data(), rows);
          set_active_isa(Isa::kAmx);
          for (const auto& r : ranges) {
            matmul_tiled(m.pt, n, m.packed.data(), m.packed_rb, r[0], r[1], xq.data(), prb, bytes > 0 ? xt_at : nullptr,
                         nt, got.data(), rows);
          }
          // matmul() on AMX packs its own spans of 256 tokens: segments there too (6144 wide)
          matmul(m.pt, n, m.packed.data(), m.packed_rb, 0, rows, xq.data(), prb, nt, rowwise.data(), rows);
          for (size_t i = 0; i < want.size(); ++i) {
            ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
                << tensor_type_name(m.pt) << " (copy made for " << tensor_type_name(maker) << ") n " << n << " tokens "
                << nt << " token " << i / rows << " row " << i % rows << ": " << got[i] << " vs " << want[i];
            ASSERT_EQ(std::bit_cast<uint32_t>(rowwise[i]), std::bit_cast<uint32_t>(want[i]))
                << tensor_type_name(m.pt) << " matmul() n " << n << " tokens " << nt << " token " << i / rows << " row "
                << i % rows;
          }
        }
      }
    }
  }
  if (!amx) {
    GTEST_SKIP() << "NOT CHECKED ON THIS HOST: no AMX on this CPU; checked only that no other ISA offers a tiled "
                    "form; the tiled inputs were not compared with AVX-512 (docs/testing.md, \"What depends on the "
                    "host\")";
  }
}

// The BlockQ8_0S activation quantizer of every ISA writes exactly the scalar reference's bytes
// (so packed and file-layout matmuls see the same codes). Row lengths: 1 block, 33 blocks (one
// past a 32-block chunk) and 128; the row mixes Gaussian values with an all-zero block (d = 0),
// values on rounding ties (k + 0.5 times the block's step) and a huge-magnitude block.
TEST(Repack, ActivationQuantizerMatchesScalarBytes) {
  IsaGuard guard;
  for (const int64_t n : {int64_t{32}, int64_t{33 * 32}, int64_t{4096}}) {
    auto x = gaussian(static_cast<size_t>(n), static_cast<uint32_t>(n), 2.0f);
    if (n >= 3 * 32) {
      for (int i = 0; i < 32; ++i) x[static_cast<size_t>(32 + i)] = 0.0f;
      // amax 127 -> step exactly 1: every other element sits on a .5 tie.
      for (int i = 0; i < 32; ++i) x[static_cast<size_t>(64 + i)] = (i == 0) ? 127.0f : static_cast<float>(i) - 15.5f;
    }
    if (n >= 4 * 32) {
      for (int i = 0; i < 32; ++i) x[static_cast<size_t>(96 + i)] *= 1e30f;
    }
    for (const TensorType pt : {TensorType::Q4_0_X16, TensorType::Q8_0_X16}) {
      const size_t bytes = activation_row_bytes(pt, n);
      set_active_isa(Isa::kScalar);
      std::vector<uint8_t> want(bytes, 0xAB);
      quantize_activation_row(pt, x.data(), want.data(), n);
      for (const Isa isa : supported_isas()) {
        set_active_isa(isa);
        std::vector<uint8_t> got(bytes, 0xCD);
        quantize_activation_row(pt, x.data(), got.data(), n);
        for (size_t i = 0; i < bytes; ++i) {
          ASSERT_EQ(got[i], want[i]) << isa_name(isa) << " " << tensor_type_name(pt) << " n " << n << " byte " << i
                                     << " (block " << i / sizeof(BlockQ8_0S) << ")";
        }
      }
    }
  }
}

// Tile remainders and L2 row chunks: 2 and 6 tokens (4-token tiles plus a 2-token remainder on
// ARM), all 64 rows of 4096-wide matrices (several row chunks of the prefill loops). Every ISA
// must match the double reference; on ARM dotprod / i8mm the packed kernel must equal the
// file-layout kernel bit for bit (both do fma(float(block dot), d_w * d_x, acc) in block order,
// which keeps perplexity identical across neon / dotprod / i8mm when a model is repacked).
TEST(Repack, MatmulTileRemaindersAndRowChunks) {
  IsaGuard guard;
  constexpr int64_t kRows = 64, kN = 4096;
  for (const TensorType ft : {TensorType::Q4_0, TensorType::Q8_0, TensorType::Q5_0}) {
    const PackedMatrix m = pack_gaussian(ft, kRows, kN, 23);
    const size_t rb = m.rb;
    const std::vector<uint8_t>& file = m.file;
    const std::vector<uint8_t>& packed = m.packed;
    const TensorType pt = m.pt;
    std::vector<float> wf(static_cast<size_t>(kRows * kN));
    for (int64_t r = 0; r < kRows; ++r) dequantize_row(ft, file.data() + r * rb, wf.data() + r * kN, kN);
    for (const int64_t nt : {int64_t{2}, int64_t{6}}) {
      const auto x = gaussian(static_cast<size_t>(nt * kN), static_cast<uint32_t>(200 + nt), 1.0f);
      std::vector<float> xf(x.size());
      std::vector<uint8_t> q8(tensor_row_bytes(TensorType::Q8_0, kN));
      for (int64_t t = 0; t < nt; ++t) {
        quantize_row(TensorType::Q8_0, x.data() + t * kN, q8.data(), kN);
        dequantize_row(TensorType::Q8_0, q8.data(), xf.data() + t * kN, kN);
      }
      for (const Isa isa : supported_isas()) {
        set_active_isa(isa);
        const size_t prb = activation_row_bytes(pt, kN), frb = activation_row_bytes(ft, kN);
        std::vector<uint8_t> xp(prb * static_cast<size_t>(nt)), xfile(frb * static_cast<size_t>(nt));
        for (int64_t t = 0; t < nt; ++t) {
          quantize_activation_row(pt, x.data() + t * kN, xp.data() + t * prb, kN);
          quantize_activation_row(ft, x.data() + t * kN, xfile.data() + t * frb, kN);
        }
        std::vector<float> yp(static_cast<size_t>(nt * kRows), NAN), yf(yp.size(), NAN);
        matmul(pt, kN, packed.data(), rb, 0, kRows, xp.data(), prb, nt, yp.data(), kRows);
        matmul(ft, kN, file.data(), rb, 0, kRows, xfile.data(), frb, nt, yf.data(), kRows);
        // (Where ARM has no packed SIMD kernel the scalar reference runs it: no bit identity.)
        const bool arm_sdot = (isa == Isa::kDotprod || isa == Isa::kI8mm) && has_fast_packed_kernel(pt);
        for (int64_t t = 0; t < nt; ++t) {
          for (int64_t r = 0; r < kRows; ++r) {
            const size_t i = static_cast<size_t>(t * kRows + r);
            const RefDot d = reference_dot(wf, xf, kN, r, t);
            const double ref = d.sum, scale = d.magnitude;
            ASSERT_NEAR(yp[i], ref, kRefRelTol * scale)
                << isa_name(isa) << " " << tensor_type_name(pt) << " tokens " << nt << " token " << t << " row " << r;
            if (arm_sdot) {
              ASSERT_EQ(yp[i], yf[i]) << isa_name(isa) << " " << tensor_type_name(pt)
                                      << " packed vs file layout, tokens " << nt << " token " << t << " row " << r;
            }
          }
        }
      }
    }
  }
}

// The BlockQ8_KS activation quantizer (Q4_K_X16) of every ISA writes exactly the scalar
// reference's bytes. Row lengths: 1 super-block, 9 (one past the ARM quantizer's 8-super-block
// chunk) and 16; the row mixes Gaussian values with an all-zero super-block (d = 0), one whose
// largest magnitude is negative and shared by a positive value (the sign tie-break), and a
// huge-magnitude one.
TEST(Repack, Q8KSActivationQuantizerMatchesScalarBytes) {
  IsaGuard guard;
  constexpr int64_t kSuper = 256;
  for (const int64_t n : {kSuper, 9 * kSuper, 16 * kSuper}) {
    auto x = gaussian(static_cast<size_t>(n), static_cast<uint32_t>(n + 1), 2.0f);
    if (n >= 3 * kSuper) {
      for (int64_t i = 0; i < kSuper; ++i) x[static_cast<size_t>(kSuper + i)] = 0.0f;
      x[static_cast<size_t>(2 * kSuper + 5)] = -9.0f;
      x[static_cast<size_t>(2 * kSuper + 77)] = 9.0f;
    }
    if (n >= 4 * kSuper) {
      for (int64_t i = 0; i < kSuper; ++i) x[static_cast<size_t>(3 * kSuper + i)] *= 1e30f;
    }
    const size_t bytes = activation_row_bytes(TensorType::Q4_K_X16, n);
    set_active_isa(Isa::kScalar);
    std::vector<uint8_t> want(bytes, 0xAB);
    quantize_activation_row(TensorType::Q4_K_X16, x.data(), want.data(), n);
    for (const Isa isa : supported_isas()) {
      set_active_isa(isa);
      std::vector<uint8_t> got(bytes, 0xCD);
      quantize_activation_row(TensorType::Q4_K_X16, x.data(), got.data(), n);
      for (size_t i = 0; i < bytes; ++i) {
        ASSERT_EQ(got[i], want[i]) << isa_name(isa) << " n " << n << " byte " << i << " (super-block "
                                   << i / sizeof(BlockQ8_KS) << ")";
      }
    }
  }
}

// Q4_K_X16 / Q6_K_X16 tile remainders and L2 row chunks: 1 token (decode tiles), 2, 5, 6, 8 and
// 11 tokens (4-token tiles plus 1- / 2-token remainders on ARM; on AVX-512 Q4_K's 8- and 2-token
// tiles, Q6_K's 6- and 2-token tiles, and 1-token remainders),
// all 96 rows of a 4096-wide matrix (2368 / 3360 packed bytes per row: 80 / 48 rows per prefill
// row chunk, so two chunks or more). Every ISA must match the double reference; on ARM dotprod /
// i8mm the packed kernel must equal the file-layout kernel bit for bit where it has a packed SIMD
// kernel (Q4_K: both compute fma(-dmin, msum, d * isum) and fma(d_x, ., acc) per super-block in
// order), which keeps perplexity identical across neon / dotprod / i8mm.
void check_k_quant_tiles(TensorType ft) {
  IsaGuard guard;
  constexpr int64_t kRows = 96, kN = 4096;  // Q4_K_X16: 80 rows per 192 KiB prefill chunk
  const PackedMatrix m = pack_gaussian(ft, kRows, kN, 29);
  const TensorType pt = m.pt;
  const size_t rb = m.rb, packed_rb = m.packed_rb;
  const std::vector<uint8_t>& file = m.file;
  const std::vector<uint8_t>& packed = m.packed;
  std::vector<float> wf(static_cast<size_t>(kRows * kN));
  for (int64_t r = 0; r < kRows; ++r) dequantize_row(ft, file.data() + r * rb, wf.data() + r * kN, kN);
  for (const int64_t nt : {int64_t{1}, int64_t{2}, int64_t{5}, int64_t{6}, int64_t{8}, int64_t{11}}) {
    const auto x = gaussian(static_cast<size_t>(nt * kN), static_cast<uint32_t>(300 + nt), 1.0f);
    std::vector<float> xf(x.size());
    std::vector<uint8_t> q8(tensor_row_bytes(TensorType::Q8_K, kN));
    for (int64_t t = 0; t < nt; ++t) {
      quantize_row(TensorType::Q8_K, x.data() + t * kN, q8.data(), kN);
      dequantize_row(TensorType::Q8_K, q8.data(), xf.data() + t * kN, kN);
    }
    std::vector<double> ref(static_cast<size_t>(nt * kRows)), scale(ref.size());
    for (int64_t t = 0; t < nt; ++t) {
      for (int64_t r = 0; r < kRows; ++r) {
        const RefDot d = reference_dot(wf, xf, kN, r, t);
        ref[static_cast<size_t>(t * kRows + r)] = d.sum;
        scale[static_cast<size_t>(t * kRows + r)] = d.magnitude;
      }
    }
    for (const Isa isa : supported_isas()) {
      set_active_isa(isa);
      const size_t prb = activation_row_bytes(pt, kN), frb = activation_row_bytes(ft, kN);
      std::vector<uint8_t> xp(prb * static_cast<size_t>(nt)), xfile(frb * static_cast<size_t>(nt));
      for (int64_t t = 0; t < nt; ++t) {
        quantize_activation_row(pt, x.data() + t * kN, xp.data() + t * prb, kN);
        quantize_activation_row(ft, x.data() + t * kN, xfile.data() + t * frb, kN);
      }
      std::vector<float> yp(static_cast<size_t>(nt * kRows), NAN), yf(yp.size(), NAN);
      matmul(pt, kN, packed.data(), packed_rb, 0, kRows, xp.data(), prb, nt, yp.data(), kRows);
      matmul(ft, kN, file.data(), rb, 0, kRows, xfile.data(), frb, nt, yf.data(), kRows);
      const bool arm_sdot = (isa == Isa::kDotprod || isa == Isa::kI8mm) && has_fast_packed_kernel(pt);
      for (int64_t t = 0; t < nt; ++t) {
        for (int64_t r = 0; r < kRows; ++r) {
          const size_t i = static_cast<size_t>(t * kRows + r);
          ASSERT_NEAR(yp[i], ref[i], kRefRelTol * scale[i])
              << isa_name(isa) << " " << tensor_type_name(pt) << " tokens " << nt << " token " << t << " row " << r;
          if (arm_sdot) {
            ASSERT_EQ(yp[i], yf[i]) << isa_name(isa) << " " << tensor_type_name(pt) << " packed vs file layout, tokens " << nt << " token "
                                    << t << " row " << r;
          }
        }
      }
    }
  }
}


TEST(Repack, KQuantTileRemaindersMatchFileLayout) {
  for (const TensorType ft : {TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K}) {
    SCOPED_TRACE(tensor_type_name(ft));
    check_k_quant_tiles(ft);
  }
}

}  // namespace
}  // namespace edgellm::kernels
