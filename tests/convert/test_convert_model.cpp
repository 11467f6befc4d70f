// `edgellm convert` end to end: tiny Hugging Face checkpoints written by the test
// (support/hf_checkpoint.h: random weights in safetensors, the real Qwen3 / Llama 3 tokenizer
// files, sharded and BF16 / F16 variants) are converted, loaded by the engine, and their logits
// compared with the transformers forward pass computed in double precision from the
// safetensors values (naive_hf_logits: HF names, HF row order, rotate_half RoPE). A wrong Q/K
// reorder, a wrong tensor mapping, a dropped bias or norm, a wrong RoPE or eps key all change the
// logits by O(1).
//
// BERT (BertConvert.*): tiny BertModel / BertForMaskedLM checkpoints (support/hf_bert_checkpoint.h)
// are converted and run through the engine's Embedder; the pooled embeddings are compared with a
// naive transformers BertModel forward in double precision over the safetensors values, and the
// converted WordPiece tokenizers with a naive WordPiece and with the Hugging Face ids of
// llama.cpp's BGE vocabulary test file.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "chat/chat_prompt.h"
#include "chat/chat_template.h"
#include "core/error.h"
#include "core/json.h"
#include "engine/batch.h"
#include "engine/context.h"
#include "engine/embedder.h"
#include "generation/chat_session.h"
#include "gguf/gguf_reader.h"
#include "model/model.h"
#include "support/hf_bert_checkpoint.h"
#include "support/hf_checkpoint.h"
#include "support/test_env.h"
#include "tokenizer/tokenizer.h"
#include "tools/convert/convert_model.h"
#include "tools/quant/quantize_model.h"

namespace edgellm {
namespace {

using test::TinySpec;

// Tolerances, as the largest |logit - reference| over all positions and vocabulary entries,
// divided by the reference logits' RMS. Measured (this host, AVX-512):
//   F32 weights: 1.1e-6 .. 3.0e-6 (float accumulation in the engine)      -> 3e-5
//   F16 / BF16 weights (exact in the file, F16/BF16 x F32 kernels):
//                2.3e-6 .. 1.9e-3 (BF16 kernels round activations to BF16) -> 2e-2
// see the numbers printed by each test.
constexpr double kF32Tolerance = 3e-5;
constexpr double kHalfTolerance = 2e-2;
// Q8_0 weights (and Q8_0 activations), as rms(diff) / rms(reference): measured 0.041 on this
// 3-layer random model (its attention amplifies weight noise ~10x; Q6_K gave 0.18, Q4_K_M 0.34).
constexpr double kQ8Tolerance = 0.1;

struct Comparison {
  double worst = 0;    // max |diff| / rms(reference), over positions
  double rel_rms = 0;  // rms(diff) / rms(reference), the worst position
};

std::vector<int32_t> test_tokens(int64_t n_vocab) {
  std::vector<int32_t> t;
  for (int i = 0; i < 9; ++i) t.push_back(static_cast<int32_t>((i * 7919 + 13) % n_vocab));
  return t;
}

Comparison compare_with_engine(const std::string& gguf_path, const test::TinyCheckpoint& ck) {
  const auto model = Model::load(gguf_path);
  ContextParams cp;
  cp.n_ctx = 64;
  cp.n_threads = 1;
  cp.kv_type = TensorType::F32;
  Context ctx(*model, cp);
  const std::vector<int32_t> tokens = test_tokens(ck.spec.vocab);
  Batch b;
  for (size_t i = 0; i < tokens.size(); ++i) b.add(0, tokens[i], static_cast<int32_t>(i), true);
  ctx.decode(b);
  const auto ref = test::naive_hf_logits(ck, tokens);
  Comparison c;
  for (size_t t = 0; t < tokens.size(); ++t) {
    const float* got = ctx.logits(static_cast<int32_t>(t));
    double ss = 0, sd = 0, worst = 0;
    for (size_t v = 0; v < ref[t].size(); ++v) {
      ss += ref[t][v] * ref[t][v];
      sd += (got[v] - ref[t][v]) * (got[v] - ref[t][v]);
      worst = std::max(worst, std::fabs(got[v] - ref[t][v]));
    }
    const double rms = std::sqrt(ss / static_cast<double>(ref[t].size()));
    c.worst = std::max(c.worst, worst / rms);
    c.rel_rms = std::max(c.rel_rms, std::sqrt(sd / ss));
  }
  return c;
}

convert::ConvertSummary convert_quietly(const std::string& dir, const std::string& out,
                                        const std::string& type = "auto",
                                        std::vector<std::string>* warnings = nullptr) {
  convert::ConvertParams p;
  p.type = type;
  p.n_threads = 2;
  p.on_warning = [&](const std::string& w) {
    if (warnings) warnings->push_back(w);
  };
  return convert::convert_hf_model(dir, out, p);
}

std::string dir_for(const std::string& name) {
  return test::temp_dir() + "/" + name;
}

// The converted tokenizer passes shared/testdata/tokenizers/<family>/encode-cases.jsonl (ids of
// the Hugging Face tokenizers library) and its chat template renders chat-cases.jsonl exactly as
// transformers renders it.
void check_tokenizer_cases(const std::string& gguf_path, const std::string& family) {
  const auto file = gguf::GgufFile::open(gguf_path);
  const auto tok = Tokenizer::from_gguf(*file);
  std::istringstream enc(test::read_file(test::shared_testdata("tokenizers/" + family + "/encode-cases.jsonl")));
  std::string line;
  int n = 0;
  while (std::getline(enc, line)) {
    if (line.empty()) continue;
    const Json c = Json::parse(line);
    std::vector<int32_t> want;
    for (const Json& id : c.at("ids").as_array()) want.push_back(static_cast<int32_t>(id.as_int()));
    EXPECT_EQ(tok->encode(c.at("text").as_string(), false, true), want) << family << ": " << line;
    ++n;
  }
  EXPECT_GE(n, 19) << family;
  const ChatTemplate tmpl = select_chat_template(*file, *tok, "", nullptr, nullptr);
  std::istringstream chat(test::read_file(test::shared_testdata("tokenizers/" + family + "/chat-cases.jsonl")));
  int m = 0;
  while (std::getline(chat, line)) {
    if (line.empty()) continue;
    const Json c = Json::parse(line);
    EXPECT_EQ(tmpl.render(c.at("messages"), c.at("add_generation_prompt").as_bool()), c.at("rendered").as_string())
        << family << " chat case " << m;
    ++m;
  }
  EXPECT_GT(m, 0) << family;
}

// ---------------------------------------------------------------- logits against the reference

TEST(ConvertModel, Qwen3Bf16WithTheRealTokenizerAndItsCases) {
  TinySpec s;
  s.arch = "qwen3";
  s.dtype = "BF16";
  s.vocab = 151936;  // Qwen3's padded embedding rows (151669 tokens)
  s.embd = 32;
  s.heads = 4;
  s.kv_heads = 2;
  s.head_dim = 16;  // != embd / heads, as in Qwen3-0.6B (1024 / 16 = 64, head_dim 128)
  s.tied = true;
  s.rope_theta = 1e6;
  s.tokenizer = "qwen3";
  const auto ck = test::write_tiny_checkpoint(s, dir_for("qwen3"));
  const std::string out = dir_for("qwen3.gguf");
  const auto sum = convert_quietly(ck.dir, out);
  EXPECT_EQ(sum.arch, "qwen3");
  EXPECT_EQ(sum.ftype, quant::FileType::kMostlyBF16);  // auto keeps a BF16 checkpoint BF16
  EXPECT_EQ(sum.tokenizer_pre, "qwen2");
  EXPECT_EQ(sum.n_vocab, 151936);
  const auto f = gguf::GgufFile::open(out);
  EXPECT_EQ(f->find_tensor("output.weight"), nullptr);  // tied: the embeddings are the head
  EXPECT_EQ(f->find_tensor("token_embd.weight")->type, TensorType::BF16);
  EXPECT_EQ(f->find_tensor("blk.0.attn_q_norm.weight")->type, TensorType::F32);
  EXPECT_EQ(f->get_int("qwen3.attention.key_length"), std::optional<int64_t>(16));
  const Comparison c = compare_with_engine(out, ck);
  std::printf("qwen3 bf16: worst |diff| / rms = %.3g\n", c.worst);
  EXPECT_LT(c.worst, kHalfTolerance);
  check_tokenizer_cases(out, "qwen3");
}

TEST(ConvertModel, Llama3ShardedF16WithRopeScalingAndTheRealTokenizerAndItsCases) {
  TinySpec s;
  s.arch = "llama";
  s.dtype = "F16";
  s.vocab = 128256;
  s.embd = 32;
  s.heads = 2;
  s.kv_heads = 1;  // GQA: the K reorder uses the KV head count
  s.tied = false;
  s.rope_theta = 500000;
  // Llama 3.1's scaling with an original context short enough that every regime (kept,
  // interpolated, divided) occurs among the 8 frequencies of a 16-wide head.
  s.rope_scaling_json =
      R"({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 64})";
  s.shards = 3;
  s.tokenizer = "llama3";
  const auto ck = test::write_tiny_checkpoint(s, dir_for("llama3"));
  const std::string out = dir_for("llama3.gguf");
  const auto sum = convert_quietly(ck.dir, out, "f32");
  EXPECT_EQ(sum.arch, "llama");
  EXPECT_EQ(sum.tokenizer_pre, "llama-bpe");
  const auto f = gguf::GgufFile::open(out);
  ASSERT_NE(f->find_tensor("rope_freqs.weight"), nullptr);
  ASSERT_NE(f->find_tensor("output.weight"), nullptr);
  EXPECT_EQ(f->get_int("llama.rope.dimension_count"), std::optional<int64_t>(16));
  EXPECT_EQ(f->get_int("llama.vocab_size"), std::optional<int64_t>(128256));
  const Comparison c = compare_with_engine(out, ck);
  std::printf("llama3 f16 sharded -> f32: worst |diff| / rms = %.3g\n", c.worst);
  EXPECT_LT(c.worst, kF32Tolerance);
  check_tokenizer_cases(out, "llama3");
}

TEST(ConvertModel, Qwen2F32WithBiasesAndLinearScaling) {
  TinySpec s;
  s.arch = "qwen2";
  s.dtype = "F32";
  s.vocab = 300;
  s.tied = true;
  s.rope_scaling_json = R"({"type": "linear", "factor": 2.5})";
  const auto ck = test::write_tiny_checkpoint(s, dir_for("qwen2"));
  const std::string out = dir_for("qwen2.gguf");
  const auto sum = convert_quietly(ck.dir, out, "f32");
  EXPECT_EQ(sum.tokenizer_pre, "gpt-2");
  const auto f = gguf::GgufFile::open(out);
  EXPECT_EQ(f->get_string("qwen2.rope.scaling.type"), std::optional<std::string>("linear"));
  ASSERT_NE(f->find_tensor("blk.1.attn_v.bias"), nullptr);
  const Comparison c = compare_with_engine(out, ck);
  std::printf("qwen2 f32: worst |diff| / rms = %.3g\n", c.worst);
  EXPECT_LT(c.worst, kF32Tolerance);
}

TEST(ConvertModel, LlamaWithoutScalingBf16ToF16) {
  TinySpec s;
  s.arch = "llama";
  s.dtype = "BF16";
  s.heads = 8;
  s.kv_heads = 8;  // MHA: K reordered with its own head count
  s.tied = true;   // Llama 3.2 1B ties its head
  const auto ck = test::write_tiny_checkpoint(s, dir_for("llama-mha"));
  const std::string out = dir_for("llama-mha.gguf");
  convert_quietly(ck.dir, out, "f32");
  const Comparison c = compare_with_engine(out, ck);
  std::printf("llama bf16 mha: worst |diff| / rms = %.3g\n", c.worst);
  EXPECT_LT(c.worst, kF32Tolerance);
}

// Quantizing on the way is the same as converting to F32 and then running `edgellm quantize`:
// the same recipe decisions and the same bytes, tensor by tensor.
TEST(ConvertModel, TypeQuantizesLikeTheQuantizer) {
  TinySpec s;
  s.arch = "qwen2";
  s.embd = 256;
  s.ffn = 512;
  s.vocab = 512;
  s.heads = 4;
  s.kv_heads = 2;
  s.layers = 3;
  const auto ck = test::write_tiny_checkpoint(s, dir_for("qwen2-q"));
  const std::string f32 = dir_for("qwen2-q-f32.gguf");
  const std::string direct = dir_for("qwen2-q4km.gguf");
  const std::string two_step = dir_for("qwen2-q4km-2.gguf");
  convert_quietly(ck.dir, f32, "f32");
  const auto sum = convert_quietly(ck.dir, direct, "Q4_K_M");
  EXPECT_EQ(sum.ftype, quant::FileType::kMostlyQ4_K_M);
  quant::QuantizeParams qp;
  qp.ftype = quant::FileType::kMostlyQ4_K_M;
  quant::quantize_model(f32, two_step, qp);
  const auto a = gguf::GgufFile::open(direct);
  const auto b = gguf::GgufFile::open(two_step);
  ASSERT_EQ(a->tensors().size(), b->tensors().size());
  size_t k_quants = 0;
  for (size_t i = 0; i < a->tensors().size(); ++i) {
    const auto& ta = a->tensors()[i];
    const auto& tb = b->tensors()[i];
    EXPECT_EQ(ta.name, tb.name);
    EXPECT_EQ(ta.type, tb.type) << ta.name;
    ASSERT_EQ(ta.n_bytes, tb.n_bytes) << ta.name;
    EXPECT_EQ(std::memcmp(ta.data, tb.data, ta.n_bytes), 0) << ta.name;
    k_quants += ta.type == TensorType::Q4_K || ta.type == TensorType::Q6_K;
  }
  EXPECT_GT(k_quants, 0u);
  // A quantized conversion still follows the reference: Q8_0 rounding error, not a wrong mapping
  // (uncorrelated logits of the same scale are ~1.4 apart in this measure).
  const std::string q8 = dir_for("qwen2-q8_0.gguf");
  convert_quietly(ck.dir, q8, "q8_0");
  const Comparison c = compare_with_engine(q8, ck);
  std::printf("qwen2 q8_0: rms(diff) / rms = %.3g\n", c.rel_rms);
  EXPECT_LT(c.rel_rms, kQ8Tolerance);
}

// ---------------------------------------------------------------- real trained models, round trip

// stories260K (SentencePiece, space prefix) and tiny-zh-poems (character-level with byte
// fallback, no space prefix, tied head): written back in HF layout by the test
// (write_hf_from_gguf: HF names, HF Q/K order, a SentencePiece-style tokenizer.json built as
// transformers builds one from tokenizer.model) and converted again. Every tensor must come back
// bit for bit (the Q/K reorder is the inverse of the test's), the vocabulary with the same tokens
// and types, and the converted tokenizer must encode the reference prompts (made by an
// established engine from the original file) to their ids.
TEST(ConvertModel, RealModelsRoundTripThroughHuggingFaceLayout) {
  for (const std::string name : {"stories260K", "tiny-zh-poems"}) {
    const std::string original = test::shared_model(name + ".gguf");
    const std::string hf = dir_for("rt-" + name);
    test::write_hf_from_gguf(original, hf);
    const std::string out = dir_for("rt-" + name + ".gguf");
    convert_quietly(hf, out, "f32");
    const auto a = gguf::GgufFile::open(original);
    const auto b = gguf::GgufFile::open(out);
    ASSERT_EQ(a->tensors().size(), b->tensors().size()) << name;
    for (const auto& ta : a->tensors()) {
      const auto* tb = b->find_tensor(ta.name);
      ASSERT_NE(tb, nullptr) << name << " " << ta.name;
      ASSERT_EQ(ta.n_bytes, tb->n_bytes) << ta.name;
      EXPECT_EQ(std::memcmp(ta.data, tb->data, ta.n_bytes), 0) << name << " " << ta.name;
    }
    EXPECT_EQ(*a->get_string_array("tokenizer.ggml.tokens"), *b->get_string_array("tokenizer.ggml.tokens")) << name;
    EXPECT_EQ(*a->get_int_array("tokenizer.ggml.token_type"), *b->get_int_array("tokenizer.ggml.token_type")) << name;
    const auto tok = Tokenizer::from_gguf(*b);
    std::istringstream ref(test::read_file(test::shared_testdata("reference/" + name + "-greedy.jsonl")));
    std::string line;
    int n = 0;
    while (std::getline(ref, line)) {
      if (line.empty()) continue;
      const Json c = Json::parse(line);
      std::vector<int32_t> want;
      for (const Json& id : c.at("prompt_ids").as_array()) want.push_back(static_cast<int32_t>(id.as_int()));
      EXPECT_EQ(tok->encode(c.at("prompt").as_string(), true, false), want) << name << ": " << line;
      ++n;
    }
    EXPECT_GT(n, 0) << name;
  }
}

// ---------------------------------------------------------------- progress, reports, atomicity

TEST(ConvertModel, ProgressIsMonotonicAndReportsEveryTensor) {
  TinySpec s;
  s.shards = 2;
  const auto ck = test::write_tiny_checkpoint(s, dir_for("progress"));
  convert::ConvertParams p;
  p.chunk_bytes = 4096;  // several chunks per matrix
  std::vector<double> fractions;
  std::vector<std::string> names;
  p.on_progress = [&](double f, std::string_view) { fractions.push_back(f); };
  p.on_tensor = [&](const convert::ConvertedTensor& t) { names.push_back(t.name); };
  const auto sum = convert::convert_hf_model(ck.dir, dir_for("progress.gguf"), p);
  ASSERT_GE(fractions.size(), sum.n_tensors);
  EXPECT_EQ(fractions.front(), 0.0);
  EXPECT_EQ(fractions.back(), 1.0);
  for (size_t i = 1; i < fractions.size(); ++i) EXPECT_GE(fractions[i], fractions[i - 1]);
  EXPECT_EQ(names.size(), sum.n_tensors);
  EXPECT_EQ(names.front(), "token_embd.weight");
  EXPECT_EQ(names.back(), "output.weight");
}

TEST(ConvertModel, AFailureLeavesTheOutputAsItWas) {
  TinySpec s;
  const auto ck = test::write_tiny_checkpoint(s, dir_for("atomic"));
  const std::string out = dir_for("atomic.gguf");
  {
    std::ofstream o(out);
    o << "previous content";
  }
  convert::ConvertParams p;
  p.on_tensor = [](const convert::ConvertedTensor& t) {
    if (t.index == 3) throw Error(ErrorCode::kIo, "injected write failure");
  };
  EXPECT_THROW(convert::convert_hf_model(ck.dir, out, p), Error);
  EXPECT_EQ(test::read_file(out), "previous content");
  EXPECT_FALSE(test::temp_file_left(out));

  std::atomic<bool> cancel{true};
  p.on_tensor = nullptr;
  p.cancel = &cancel;
  try {
    convert::convert_hf_model(ck.dir, out, p);
    FAIL() << "not cancelled";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCancelled);
  }
  EXPECT_EQ(test::read_file(out), "previous content");
  EXPECT_FALSE(test::temp_file_left(out));
}

TEST(ConvertModel, ATiedHeadInTheCheckpointIsSkippedWithAWarning) {
  TinySpec s;
  const auto ck = test::write_tiny_checkpoint(s, dir_for("tied-present"));
  // Same weights, but config.json says tied: transformers runs the embeddings as the head.
  TinySpec tied = s;
  tied.tied = true;
  std::ofstream(ck.dir + "/config.json") << test::tiny_config_json(tied);
  std::vector<std::string> warnings;
  convert_quietly(ck.dir, dir_for("tied-present.gguf"), "f32", &warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("lm_head.weight"), std::string::npos) << warnings[0];
  const auto f = gguf::GgufFile::open(dir_for("tied-present.gguf"));
  EXPECT_EQ(f->find_tensor("output.weight"), nullptr);
}

// ---------------------------------------------------------------- BERT

// Relative L2 error ||got - want|| / ||want|| of pooled embeddings (unnormalised), worst input.
// Measured (AMD EPYC; EDGELLM_ISA avx512 / avx2 / scalar; printed by each test):
//   F32 file (from F32, F16 or BF16 checkpoints): 1.0e-7 .. 2.9e-7                  -> bound 3e-6
//   F16 / BF16 file (auto): 2.9e-7 .. 8.2e-7 (the half weights are exact; the
//   encoder's half kernels accumulate in F32)                                        -> bound 1e-5
//   Q8_0 file: 0.0154 (weight rounding; the same on every ISA)                       -> bound 5e-2
// A wrong eps, a dropped token-type row or a swapped LayerNorm moves it to 1e-3 .. 1
// (docs/testing.md, mutations).
constexpr double kBertF32Tolerance = 3e-6;
constexpr double kBertHalfTolerance = 1e-5;
constexpr double kBertQ8Tolerance = 5e-2;

const std::vector<std::string> kBertTexts = {"the cat sat on the mat.", "Hello, world! the quick brown fox",
                                             "unhappy dogs playing", "it is a model, it runs on a phone",
                                             "zzz qqq the"};

std::vector<double> naive_pooled(const test::TinyBertCheckpoint& ck, const EmbedInput& in, PoolingType p) {
  const auto h = test::naive_bert_hidden(ck, in.tokens, in.types);
  std::vector<double> out(h[0].size(), 0.0);
  if (p == PoolingType::kCls) return h[0];
  for (const auto& row : h) {
    for (size_t i = 0; i < out.size(); ++i) out[i] += row[i] / static_cast<double>(h.size());
  }
  return out;
}

// Embeds every text (and one sentence pair, token types 0 then 1) with the converted file's
// default pooling; returns the worst relative L2 error against the naive forward with `expect`.
double bert_embedding_error(const std::string& gguf_path, const test::TinyBertCheckpoint& ck, PoolingType expect,
                            const char* what) {
  const auto model = Model::load(gguf_path);
  const auto file = gguf::GgufFile::open(gguf_path);
  const auto tok = Tokenizer::from_gguf(*file);
  EmbedderParams ep;
  ep.n_threads = 2;
  Embedder emb(*model, ep);
  EXPECT_EQ(emb.default_pooling(), expect) << what;
  std::vector<EmbedInput> inputs;
  for (const std::string& t : kBertTexts) inputs.push_back(text_input(*tok, t, emb.n_ctx(), Truncation::kRefuse));
  inputs.push_back(pair_input(*tok, "the cat", "a dog sat on the mat", emb.n_ctx(), Truncation::kRefuse));
  EXPECT_NE(std::find(inputs.back().types.begin(), inputs.back().types.end(), 1), inputs.back().types.end());
  std::vector<float> got;
  emb.embed(inputs, PoolingType::kUnspecified, -1, got);
  const size_t dims = static_cast<size_t>(ck.spec.embd);
  EXPECT_EQ(got.size(), inputs.size() * dims);
  double worst = 0;
  for (size_t i = 0; i < inputs.size() && (i + 1) * dims <= got.size(); ++i) {
    const std::vector<double> want = naive_pooled(ck, inputs[i], expect);
    double d = 0, n = 0;
    for (size_t c = 0; c < dims; ++c) {
      d += std::pow(got[i * dims + c] - want[c], 2);
      n += want[c] * want[c];
    }
    worst = std::max(worst, std::sqrt(d / n));
  }
  std::printf("[ measured ] %s: worst relative L2 error %.3g\n", what, worst);
  return worst;
}

TEST(BertConvert, BertModelMeanPoolingF32MatchesTheNaiveForward) {
  test::TinyBertSpec s;
  s.pooling = "mean";
  const auto ck = test::write_tiny_bert_checkpoint(s, dir_for("bert-mean"));
  const std::string out = dir_for("bert-mean.gguf");
  const auto sum = convert_quietly(ck.dir, out, "f32");
  EXPECT_EQ(sum.arch, "bert");
  EXPECT_EQ(sum.hf_class, "BertModel");
  EXPECT_EQ(sum.tokenizer_model, "bert");
  EXPECT_EQ(sum.pooling, "mean");
  const auto f = gguf::GgufFile::open(out);
  EXPECT_EQ(f->get_string("general.architecture"), std::optional<std::string>("bert"));
  EXPECT_EQ(f->get_int("bert.pooling_type"), std::optional<int64_t>(1));
  EXPECT_EQ(f->get_bool("bert.attention.causal"), std::optional<bool>(false));
  EXPECT_EQ(f->get_int("bert.context_length"), std::optional<int64_t>(64));
  ASSERT_TRUE(f->get_float("bert.attention.layer_norm_epsilon").has_value());
  EXPECT_FLOAT_EQ(static_cast<float>(*f->get_float("bert.attention.layer_norm_epsilon")), 1e-2f);
  EXPECT_FALSE(f->get_float("bert.attention.layer_norm_rms_epsilon").has_value());
  EXPECT_FALSE(f->get_float("bert.rope.freq_base").has_value());
  EXPECT_EQ(f->get_int("tokenizer.ggml.token_type_count"), std::optional<int64_t>(2));
  EXPECT_EQ(f->tensors().size(), 5u + 16u * 2u);  // the pooler is left out
  EXPECT_EQ(f->find_tensor("pooler.dense.weight"), nullptr);
  ASSERT_NE(f->find_tensor("token_types.weight"), nullptr);
  EXPECT_EQ(f->find_tensor("position_embd.weight")->ne[1], 64);

  // The converted tokenizer against the naive WordPiece, [CLS] ... [SEP] added.
  const auto tok = Tokenizer::from_gguf(*f);
  for (const std::string& t : kBertTexts) {
    std::vector<int32_t> want = {2};
    for (int32_t id : test::naive_wordpiece(ck.vocab, t, true)) want.push_back(id);
    want.push_back(3);
    EXPECT_EQ(tok->encode(t, true, false), want) << t;
  }
  EXPECT_LT(bert_embedding_error(out, ck, PoolingType::kMean, "bert f32 mean"), kBertF32Tolerance);

  // --type quantizes on the way (position and token-type rows stay as they are, as llama.cpp).
  const std::string q8 = dir_for("bert-mean-q8.gguf");
  convert_quietly(ck.dir, q8, "q8_0");
  const auto fq = gguf::GgufFile::open(q8);
  EXPECT_EQ(fq->find_tensor("blk.0.attn_q.weight")->type, TensorType::Q8_0);
  EXPECT_EQ(fq->find_tensor("blk.1.ffn_down.weight")->type, TensorType::Q8_0);
  EXPECT_EQ(fq->find_tensor("position_embd.weight")->type, TensorType::F32);
  EXPECT_LT(bert_embedding_error(q8, ck, PoolingType::kMean, "bert q8_0 mean"), kBertQ8Tolerance);
}

TEST(BertConvert, MaskedLmPrefixShardedHalfCheckpointsWithClsPooling) {
  for (const std::string dtype : {"F16", "BF16"}) {
    test::TinyBertSpec s;
    s.dtype = dtype;
    s.masked_lm = true;  // "bert." names, cls.predictions.*, the position_ids buffer
    s.shards = dtype == "F16" ? 3 : 1;
    s.pooling = dtype == "F16" ? "cls-mode" : "cls";
    s.seed = 11;
    const auto ck = test::write_tiny_bert_checkpoint(s, dir_for("bert-mlm-" + dtype));
    // The F32 file holds the half values exactly: the F32 bound applies.
    const std::string f32 = dir_for("bert-mlm-" + dtype + "-f32.gguf");
    const auto sum = convert_quietly(ck.dir, f32, "f32");
    EXPECT_EQ(sum.hf_class, "BertForMaskedLM");
    EXPECT_EQ(sum.pooling, "cls");
    EXPECT_EQ(gguf::GgufFile::open(f32)->tensors().size(), 5u + 16u * 2u) << dtype;  // no cls.predictions
    EXPECT_LT(bert_embedding_error(f32, ck, PoolingType::kCls, ("bert " + dtype + " -> f32 cls").c_str()),
              kBertF32Tolerance);
    // auto keeps the checkpoint's half type for the matrices.
    const std::string half = dir_for("bert-mlm-" + dtype + ".gguf");
    const auto hs = convert_quietly(ck.dir, half, "auto");
    EXPECT_EQ(hs.ftype, dtype == "F16" ? quant::FileType::kMostlyF16 : quant::FileType::kMostlyBF16);
    EXPECT_EQ(gguf::GgufFile::open(half)->find_tensor("blk.0.attn_k.weight")->type,
              dtype == "F16" ? TensorType::F16 : TensorType::BF16);
    EXPECT_LT(bert_embedding_error(half, ck, PoolingType::kCls, ("bert " + dtype + " auto cls").c_str()),
              kBertHalfTolerance);
  }
}

// Old-style BERT directory: vocab.txt and tokenizer_config.json only. The converted tokenizer must
// encode llama.cpp's BGE test strings (ggml-vocab-bert-bge.gguf.inp) to the ids the Hugging Face
// tokenizer gave (.out); with do_lower_case false it must keep case (naive WordPiece, no lower-casing).
TEST(BertConvert, VocabTxtTokenizerGivesTheHuggingFaceIds) {
  test::TinyBertSpec s;
  s.tokenizer = "bge-vocab-txt";
  s.vocab = 30522;
  s.embd = 16;
  s.ffn = 32;
  s.heads = 2;
  s.layers = 1;
  const auto ck = test::write_tiny_bert_checkpoint(s, dir_for("bert-vocab-txt"));
  const std::string out = dir_for("bert-vocab-txt.gguf");
  const auto sum = convert_quietly(ck.dir, out, "f32");
  EXPECT_EQ(sum.n_vocab, 30522);
  EXPECT_EQ(sum.pooling, "");  // no modules.json: nothing declared
  const auto f = gguf::GgufFile::open(out);
  const auto ref = gguf::GgufFile::open(test::shared_testdata("vocab/ggml-vocab-bert-bge.gguf"));
  for (const char* key : {"tokenizer.ggml.unknown_token_id", "tokenizer.ggml.seperator_token_id",
                          "tokenizer.ggml.padding_token_id", "tokenizer.ggml.mask_token_id"}) {
    EXPECT_EQ(f->get_int(key), ref->get_int(key)) << key;
  }
  EXPECT_FALSE(f->get_int("bert.pooling_type").has_value());
  EXPECT_EQ(f->get_bool("tokenizer.ggml.normalizer.lowercase"), std::optional<bool>(true));
  const auto tok = Tokenizer::from_gguf(*f);
  const std::string path = test::shared_testdata("vocab/ggml-vocab-bert-bge.gguf");
  const std::string inp = test::read_file(path + ".inp");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> inputs;
  for (size_t pos = 0, next; (next = inp.find(sep, pos)) != std::string::npos; pos = next + sep.size()) {
    inputs.push_back(inp.substr(pos, next - pos));
  }
  std::istringstream outs(test::read_file(path + ".out"));
  std::string line;
  size_t n = 0;
  for (; n < inputs.size() && std::getline(outs, line); ++n) {
    std::istringstream ids(line);
    std::vector<int32_t> want;
    for (int32_t id; ids >> id;) want.push_back(id);
    EXPECT_EQ(tok->encode(inputs[n], false, false), want) << "case " << n << " '" << inputs[n] << "'";
  }
  EXPECT_GT(n, 40u);
  EXPECT_LT(bert_embedding_error(out, ck, PoolingType::kMean, "bert vocab.txt f32 (default mean)"), kBertF32Tolerance);

  // do_lower_case false: written, and the tokenizer keeps case ("Hello" is not "hello").
  test::TinyBertSpec cased = s;
  cased.do_lower_case = false;
  const auto ck2 = test::write_tiny_bert_checkpoint(cased, dir_for("bert-vocab-txt-cased"));
  const std::string out2 = dir_for("bert-vocab-txt-cased.gguf");
  convert_quietly(ck2.dir, out2, "f32");
  const auto f2 = gguf::GgufFile::open(out2);
  EXPECT_EQ(f2->get_bool("tokenizer.ggml.normalizer.lowercase"), std::optional<bool>(false));
  const auto tok2 = Tokenizer::from_gguf(*f2);
  for (const std::string t : {"Hello World", "hello world", "The Quick brown FOX!"}) {
    EXPECT_EQ(tok2->encode(t, false, false), test::naive_wordpiece(ck2.vocab, t, false)) << t;
  }
  EXPECT_NE(tok2->encode("Hello", false, false), tok2->encode("hello", false, false));
}

}  // namespace
}  // namespace edgellm
