// The type planner: llama.cpp's file types and mixes (Q4_K_M's use_more_bits layers on a 32-layer
// name list), user rules (first match wins) and the fallback for row widths that do not fit.
// Expected layer sets are written out by hand, not computed with the code under test.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "tools/quant/quant_rules.h"

namespace edgellm::quant {
namespace {

TensorDesc matrix(const std::string& name, int64_t n_in, int64_t n_out) {
  TensorDesc d;
  d.name = name;
  d.type = TensorType::F32;
  d.n_dims = 2;
  d.ne[0] = n_in;
  d.ne[1] = n_out;
  return d;
}

TensorDesc vec(const std::string& name, int64_t n) {
  TensorDesc d;
  d.name = name;
  d.n_dims = 1;
  d.ne[0] = n;
  return d;
}

// A Llama-7B-shaped tensor list (dim 4096, FFN 11008 = 43 x 256, 32 layers) in file order.
std::vector<TensorDesc> llama_32_layers(bool with_output) {
  std::vector<TensorDesc> t;
  t.push_back(matrix("token_embd.weight", 4096, 32000));
  for (int i = 0; i < 32; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    t.push_back(vec(p + "attn_norm.weight", 4096));
    t.push_back(matrix(p + "attn_q.weight", 4096, 4096));
    t.push_back(matrix(p + "attn_k.weight", 4096, 4096));
    t.push_back(matrix(p + "attn_v.weight", 4096, 4096));
    t.push_back(matrix(p + "attn_output.weight", 4096, 4096));
    t.push_back(vec(p + "ffn_norm.weight", 4096));
    t.push_back(matrix(p + "ffn_gate.weight", 4096, 11008));
    t.push_back(matrix(p + "ffn_up.weight", 4096, 11008));
    t.push_back(matrix(p + "ffn_down.weight", 11008, 4096));
  }
  t.push_back(vec("output_norm.weight", 4096));
  if (with_output) t.push_back(matrix("output.weight", 4096, 32000));
  return t;
}

std::map<std::string, TensorType> plan(const PlannerOptions& o, const std::vector<TensorDesc>& tensors) {
  TypePlanner p(o, tensors);
  std::map<std::string, TensorType> out;
  for (const auto& t : tensors) out[t.name] = p.decide(t).type;
  return out;
}

// use_more_bits for 32 layers: n/8 = 4, 7n/8 = 28 -> layers 0-3, 28-31, and (i - 4) % 3 == 2.
const std::set<int> kMoreBits32 = {0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31};

TEST(QuantRules, FileTypeNumbersAreLlamaCpps) {
  EXPECT_EQ(static_cast<uint32_t>(file_type_from_name("f32")), 0u);
  EXPECT_EQ(static_cast<uint32_t>(file_type_from_name("F16")), 1u);
  EXPECT_EQ(static_cast<uint32_t>(file_type_from_name("q4_0")), 2u);
  EXPECT_EQ(static_cast<uint32_t>(file_type_from_name("q4_1")), 3u);
  EXPECT_EQ(static_cast<uint32_t>(file_type_from_name("q8_0")), 7u);
  EXPECT_EQ(static_cast<uint32_t>(file_type_from_name("q5_0")), 8u);
  EXPECT_EQ(static_cast<uint32_t>(file_type_from_name("q5_1")), 9u);
  EXPECT_EQ(static_cast<uint32_t>(file_type_from_name("Q4_K_S")), 14u);
  EXPECT_EQ(static_cast<uint32_t>(file_type_from_name("q4_K")), 14u);
  EXPECT_EQ(static_cast<uint32_t>(file_type_from_name("Q4_K_M")), 15u);
  EXPECT_EQ(static_cast<uint32_t>(file_type_from_name("q5_k_s")), 16u);
  EXPECT_EQ(static_cast<uint32_t>(file_type_from_name("Q5_K_M")), 17u);
  EXPECT_EQ(static_cast<uint32_t>(file_type_from_name("q6_K")), 18u);
  EXPECT_EQ(static_cast<uint32_t>(file_type_from_name("bf16")), 32u);
  try {
    file_type_from_name("q3_K_XL");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("q3_K_XL"), std::string::npos);
  }
}

TEST(QuantRules, UseMoreBitsOn32Layers) {
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(TypePlanner::use_more_bits(i, 32), kMoreBits32.count(i) == 1) << "layer " << i;
  }
}

TEST(QuantRules, Q4KMMixOn32Layers) {
  PlannerOptions o;
  o.ftype = FileType::kMostlyQ4_K_M;
  const auto types = plan(o, llama_32_layers(true));
  EXPECT_EQ(types.at("token_embd.weight"), TensorType::Q4_K);
  EXPECT_EQ(types.at("output.weight"), TensorType::Q6_K);
  EXPECT_EQ(types.at("output_norm.weight"), TensorType::F32);
  for (int i = 0; i < 32; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    const TensorType more = kMoreBits32.count(i) ? TensorType::Q6_K : TensorType::Q4_K;
    EXPECT_EQ(types.at(p + "attn_v.weight"), more) << p;
    EXPECT_EQ(types.at(p + "ffn_down.weight"), more) << p;
    EXPECT_EQ(types.at(p + "attn_q.weight"), TensorType::Q4_K) << p;
    EXPECT_EQ(types.at(p + "attn_k.weight"), TensorType::Q4_K) << p;
    EXPECT_EQ(types.at(p + "attn_output.weight"), TensorType::Q4_K) << p;
    EXPECT_EQ(types.at(p + "ffn_gate.weight"), TensorType::Q4_K) << p;
    EXPECT_EQ(types.at(p + "ffn_up.weight"), TensorType::Q4_K) << p;
    EXPECT_EQ(types.at(p + "attn_norm.weight"), TensorType::F32) << p;
  }
}

TEST(QuantRules, Q5KMAndQ4KSMixes) {
  PlannerOptions o;
  o.ftype = FileType::kMostlyQ5_K_M;
  auto types = plan(o, llama_32_layers(true));
  for (int i = 0; i < 32; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    const TensorType more = kMoreBits32.count(i) ? TensorType::Q6_K : TensorType::Q5_K;
    EXPECT_EQ(types.at(p + "attn_v.weight"), more) << p;
    EXPECT_EQ(types.at(p + "ffn_down.weight"), more) << p;
    EXPECT_EQ(types.at(p + "ffn_up.weight"), TensorType::Q5_K) << p;
  }
  // Q4_K_S: attn_v of layers 0-3 and ffn_down of the first 32/8 = 4 layers get Q5_K.
  o.ftype = FileType::kMostlyQ4_K_S;
  types = plan(o, llama_32_layers(true));
  for (int i = 0; i < 32; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    const TensorType want = i < 4 ? TensorType::Q5_K : TensorType::Q4_K;
    EXPECT_EQ(types.at(p + "attn_v.weight"), want) << p;
    EXPECT_EQ(types.at(p + "ffn_down.weight"), want) << p;
  }
  EXPECT_EQ(types.at("output.weight"), TensorType::Q6_K);
}

TEST(QuantRules, OutputTensorRules) {
  PlannerOptions o;
  o.ftype = FileType::kMostlyQ8_0;
  EXPECT_EQ(plan(o, llama_32_layers(true)).at("output.weight"), TensorType::Q8_0);  // Q8_0 keeps Q8_0
  o.ftype = FileType::kMostlyQ4_0;
  auto types = plan(o, llama_32_layers(true));
  EXPECT_EQ(types.at("output.weight"), TensorType::Q6_K);
  EXPECT_EQ(types.at("token_embd.weight"), TensorType::Q4_0);
  EXPECT_EQ(types.at("blk.0.attn_v.weight"), TensorType::Q4_0);  // no mix for Q4_0
  // Tied embeddings: token_embd is the output matrix and gets its treatment.
  o.ftype = FileType::kMostlyQ4_K_M;
  types = plan(o, llama_32_layers(false));
  EXPECT_EQ(types.at("token_embd.weight"), TensorType::Q6_K);
  // --pure: every weight gets the base type.
  o.pure = true;
  types = plan(o, llama_32_layers(true));
  EXPECT_EQ(types.at("output.weight"), TensorType::Q4_K);
  EXPECT_EQ(types.at("blk.0.attn_v.weight"), TensorType::Q4_K);
  // Float recipes have no mix either.
  o.pure = false;
  o.ftype = FileType::kMostlyF16;
  types = plan(o, llama_32_layers(true));
  EXPECT_EQ(types.at("output.weight"), TensorType::F16);
  EXPECT_EQ(types.at("blk.3.ffn_norm.weight"), TensorType::F32);
}

TEST(QuantRules, UserRulesFirstMatchWins) {
  PlannerOptions o;
  o.ftype = FileType::kMostlyQ4_K_M;
  // The seed's "attention 8-bit, FFN 4-bit" mix.
  o.rules.push_back(parse_type_rule("attn_(q|k|v|output)=q8_0"));
  o.rules.push_back(parse_type_rule("ffn_.*=q4_K"));
  o.rules.push_back(parse_type_rule("blk\\.0\\.=f16"));  // never reached for blk.0 attention/FFN
  auto types = plan(o, llama_32_layers(true));
  for (int i = 0; i < 32; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    for (const char* n : {"attn_q", "attn_k", "attn_v", "attn_output"}) {
      EXPECT_EQ(types.at(p + n + ".weight"), TensorType::Q8_0) << p << n;
    }
    for (const char* n : {"ffn_gate", "ffn_up", "ffn_down"}) {
      EXPECT_EQ(types.at(p + n + ".weight"), TensorType::Q4_K) << p << n;
    }
    EXPECT_EQ(types.at(p + "ffn_norm.weight"), TensorType::F32) << p;  // rules never touch 1-D tensors
  }
  EXPECT_EQ(types.at("output.weight"), TensorType::Q6_K);  // no rule matched: the mix decides
  // Order matters: the same rules with the blk.0 rule first.
  o.rules.insert(o.rules.begin(), parse_type_rule("blk\\.0\\.=f16"));
  types = plan(o, llama_32_layers(true));
  EXPECT_EQ(types.at("blk.0.attn_q.weight"), TensorType::F16);
  EXPECT_EQ(types.at("blk.1.attn_q.weight"), TensorType::Q8_0);
}

TEST(QuantRules, RulesFileAndErrors) {
  const auto rules = parse_type_rules("# attention in 8 bits\n\n attn_.*=q8_0 \n# ffn\nffn_down=q6_K\n", "rules.txt");
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[0].pattern, "attn_.*");
  EXPECT_EQ(rules[0].type, TensorType::Q8_0);
  EXPECT_EQ(rules[1].type, TensorType::Q6_K);
  for (const char* bad : {"attn_q", "=q8_0", "attn=q9_9", "attn([=q8_0", "attn=q8_K"}) {
    try {
      parse_type_rule(bad);
      FAIL() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
  try {
    parse_type_rules("a=q8_0\nb=nope\n", "mix.rules");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("mix.rules:2"), std::string::npos) << e.what();
  }
}

TEST(QuantRules, FallbackForNarrowRows) {
  std::string note;
  // stories260K's FFN is 172 wide: neither 256 nor 32 divides it.
  EXPECT_EQ(TypePlanner::fit_to_width(TensorType::Q4_K, 172, &note), TensorType::F16);
  EXPECT_NE(note.find("172"), std::string::npos);
  EXPECT_EQ(TypePlanner::fit_to_width(TensorType::Q4_0, 172, &note), TensorType::F16);
  EXPECT_EQ(TypePlanner::fit_to_width(TensorType::Q8_0, 172, &note), TensorType::F16);
  // 64 wide: 32-block types fit, K-quants fall back as llama.cpp does.
  EXPECT_EQ(TypePlanner::fit_to_width(TensorType::Q4_K, 64, &note), TensorType::Q5_0);
  EXPECT_EQ(TypePlanner::fit_to_width(TensorType::Q5_K, 64, &note), TensorType::Q5_1);
  EXPECT_EQ(TypePlanner::fit_to_width(TensorType::Q6_K, 64, &note), TensorType::Q8_0);
  EXPECT_EQ(TypePlanner::fit_to_width(TensorType::Q4_0, 64, &note), TensorType::Q4_0);
  EXPECT_EQ(TypePlanner::fit_to_width(TensorType::Q6_K, 512, &note), TensorType::Q6_K);

  // In the planner: a rule asking for q4_K on a 172-wide tensor falls back with a note.
  PlannerOptions o;
  o.ftype = FileType::kMostlyQ8_0;
  o.rules.push_back(parse_type_rule("ffn_down=q4_K"));
  const std::vector<TensorDesc> t = {matrix("blk.0.ffn_down.weight", 172, 64), matrix("output.weight", 64, 512)};
  TypePlanner p(o, t);
  const TypeDecision d = p.decide(t[0]);
  EXPECT_EQ(d.type, TensorType::F16);
  EXPECT_TRUE(d.fallback);
  EXPECT_NE(d.reason.find("172"), std::string::npos) << d.reason;
  // Output of width 64 with a K-quant recipe: Q8_0, as llama.cpp does for widths % 256 != 0.
  o.rules.clear();
  o.ftype = FileType::kMostlyQ4_K_M;
  TypePlanner p2(o, t);
  (void)p2.decide(t[0]);
  EXPECT_EQ(p2.decide(t[1]).type, TensorType::Q8_0);
}

}  // namespace
}  // namespace edgellm::quant
