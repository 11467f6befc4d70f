// Load-time repacking at the model level: which matrices get repacked, that the forward pass
// gives the same logits with and without it (the file-layout kernels are the reference), and
// that a file-backed tied model, whose mapped head pages were released, reads its embedding rows
// from the packed head.
//
// Logits are compared on the scalar ISA, where the packed and file-layout reference kernels
// compute the same integer block sums and combine them in the same order: the model-level
// plumbing (which tensors, row strides, thread splits, tied head) must then change nothing. On a
// SIMD ISA the two layouts sum in different F32 orders; a 1e-7 difference can flip the rounding
// of one int8 activation code in the next layer and move a logit by ~1e-2 in these small random
// models, so an end-to-end comparison there can only be loose (engine_test_forward_vs_naive does
// it, against a naive reference). The SIMD packed kernels are compared exactly, matmul by matmul,
// in kernels_test_repack.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "engine/context.h"
#include "kernels/kernels.h"
#include "kernels/repack.h"
#include "model/model.h"
#include "support/prompt_logits.h"
#include "support/sanitizer.h"
#include "support/synthetic_model.h"
#include "support/test_env.h"

namespace edgellm {
namespace {

// Scalar packed vs scalar file layout: bit-identical logits were observed for Q4_0, Q5_0, Q8_0,
// Q4_K and Q6_K; the margin only allows a future reference kernel to group its F32 operations otherwise.
// A wrong lane, block or stride moves logits by >1e-2 of the largest.
constexpr double kLogitRelTol = 2e-6;

// Pins an ISA for the scope (restores the previous one).
class IsaScope {
 public:
  explicit IsaScope(kernels::Isa isa) : saved_(kernels::active_isa()) { kernels::set_active_isa(isa); }
  ~IsaScope() { kernels::set_active_isa(saved_); }
  IsaScope(const IsaScope&) = delete;
  IsaScope& operator=(const IsaScope&) = delete;

 private:
  kernels::Isa saved_;
};
test::SyntheticModelSpec spec_for(TensorType type, bool tied, int32_t n_vocab) {
  test::SyntheticModelSpec s;
  s.arch = "qwen2";
  s.weight_type = type;
  s.tied = tied;
  s.n_vocab = n_vocab;
  s.n_embd = 256;
  s.n_ff = 512;
  s.n_layer = 2;
  s.n_head = 4;
  s.n_head_kv = 2;
  s.seed = 7;
  return s;
}

std::vector<float> run(const Model& model) { return test::prompt_and_step_logits(model, 4); }

// Returns the largest difference relative to the largest reference logit.
double expect_close(const std::vector<float>& got, const std::vector<float>& ref, const std::string& what,
                    double rel_tol = kLogitRelTol) {
  EXPECT_EQ(got.size(), ref.size());
  if (got.size() != ref.size()) return 1;
  double scale = 0, worst = 0;
  for (const float v : ref) scale = std::max(scale, std::fabs(static_cast<double>(v)));
  for (size_t i = 0; i < ref.size(); ++i) {
    EXPECT_NEAR(got[i], ref[i], rel_tol * scale) << what << " logit " << i;
    worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - ref[i]) / scale);
  }
  return worst;
}

std::unique_ptr<Model> load(const test::SyntheticModelSpec& s, RepackMode mode) {
  ModelLoadParams lp;
  lp.repack = mode;
  return Model::from_gguf(test::synthetic_model(s), lp);
}

// Under TSan one legacy and one K-quant type (the repacking and the forward pass use the same
// threads for every type; ASan runs all six).
TEST(RepackModel, RepacksEveryEligibleMatrixAndKeepsTheLogits) {
  const IsaScope scalar(kernels::Isa::kScalar);
  std::vector<TensorType> types = {TensorType::Q4_0, TensorType::Q5_0, TensorType::Q8_0,
                                   TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K};
  if (test::kThreadSanitized) types = {TensorType::Q4_0, TensorType::Q4_K};
  for (const TensorType type : types) {
    for (const bool tied : {false, true}) {
      const auto s = spec_for(type, tied, 320);
      const auto off = load(s, RepackMode::kOff);
      const auto on = load(s, RepackMode::kOn);
      EXPECT_EQ(off->repacked_tensors(), 0);
      EXPECT_EQ(off->repacked_bytes(), 0u);
      // 7 matrices per layer plus the output head (the tied head too: it is token_embd).
      EXPECT_EQ(on->repacked_tensors(), 2 * 7 + 1) << tensor_type_name(type);
      EXPECT_EQ(on->layer(0).wq.type, *kernels::packed_type_for(type));
      // A tied head's lookups read the packed copy; an untied token_embd is never multiplied.
      EXPECT_EQ(on->token_embd().type, tied ? *kernels::packed_type_for(type) : type);
      expect_close(run(*on), run(*off), std::string(tensor_type_name(type)) + (tied ? " tied" : ""));
    }
  }
}

TEST(RepackModel, SkipsMatricesThatAreNotWholeGroups) {
  // 300 output rows are not a multiple of 16: the head stays in the file layout.
  const auto on = load(spec_for(TensorType::Q8_0, false, 300), RepackMode::kOn);
  EXPECT_EQ(on->repacked_tensors(), 2 * 7);
  EXPECT_EQ(on->output().type, TensorType::Q8_0);
}

TEST(RepackModel, AutoFollowsTheKernelAvailability) {
  const auto s = spec_for(TensorType::Q4_0, false, 320);
  const auto autom = load(s, RepackMode::kAuto);
  const bool fast = kernels::has_fast_packed_kernel(TensorType::Q4_0_X16);
  EXPECT_EQ(autom->repacked_tensors() > 0, fast) << "active ISA " << kernels::isa_name(kernels::active_isa());
  // Q4_1 has no packed layout: nothing to repack.
  const auto q41 = load(spec_for(TensorType::Q4_1, false, 320), RepackMode::kOn);
  EXPECT_EQ(q41->repacked_tensors(), 0);
  EXPECT_THROW(parse_repack_mode("sometimes"), Error);
  EXPECT_EQ(parse_repack_mode("off"), RepackMode::kOff);
}

// Q5_K_X16 with the AVX-512 kernels: every Q5_K matrix repacked in auto mode, the logits those
// of the file layout. Not bit-identical in general: the packed and the file-layout
// kernels round their F32 ends differently (1 ulp on ~70 % of a matmul's outputs, as for Q4_K),
// and where such an ulp carries an activation across a Q8_K rounding boundary the next matmul
// moves by a code step. Measured over weight seeds 1-9: 2.6e-7 .. 4.3e-7 of the largest logit,
// except seeds 4, 7, 8, 9 (1.5e-2 .. 2.4e-2: one such flip each in this 2-layer random model).
// Seed 1 has none, so the plumbing (lanes, strides, the tied head) is checked at kLogitRelTol.
TEST(RepackModel, Q5KRepacksOnAvx512) {
  const auto isas = kernels::supported_isas();
  if (std::find(isas.begin(), isas.end(), kernels::Isa::kAvx512) == isas.end())
    GTEST_SKIP() << "NOT CHECKED ON THIS HOST: no AVX-512 on this CPU";
  const IsaScope avx512(kernels::Isa::kAvx512);
  for (const bool tied : {false, true}) {
    auto s = spec_for(TensorType::Q5_K, tied, 320);
    s.seed = 1;
    const auto off = load(s, RepackMode::kOff);
    const auto on = load(s, RepackMode::kAuto);
    EXPECT_EQ(on->repacked_tensors(), 2 * 7 + 1);
    EXPECT_EQ(on->layer(0).wq.type, TensorType::Q5_K_X16);
    EXPECT_EQ(on->output().type, TensorType::Q5_K_X16);
    expect_close(run(*on), run(*off), std::string("q5_K") + (tied ? " tied" : ""));
  }
}

TEST(RepackModel, AutoOnAvx2RepacksEveryPackedType) {
  const auto isas = kernels::supported_isas();
  if (std::find(isas.begin(), isas.end(), kernels::Isa::kAvx2) == isas.end())
    GTEST_SKIP() << "NOT CHECKED ON THIS HOST: no AVX2 on this CPU";
  const IsaScope avx2(kernels::Isa::kAvx2);
  const auto q4 = load(spec_for(TensorType::Q4_0, false, 320), RepackMode::kAuto);
  const auto q8 = load(spec_for(TensorType::Q8_0, false, 320), RepackMode::kAuto);
  const auto q4k = load(spec_for(TensorType::Q4_K, false, 320), RepackMode::kAuto);
  const auto q6k = load(spec_for(TensorType::Q6_K, false, 320), RepackMode::kAuto);
  const auto q5k = load(spec_for(TensorType::Q5_K, false, 320), RepackMode::kAuto);
  EXPECT_EQ(q5k->repacked_tensors(), 2 * 7 + 1);
  EXPECT_EQ(q4->repacked_tensors(), 2 * 7 + 1);
  EXPECT_EQ(q8->repacked_tensors(), 2 * 7 + 1);
  EXPECT_EQ(q4k->repacked_tensors(), 2 * 7 + 1);
  EXPECT_EQ(q6k->repacked_tensors(), 2 * 7 + 1);
}

TEST(RepackModel, FileBackedTiedModelReadsEmbeddingsFromThePackedHead) {
  // A file large enough that the tied head spans many pages which repacking releases.
  const IsaScope scalar(kernels::Isa::kScalar);
  auto s = spec_for(TensorType::Q8_0, true, 4096);
  const std::string path = test::temp_dir() + "/repack_tied.gguf";
  test::write_synthetic_model(s, path);
  ModelLoadParams off_p, on_p;
  off_p.repack = RepackMode::kOff;
  on_p.repack = RepackMode::kOn;
  const auto off = Model::load(path, off_p);
  const auto on = Model::load(path, on_p);
  ASSERT_GT(on->repacked_tensors(), 0);
  expect_close(run(*on), run(*off), "file-backed tied Q8_0");
}

}  // namespace
}  // namespace edgellm
