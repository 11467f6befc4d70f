// The mixed recipe's pieces against hand-computed cases and independent measurements:
//   - choose_min_cost: a small knapsack worked out by hand below (where the greedy best-ratio
//     upgrade order misses the optimum), a budget between two sizes, an infeasible budget, and
//     the coarse-unit rounding that must never exceed the budget;
//   - find_abnormal: a table whose medians are computed by hand;
//   - plan_mixed_recipe: the planned file size equals the size of the file quantize_model then
//     writes, and --target-size Q4_K_M equals the size of a real Q4_K_M file;
//   - measure_sensitivity: one matrix's KLD equals the KLD of a file holding only that matrix
//     quantized, measured by the perplexity tool's own path (saved base file, reloaded model),
//     and the model is left exactly as it was.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "engine/batch.h"
#include "engine/context.h"
#include "gguf/gguf_reader.h"
#include "model/model.h"
#include "support/synthetic_model.h"
#include "support/test_env.h"
#include "tools/eval/kl_divergence.h"
#include "tools/quant/mixed_recipe.h"
#include "tools/quant/quantize_model.h"
#include "tools/quant/recipe_search.h"
#include "tools/quant/tensor_sensitivity.h"

namespace edgellm::quant {
namespace {

// Three items, options (bytes, cost):
//   A: (10, 9) (20, 4) (30, 1)     B: (10, 5) (20, 3) (30, 2.5)     C: (10, 8) (20, 2) (30, 1.5)
// Budget 60: everything at 10 costs 22 in 30 bytes; 30 bytes more buy, at best,
//   A->30 (20 bytes, -8) + C->20 (10 bytes, -6) = cost 8   <- optimum: {A30, B10, C20}
//   A->20 + B->20 + C->20 (-5 -2 -6)         = cost 9   (the greedy order: C, A, B by saving per byte)
//   A->20 + C->30 = 10.5,  A->30 + B->20 = 12,  B->20 + C->30 = 13.5.
// Budget 59: no choice holds 51-59 bytes; at 50 the best is A->20 + C->20 = cost 4 + 5 + 2 = 11.
std::vector<std::vector<SizedOption>> hand_items() {
  return {{{10, 9}, {20, 4}, {30, 1}}, {{10, 5}, {20, 3}, {30, 2.5}}, {{10, 8}, {20, 2}, {30, 1.5}}};
}

TEST(RecipeSearch, KnapsackMatchesTheHandComputedOptimum) {
  EXPECT_EQ(choose_min_cost(hand_items(), 60), (std::vector<int>{2, 0, 1}));
  EXPECT_EQ(choose_min_cost(hand_items(), 59), (std::vector<int>{1, 0, 1}));
  EXPECT_EQ(choose_min_cost(hand_items(), 30), (std::vector<int>{0, 0, 0}));
  EXPECT_EQ(choose_min_cost(hand_items(), 1000), (std::vector<int>{2, 2, 2}));
  try {
    choose_min_cost(hand_items(), 29);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("30 bytes"), std::string::npos) << e.what();
  }
}

// max_units 4 on a budget of 60: units of 15 bytes, options of 10 / 20 / 30 bytes count 1 / 2 / 2
// units, 4 units in all: everything at 10 (3 units) plus one upgrade; the best single upgrade is
// A->30 (cost 14, 50 bytes). Coarser than the data, still within the budget.
TEST(RecipeSearch, CoarseUnitsNeverExceedTheBudget) {
  const std::vector<int> pick = choose_min_cost(hand_items(), 60, 4);
  EXPECT_EQ(pick, (std::vector<int>{2, 0, 0}));
  uint64_t bytes = 0;
  for (size_t i = 0; i < pick.size(); ++i) bytes += hand_items()[i][static_cast<size_t>(pick[i])].bytes;
  EXPECT_LE(bytes, 60u);
}

TensorSensitivity tensor(const std::string& name, double kld_q4, double kld_q8) {
  TensorSensitivity t;
  t.name = name;
  tensor_kind(name, &t.kind, &t.layer);
  t.n_in = 256;
  t.n_out = 256;
  TypeCost a, b;
  a.type = TensorType::Q4_0, a.bytes = 36864, a.kld = kld_q4;
  b.type = TensorType::Q8_0, b.bytes = 69632, b.kld = kld_q8;
  t.costs = {a, b};
  return t;
}

// q4_0 KLDs (x 1e-4): attn_q 1, 1, 1, 1 (median 1); ffn_down 10, 1, 1.2, 0.8 (median (1 + 1.2) / 2
// = 1.1: layer 0's is 9.1x it); token_embd 50 has no peers. Layer sums 11, 2, 2.2, 1.8: median 2.1,
// layer 0 at 5.2x. The reference type is q4_0 (4.5 bits per weight < q8_0's 8.5).
TEST(RecipeSearch, AbnormalTensorsAndLayersByHand) {
  SensitivityTable t;
  t.tensors.push_back(tensor("token_embd.weight", 50e-4, 1e-4));
  const double down[] = {10, 1, 1.2, 0.8};
  for (int l = 0; l < 4; ++l) {
    t.tensors.push_back(tensor("blk." + std::to_string(l) + ".attn_q.weight", 1e-4, 0.1e-4));
    t.tensors.push_back(tensor("blk." + std::to_string(l) + ".ffn_down.weight", down[l] * 1e-4, 0.1e-4));
  }
  const AbnormalReport r = find_abnormal(t);
  EXPECT_EQ(r.reference, TensorType::Q4_0);
  ASSERT_EQ(r.tensors.size(), 1u);
  EXPECT_EQ(r.tensors[0].name, "blk.0.ffn_down.weight");
  EXPECT_NEAR(r.tensors[0].median, 1.1e-4, 1e-12);
  ASSERT_EQ(r.layers.size(), 1u);
  EXPECT_EQ(r.layers[0].layer, 0);
  EXPECT_NEAR(r.layers[0].kld, 11e-4, 1e-12);
  EXPECT_NEAR(r.layers[0].median, 2.1e-4, 1e-12);
  ASSERT_EQ(r.layer_kld.size(), 4u);
  EXPECT_NEAR(r.layer_kld[3], 1.8e-4, 1e-12);
}

test::SyntheticModelSpec small_model() {
  test::SyntheticModelSpec s;
  s.n_vocab = 128;
  s.n_embd = 256;
  s.n_layer = 2;
  s.n_ff = 512;
  s.n_head = 4;
  s.n_head_kv = 2;
  s.tied = true;
  s.seed = 9;
  return s;
}

std::vector<int32_t> random_tokens(size_t n, int32_t n_vocab) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int32_t> d(3, n_vocab - 1);
  std::vector<int32_t> t(n);
  for (auto& v : t) v = d(rng);
  return t;
}

// The planned size is the written size; Q4_K_M as a target is a real Q4_K_M file's size.
TEST(RecipeSearch, PlannedSizeIsTheWrittenSize) {
  const std::string dir = test::temp_dir();
  const std::string in = dir + "/recipe-in.gguf";
  test::write_synthetic_model(small_model(), in);
  auto model = Model::from_gguf(gguf::GgufFile::open(in));
  SensitivityParams sp;
  sp.types = {TensorType::Q4_0, TensorType::Q4_K, TensorType::Q6_K, TensorType::Q8_0};
  sp.measure = {TensorType::Q4_K};
  sp.eval.n_ctx = 16;
  sp.eval.n_threads = 2;
  const std::vector<int32_t> tokens = random_tokens(48, 128);
  const SensitivityTable table = measure_sensitivity(*model, tokens, true, 1, sp);
  ASSERT_EQ(table.tensors.size(), 15u);  // token_embd (tied head) + 2 x 7
  for (const auto& t : table.tensors) {
    for (const auto& c : t.costs) EXPECT_EQ(c.measured, c.type == TensorType::Q4_K) << t.name;
  }

  QuantizeParams qp;
  qp.ftype = FileType::kMostlyQ4_K_M;
  const auto f = gguf::GgufFile::open(in);
  for (const SizeTarget& target : {parse_target_size("Q4_K_M"), parse_target_bpw("5.5"), parse_target_size("800K")}) {
    const MixedRecipePlan plan = plan_mixed_recipe(*f, table, qp, target);
    QuantizeParams wp = qp;
    wp.tensor_types = plan.tensor_types;
    const std::string out = dir + "/recipe-out.gguf";
    const QuantizeSummary s = quantize_model(in, out, wp);
    EXPECT_EQ(s.file_bytes, plan.file_bytes);
    EXPECT_EQ(std::filesystem::file_size(out), plan.file_bytes);
    EXPECT_EQ(s.bytes_out, plan.tensor_bytes);
    if (target.kind == SizeTarget::Kind::kBitsPerWeight) {
      EXPECT_LE(s.bits_per_weight(), 5.5);
    } else {
      EXPECT_LE(plan.file_bytes, plan.target_file_bytes);
    }
    if (target.kind == SizeTarget::Kind::kFileType) {
      const std::string yard = dir + "/recipe-q4km.gguf";
      EXPECT_EQ(quantize_model(in, yard, qp).file_bytes, plan.target_file_bytes);
    }
  }
  // A table for another model is refused.
  SensitivityTable other = table;
  other.tensors[3].n_in = 512;
  EXPECT_THROW(plan_mixed_recipe(*f, other, qp, parse_target_size("Q4_K_M")), Error);
  EXPECT_THROW(parse_target_size("12Q"), Error);
  EXPECT_THROW(parse_target_bpw("0"), Error);
}

// One matrix's KLD by the swap against the perplexity tool's measurement of a file holding only
// that matrix quantized. The tool's base file stores log-probs rounded to uint16 over 40 nats
// (<= 3e-4 nats each, eval/logprob_file.h): measured 1.08605e-3 vs 1.08604e-3 (blk.1.ffn_down) and
// 2.03616e-2 vs 2.03618e-2 (the tied token_embd: embeddings and head), 1e-5 relative.
TEST(RecipeSearch, SwappedMatrixKldEqualsAQuantizedFilesKld) {
  const std::string dir = test::temp_dir();
  const std::string in = dir + "/sens-in.gguf";
  test::write_synthetic_model(small_model(), in);
  auto model = Model::from_gguf(gguf::GgufFile::open(in));
  const std::vector<int32_t> tokens = random_tokens(64, 128);
  eval::EvalParams ep;
  ep.n_ctx = 32;
  ep.n_threads = 2;
  ep.kv_type = TensorType::F32;

  // Logits before, to check the model is left as it was.
  const auto first_logits = [&]() {
    ContextParams cp;
    cp.n_ctx = 8;
    Context ctx(*model, cp);
    Batch b;
    b.add(0, 5, 0, true);
    ctx.decode(b);
    return std::vector<float>(ctx.logits(0), ctx.logits(0) + 128);
  };
  const std::vector<float> before = first_logits();

  SensitivityParams sp;
  sp.types = {TensorType::Q4_0};
  sp.eval = ep;
  const SensitivityTable table = measure_sensitivity(*model, tokens, true, 1, sp);
  EXPECT_EQ(first_logits(), before);

  const std::string base = dir + "/sens-base.kld";
  eval::compute_perplexity_and_save_base(*model, tokens, ep, true, 1, base);
  for (const char* name : {"blk.1.ffn_down.weight", "token_embd.weight"}) {
    const TensorSensitivity* ts = nullptr;
    for (const auto& t : table.tensors) {
      if (t.name == name) ts = &t;
    }
    ASSERT_NE(ts, nullptr) << name;
    QuantizeParams qp;
    qp.ftype = FileType::kAllF32;  // every other tensor stays F32
    qp.tensor_types[name] = TensorType::Q4_0;
    const std::string out = dir + "/sens-one.gguf";
    quantize_model(in, out, qp);
    auto one = Model::load(out);
    const eval::KlResult r = eval::compute_kl_divergence(*one, base, ep);
    std::printf("  %s q4_0: KLD by swap %.6g, by file %.6g\n", name, ts->costs[0].kld, r.stats.kld_mean);
    EXPECT_NEAR(ts->costs[0].kld, r.stats.kld_mean, 1e-7 + 1e-4 * r.stats.kld_mean) << name;
    EXPECT_GT(ts->costs[0].kld, 1e-5) << name;  // a real difference, not two zeros
  }
}

}  // namespace
}  // namespace edgellm::quant
