// The llama.cpp vocab test files: NAME.gguf.inp holds test strings, each followed by a line
// "__ggml_vocab_test__"; NAME.gguf.out holds the expected ids of each string, one line per
// string (no BOS, special-token text not parsed). Produced by the reference tokenizers.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/error.h"
#include "tokenizer_test_util.h"

namespace edgellm {
namespace {

using test::ids_to_string;

std::string vocab_path(const std::string& name) { return test::shared_testdata("vocab/ggml-vocab-" + name + ".gguf"); }

std::vector<std::string> read_inputs(const std::string& path) {
  // Each string is terminated by "\n__ggml_vocab_test__\n" (so "" is a valid string and
  // strings keep their own inner/trailing newlines).
  const std::string text = test::read_file(path);
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t next = text.find(sep, pos);
    if (next == std::string::npos) break;
    out.push_back(text.substr(pos, next - pos));
    pos = next + sep.size();
  }
  return out;
}

std::vector<std::vector<int32_t>> read_outputs(const std::string& path) {
  std::vector<std::vector<int32_t>> out;
  std::istringstream lines(test::read_file(path));
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream ids(line);
    std::vector<int32_t> v;
    int32_t id;
    while (ids >> id) v.push_back(id);
    out.push_back(std::move(v));
  }
  return out;
}

class VocabFileTest : public ::testing::TestWithParam<std::string> {};

TEST_P(VocabFileTest, ReproducesReferenceIds) {
  const std::string name = GetParam();
  const auto tok = test::load_gguf_tokenizer(vocab_path(name));
  const auto inputs = read_inputs(vocab_path(name) + ".inp");
  const auto outputs = read_outputs(vocab_path(name) + ".out");
  ASSERT_EQ(inputs.size(), 46u) << "unexpected .inp layout for " << name;
  ASSERT_EQ(inputs.size(), outputs.size()) << name;
  int failures = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto ids = tok->encode(inputs[i], /*add_special=*/false, /*parse_special=*/false);
    EXPECT_EQ(ids_to_string(ids), ids_to_string(outputs[i]))
        << name << " case " << i << " text '" << inputs[i] << "' (" << test::hex(inputs[i]) << ")";
    failures += ids != outputs[i];
  }
  EXPECT_EQ(failures, 0) << name;
}

TEST_P(VocabFileTest, DecodeOfReferenceIdsRestoresText) {
  const std::string name = GetParam();
  if (name == "bert-bge") GTEST_SKIP() << "WordPiece lower-cases, strips accents and drops whitespace: see BertBge.*";
  const auto tok = test::load_gguf_tokenizer(vocab_path(name));
  const auto inputs = read_inputs(vocab_path(name) + ".inp");
  const auto outputs = read_outputs(vocab_path(name) + ".out");
  ASSERT_EQ(inputs.size(), outputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_EQ(tok->decode(outputs[i]), inputs[i]) << name << " case " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Shared, VocabFileTest,
                         ::testing::Values("llama-spm", "phi-3", "gpt-2", "deepseek-llm", "deepseek-coder",
                                           "falcon", "mpt", "starcoder", "refact", "bert-bge"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) if (c == '-') c = '_';
                           return n;
                         });

// bert-bge is WordPiece (tokenizer.ggml.model "bert"): its ids are checked above. Decoding them
// gives the normalized text (lower case, no accents, CJK ideographs and punctuation spaced,
// whitespace runs as one space): compare with that normalization written independently here.
TEST(BertBge, DecodeGivesTheNormalizedWords) {
  const auto tok = test::load_gguf_tokenizer(vocab_path("bert-bge"));
  EXPECT_TRUE(tok->is_wordpiece());
  EXPECT_EQ(tok->cls(), 101);
  EXPECT_EQ(tok->sep(), 102);
  EXPECT_EQ(tok->unk(), 100);
  // [CLS] hello world [SEP] with add_special, as llama.cpp and sentence-transformers frame it.
  EXPECT_EQ(ids_to_string(tok->encode("Hello world", true, false)), "101 7592 2088 102");
  EXPECT_EQ(tok->decode(tok->encode("Hello World!", false, false)), "hello world!");
  EXPECT_EQ(tok->decode(tok->encode("  Caf\xC3\xA9   d\xC3\xA9j\xC3\xA0 vu", false, false)), "cafe deja vu");
  // A word longer than 100 characters is [UNK] as a whole (BERT's max_input_chars_per_word).
  EXPECT_EQ(ids_to_string(tok->encode(std::string(101, 'a'), false, false)), "100");
  EXPECT_NE(ids_to_string(tok->encode(std::string(100, 'a'), false, false)), "100");
  // Invalid UTF-8 and control characters are dropped (clean_text), never an error.
  EXPECT_EQ(tok->encode("\xFF\xFE\x01", false, false).size(), 0u);
  // [CLS] written in the text is a control token only with parse_special.
  EXPECT_EQ(ids_to_string(tok->encode("[CLS]", false, true)), "101");
  EXPECT_NE(ids_to_string(tok->encode("[CLS]", false, false)), "101");
}

// baichuan (SPM) and gpt-neox (BPE, no tokenizer.ggml.pre) have no .out: they must load, and
// byte-exact round trips must hold for the shared test strings.
TEST(VocabFiles, VocabsWithoutReferenceIdsLoadAndRoundTrip) {
  const auto inputs = read_inputs(vocab_path("gpt-2") + ".inp");
  for (const std::string name : {"baichuan", "gpt-neox"}) {
    const auto tok = test::load_gguf_tokenizer(vocab_path(name));
    EXPECT_GT(tok->n_vocab(), 50000) << name;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const auto ids = tok->encode(inputs[i], false, false);
      EXPECT_EQ(tok->decode(ids), inputs[i]) << name << " case " << i;
    }
  }
  const auto neox = test::load_gguf_tokenizer(vocab_path("gpt-neox"));
  EXPECT_EQ(neox->pretokenizer(), PreTokenizerKind::kDefault);
}

}  // namespace
}  // namespace edgellm
