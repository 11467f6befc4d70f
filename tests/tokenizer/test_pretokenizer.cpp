// Pre-tokenizer splits against word lists worked out by hand from each family's regex.
#include <gtest/gtest.h>

#include "core/error.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/unicode.h"

namespace edgellm {
namespace {

std::vector<std::string> split(PreTokenizerKind kind, const std::string& text) {
  const unicode::DecodedText d = unicode::decode(text);
  const std::vector<size_t> bounds = pretokenize(kind, d.cps);
  std::vector<std::string> words;
  for (size_t i = 0; i + 1 < bounds.size(); ++i) {
    words.push_back(text.substr(d.offsets[bounds[i]], d.offsets[bounds[i + 1]] - d.offsets[bounds[i]]));
  }
  return words;
}

using Words = std::vector<std::string>;

TEST(PreTokenizer, Gpt2) {
  EXPECT_EQ(split(PreTokenizerKind::kGpt2, "Hello world's  test\n\n  x 123"),
            (Words{"Hello", " world", "'s", " ", " test", "\n\n ", " x", " 123"}));
  EXPECT_EQ(split(PreTokenizerKind::kGpt2, "a  "), (Words{"a", "  "}));  // trailing run stays whole
  EXPECT_EQ(split(PreTokenizerKind::kGpt2, "x?!! y"), (Words{"x", "?!!", " y"}));
  EXPECT_EQ(split(PreTokenizerKind::kGpt2, "'S"), (Words{"'", "S"}));  // contractions are lower-case only
  EXPECT_EQ(split(PreTokenizerKind::kGpt2, ""), Words{});
}

TEST(PreTokenizer, Llama3AndQwen2) {
  EXPECT_EQ(split(PreTokenizerKind::kLlama3, "I'm 12345 ok\n\n hi"),
            (Words{"I", "'m", " ", "123", "45", " ok", "\n\n", " hi"}));
  EXPECT_EQ(split(PreTokenizerKind::kLlama3, "  ?!\nX"), (Words{" ", " ?!\n", "X"}));
  EXPECT_EQ(split(PreTokenizerKind::kLlama3, "I'LL"), (Words{"I", "'LL"}));  // case-insensitive
  EXPECT_EQ(split(PreTokenizerKind::kLlama3, "(abc"), (Words{"(abc"}));   // one non-letter prefix
  EXPECT_EQ(split(PreTokenizerKind::kQwen2, "x12345"), (Words{"x", "1", "2", "3", "4", "5"}));
  EXPECT_EQ(split(PreTokenizerKind::kQwen2, "\xE4\xBD\xA0\xE5\xA5\xBD\xEF\xBC\x8C\xE4\xB8\x96"),  // 你好，世
            (Words{"\xE4\xBD\xA0\xE5\xA5\xBD", "\xEF\xBC\x8C\xE4\xB8\x96"}));
}

TEST(PreTokenizer, DeepseekCoderAndLlm) {
  EXPECT_EQ(split(PreTokenizerKind::kDeepseekCoder, "ab \xE4\xB8\xAD\xE6\x96\x87" "12\n"),
            // " 中文" matches \s?\p{L}+, then the CJK stage splits the space off again.
            (Words{"ab", " ", "\xE4\xB8\xAD\xE6\x96\x87", "1", "2", "\n"}));
  // deepseek-llm: letters are an explicit class without CJK, which goes to its own stage.
  EXPECT_EQ(split(PreTokenizerKind::kDeepseekLlm, "Hi, \xE4\xB8\xAD\xE6\x96\x87 123  "),
            (Words{"Hi", ",", " ", "\xE4\xB8\xAD\xE6\x96\x87", " ", "123", "  "}));
}

TEST(PreTokenizer, FalconAndStarcoder) {
  EXPECT_EQ(split(PreTokenizerKind::kFalcon, "a1234567"), (Words{"a", "123", "456", "7"}));
  EXPECT_EQ(split(PreTokenizerKind::kFalcon, "x+=y"), (Words{"x", "+=", "y"}));
  EXPECT_EQ(split(PreTokenizerKind::kStarcoder, "v 42"), (Words{"v", " ", "4", "2"}));
}

TEST(PreTokenizer, NamesAndErrors) {
  EXPECT_EQ(pretokenizer_from_name("qwen2"), PreTokenizerKind::kQwen2);
  EXPECT_EQ(pretokenizer_from_name("llama-bpe"), PreTokenizerKind::kLlama3);
  EXPECT_EQ(pretokenizer_from_name("refact"), PreTokenizerKind::kStarcoder);
  try {
    pretokenizer_from_name("tekken");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("tekken"), std::string::npos);
  }
}

}  // namespace
}  // namespace edgellm
