// vocab_data_from_gguf on synthetic GGUF images written with GgufWriter: defaults, special-id
// handling, and clean errors for missing / malformed / unsupported tokenizer metadata.
#include <gtest/gtest.h>

#include "core/error.h"
#include "gguf/gguf_writer.h"
#include "tokenizer_test_util.h"

namespace edgellm {
namespace {

gguf::GgufWriter base_writer(const std::string& model) {
  gguf::GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_string("tokenizer.ggml.model", model);
  w.set_array_string("tokenizer.ggml.tokens", std::vector<std::string>{"<unk>", "<s>", "</s>", "a", "b", "ab"});
  w.set_array_f32("tokenizer.ggml.scores", {0, 0, 0, -1, -1, -0.5f});
  w.set_array_i32("tokenizer.ggml.token_type", {2, 3, 3, 1, 1, 1});
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_u32("tokenizer.ggml.eos_token_id", 2);
  w.set_u32("tokenizer.ggml.padding_token_id", 0xFFFFFFFFu);
  return w;
}

std::unique_ptr<Tokenizer> load(gguf::GgufWriter& w) {
  const std::vector<uint8_t> bytes = w.write_to_bytes();
  auto file = gguf::GgufFile::from_bytes(bytes.data(), bytes.size());
  return Tokenizer::from_gguf(*file);
}

void expect_load_error(gguf::GgufWriter& w, ErrorCode code, const std::string& needle) {
  try {
    load(w);
    ADD_FAILURE() << "accepted; expected an error mentioning " << needle;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(GgufVocabData, SpmDefaults) {
  auto w = base_writer("llama");
  const auto tok = load(w);
  EXPECT_TRUE(tok->is_spm());
  EXPECT_TRUE(tok->add_bos());
  EXPECT_TRUE(tok->strips_leading_space());
  EXPECT_EQ(tok->pad(), -1);
  EXPECT_EQ(tok->unk(), -1);  // no unknown_token_id key
  // "ab" has the better score: one token. The prefix "▁" has no token, no byte token and no
  // unk id here, so it is dropped.
  EXPECT_EQ(tok->encode("ab", true, false), (std::vector<int32_t>{1, 5}));
  w.set_bool("tokenizer.ggml.add_bos_token", false);
  w.set_bool("tokenizer.ggml.add_space_prefix", false);
  w.set_u32("tokenizer.ggml.unknown_token_id", 0);
  const auto tok2 = load(w);
  EXPECT_FALSE(tok2->add_bos());
  EXPECT_FALSE(tok2->strips_leading_space());
  EXPECT_EQ(tok2->encode("abc", true, false), (std::vector<int32_t>{5, 0}));  // c -> unk
}

TEST(GgufVocabData, BpeNeedsMerges) {
  auto w = base_writer("gpt2");
  expect_load_error(w, ErrorCode::kInvalidFile, "tokenizer.ggml.merges");
  w.set_array_string("tokenizer.ggml.merges", std::vector<std::string>{"a b"});
  w.set_string("tokenizer.ggml.pre", "qwen2");
  const auto tok = load(w);
  EXPECT_FALSE(tok->is_spm());
  EXPECT_FALSE(tok->add_bos());
  EXPECT_EQ(tok->pretokenizer(), PreTokenizerKind::kQwen2);
  EXPECT_EQ(tok->encode("ab", true, false), (std::vector<int32_t>{5}));
}

TEST(GgufVocabData, Errors) {
  {
    gguf::GgufWriter w;
    w.set_string("general.architecture", "llama");
    expect_load_error(w, ErrorCode::kInvalidFile, "tokenizer.ggml.model");
  }
  {
    auto w = base_writer("t5");
    expect_load_error(w, ErrorCode::kUnsupported, "'t5'");
  }
  {
    auto w = base_writer("llama");
    w.remove("tokenizer.ggml.tokens");
    expect_load_error(w, ErrorCode::kInvalidFile, "tokenizer.ggml.tokens");
  }
  {
    auto w = base_writer("llama");
    w.set_array_f32("tokenizer.ggml.scores", {0, 0});
    expect_load_error(w, ErrorCode::kInvalidFile, "scores count 2");
  }
  {
    auto w = base_writer("llama");
    w.set_array_i32("tokenizer.ggml.token_type", {2, 3, 3, 1, 77, 1});
    expect_load_error(w, ErrorCode::kInvalidFile, "token 4 ('b')");
  }
  {
    auto w = base_writer("gpt2");
    w.set_array_string("tokenizer.ggml.merges", std::vector<std::string>{"a b"});
    w.set_string("tokenizer.ggml.pre", "chameleon");
    expect_load_error(w, ErrorCode::kUnsupported, "chameleon");
  }
  {
    auto w = base_writer("llama");
    w.set_string("tokenizer.ggml.tokens", "not an array");
    expect_load_error(w, ErrorCode::kInvalidFile, "tokenizer.ggml.tokens");
  }
}

}  // namespace
}  // namespace edgellm
