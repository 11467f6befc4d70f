// Tokenizer metadata of synthetic models: a vocab GGUF copied verbatim or padded, and the
// placeholder vocabulary, all loadable by our Tokenizer; the real encodings come from the
// llama.cpp test vectors next to the vocab files.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "support/test_env.h"
#include "tools/synth/synth_vocab.h"
#include "tokenizer/tokenizer.h"

namespace edgellm {
namespace {

std::unique_ptr<gguf::GgufFile> round_trip(gguf::GgufWriter& w) {
  const std::vector<uint8_t> bytes = w.write_to_bytes();
  return gguf::GgufFile::from_bytes(bytes.data(), bytes.size());
}

// First test string of a llama.cpp vocab test file and its expected ids.
void first_case(const std::string& vocab, std::string* text, std::vector<int32_t>* ids) {
  const std::string inp = test::read_file(test::shared_testdata("vocab/" + vocab + ".inp"));
  *text = inp.substr(0, inp.find("\n__ggml_vocab_test__"));
  std::istringstream out(test::read_file(test::shared_testdata("vocab/" + vocab + ".out")));
  std::string line;
  std::getline(out, line);
  std::istringstream nums(line);
  int32_t id = 0;
  while (nums >> id) ids->push_back(id);
}

TEST(SynthVocab, VocabGgufOfTheRightSizeIsCopiedVerbatim) {
  const std::string src = test::shared_testdata("vocab/ggml-vocab-llama-spm.gguf");
  gguf::GgufWriter w;
  synth::write_tokenizer_from_file(w, src, 32000);
  const auto f = round_trip(w);
  const auto original = gguf::GgufFile::open(src);
  size_t n_tokenizer_keys = 0;
  for (const auto& kv : original->metadata()) n_tokenizer_keys += kv.key.substr(0, 10) == "tokenizer.";
  EXPECT_EQ(f->metadata().size(), n_tokenizer_keys);  // nothing but tokenizer.* was copied

  const auto tok = Tokenizer::from_gguf(*f);
  std::string text;
  std::vector<int32_t> ids;
  first_case("ggml-vocab-llama-spm.gguf", &text, &ids);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(tok->encode(text, false, false), ids) << text;
}

TEST(SynthVocab, SmallerVocabularyIsPaddedToTheEmbeddingRows) {
  const std::string src = test::shared_testdata("vocab/ggml-vocab-llama-spm.gguf");
  gguf::GgufWriter w;
  synth::write_tokenizer_from_file(w, src, 32010);
  const auto f = round_trip(w);
  const auto tok = Tokenizer::from_gguf(*f);
  EXPECT_EQ(tok->n_vocab(), 32010);
  EXPECT_EQ(tok->token_to_piece(32009, true), "[PAD32009]");
  std::string text;
  std::vector<int32_t> ids;
  first_case("ggml-vocab-llama-spm.gguf", &text, &ids);
  EXPECT_EQ(tok->encode(text, false, false), ids) << text;
}

TEST(SynthVocab, PlaceholderVocabularyLoadsAndEncodes) {
  gguf::GgufWriter w;
  synth::write_placeholder_vocab(w, 500);
  const auto f = round_trip(w);
  const auto tok = Tokenizer::from_gguf(*f);
  EXPECT_EQ(tok->n_vocab(), 500);
  EXPECT_EQ(tok->bos(), 1);
  EXPECT_EQ(tok->eos(), 2);
  const auto ids = tok->encode("any text at all", true, false);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.front(), 1);  // BOS
  for (const int32_t id : ids) {
    EXPECT_GE(id, 0);
    EXPECT_LT(id, 500);
  }
  EXPECT_EQ(tok->token_to_piece(123, true), "<t123>");
  gguf::GgufWriter tiny;
  EXPECT_THROW(synth::write_placeholder_vocab(tiny, 2), Error);
}

TEST(SynthVocab, TooManyTokensAndMissingFilesAreNamed) {
  gguf::GgufWriter w;
  try {
    synth::write_tokenizer_from_file(w, test::shared_testdata("vocab/ggml-vocab-llama-spm.gguf"), 1000);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("1000"), std::string::npos) << e.what();
  }
  try {
    synth::write_tokenizer_from_file(w, test::temp_dir() + "/nope/tokenizer.json", 1000);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nope/tokenizer.json"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace edgellm
