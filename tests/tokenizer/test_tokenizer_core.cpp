// Tokenizer behaviour on small in-memory vocabularies: SPM and BPE merges against naive
// O(n^2) reference implementations written here, special-token splitting, validation errors,
// and hostile input.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "core/error.h"
#include "tokenizer/unicode.h"
#include "tokenizer_test_util.h"

namespace edgellm {
namespace {

constexpr const char* kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's space

std::string byte_token(int b) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
  return buf;
}

// <unk> <s> </s>, 256 byte tokens, then `pieces` with `scores`.
VocabData spm_vocab(const std::vector<std::string>& pieces, const std::vector<float>& scores) {
  VocabData d;
  d.model = "llama";
  d.tokens = {"<unk>", "<s>", "</s>"};
  d.types = {2, 3, 3};
  d.scores = {0, 0, 0};
  for (int b = 0; b < 256; ++b) {
    d.tokens.push_back(byte_token(b));
    d.types.push_back(6);
    d.scores.push_back(0);
  }
  for (size_t i = 0; i < pieces.size(); ++i) {
    d.tokens.push_back(pieces[i]);
    d.types.push_back(1);
    d.scores.push_back(scores[i]);
  }
  d.unk = 0;
  d.bos = 1;
  d.eos = 2;
  return d;
}

// Reference SPM: repeatedly merge the best-scoring adjacent pair that is a token (leftmost on
// ties) by rescanning everything; leftover symbols fall back to byte tokens.
std::vector<int32_t> naive_spm(const VocabData& d, const std::string& escaped) {
  std::map<std::string, int32_t> ids;
  for (size_t i = 0; i < d.tokens.size(); ++i) ids[d.tokens[i]] = static_cast<int32_t>(i);
  std::vector<std::string> sym;
  for (size_t pos = 0; pos < escaped.size();) {
    size_t len = 0;
    bool valid = false;
    unicode::decode_one(escaped, pos, &len, &valid);
    sym.push_back(escaped.substr(pos, len));
    pos += len;
  }
  for (;;) {
    int best = -1;
    float best_score = 0;
    for (size_t i = 0; i + 1 < sym.size(); ++i) {
      auto it = ids.find(sym[i] + sym[i + 1]);
      if (it == ids.end()) continue;
      const float s = d.scores[static_cast<size_t>(it->second)];
      if (best < 0 || s > best_score) {
        best = static_cast<int>(i);
        best_score = s;
      }
    }
    if (best < 0) break;
    sym[static_cast<size_t>(best)] += sym[static_cast<size_t>(best) + 1];
    sym.erase(sym.begin() + best + 1);
  }
  std::vector<int32_t> out;
  for (const std::string& s : sym) {
    auto it = ids.find(s);
    if (it != ids.end()) {
      out.push_back(it->second);
    } else {
      for (unsigned char c : s) out.push_back(ids.at(byte_token(c)));
    }
  }
  return out;
}

TEST(SpmTokenizer, MatchesNaiveReference) {
  const std::vector<std::string> pieces = {kSpace, "a", "b", "c", "ab", "bc", "abc", std::string(kSpace) + "a",
                                           std::string(kSpace) + "ab", "ca", "aa", "aaa", "cab"};
  std::mt19937 rng(1234);
  // Integer scores in a small range so that ties (resolved leftmost-first) are common.
  std::uniform_int_distribution<int> score(-4, 0);
  for (int vocab_round = 0; vocab_round < 20; ++vocab_round) {
    std::vector<float> scores;
    for (size_t i = 0; i < pieces.size(); ++i) scores.push_back(static_cast<float>(score(rng)));
    const VocabData d = spm_vocab(pieces, scores);
    Tokenizer tok(d);
    const std::string alphabet[] = {"a", "b", "c", " ", "\xC3\xA9" /* é: byte fallback */};
    std::uniform_int_distribution<int> pick(0, 4), length(0, 24);
    for (int s = 0; s < 50; ++s) {
      std::string text;
      for (int n = length(rng); n > 0; --n) text += alphabet[pick(rng)];
      std::string escaped = text.empty() ? "" : kSpace;  // add_space_prefix
      for (char c : text) escaped += c == ' ' ? std::string(kSpace) : std::string(1, c);
      EXPECT_EQ(test::ids_to_string(tok.encode(text, false, false)), test::ids_to_string(naive_spm(d, escaped)))
          << "text '" << text << "' round " << vocab_round;
      EXPECT_EQ(tok.decode(tok.encode(text, true, false)), text);
    }
  }
}

TEST(SpmTokenizer, SpacePrefixByteFallbackAndBos) {
  VocabData d = spm_vocab({kSpace, "h", "i", "hi", std::string(kSpace) + "hi"}, {-1, -2, -2, -1, 0});
  Tokenizer tok(d);
  const int32_t base = 259;  // first piece id
  EXPECT_EQ(tok.encode("hi", true, false), (std::vector<int32_t>{1, base + 4}));
  EXPECT_EQ(tok.encode("hi", false, false), (std::vector<int32_t>{base + 4}));
  // "\n" is not a piece: byte token <0x0A> = 3 + 10.
  EXPECT_EQ(tok.encode("\n", false, false), (std::vector<int32_t>{base, 13}));
  EXPECT_EQ(tok.decode({1, base + 4, base, 13}), "hi \n");
  EXPECT_EQ(tok.decode({1, base + 4}, /*render_special=*/true), "<s>hi");
  d.add_space_prefix = false;
  Tokenizer no_prefix(d);
  EXPECT_EQ(no_prefix.encode("hi", false, false), (std::vector<int32_t>{base + 3}));
  EXPECT_EQ(no_prefix.decode({base, base + 3}), " hi");  // nothing stripped without the prefix rule
}

// Reference byte-level BPE for a single word: rescan for the lowest-ranked pair each step.
std::vector<int32_t> naive_bpe(const VocabData& d, const std::string& word) {
  std::map<std::string, int32_t> ids;
  for (size_t i = 0; i < d.tokens.size(); ++i) ids[d.tokens[i]] = static_cast<int32_t>(i);
  std::map<std::pair<std::string, std::string>, size_t> ranks;
  for (size_t r = 0; r < d.merges.size(); ++r) {
    const size_t sp = d.merges[r].find(' ');
    ranks.emplace(std::make_pair(d.merges[r].substr(0, sp), d.merges[r].substr(sp + 1)), r);
  }
  std::vector<std::string> sym;
  for (char c : word) sym.emplace_back(1, c);  // the test alphabet is printable ASCII: maps to itself
  for (;;) {
    size_t best = SIZE_MAX, best_rank = SIZE_MAX;
    for (size_t i = 0; i + 1 < sym.size(); ++i) {
      auto it = ranks.find({sym[i], sym[i + 1]});
      if (it != ranks.end() && it->second < best_rank) {
        best_rank = it->second;
        best = i;
      }
    }
    if (best == SIZE_MAX) break;
    sym[best] += sym[best + 1];
    sym.erase(sym.begin() + static_cast<long>(best) + 1);
  }
  std::vector<int32_t> out;
  for (const std::string& s : sym) out.push_back(ids.at(s));
  return out;
}

VocabData bpe_vocab() {
  VocabData d;
  d.model = "gpt2";
  d.pre = "gpt-2";
  d.tokens = {"a", "b", "c", "d", "ab", "bc", "abc", "cd", "dd", "aa", "aab", "ddd", "Ġ", "Ġa", "<|end|>", "<x>"};
  d.types.assign(d.tokens.size(), 1);
  d.types[14] = 3;  // control
  d.types[15] = 4;  // user-defined
  d.merges = {"b c", "a b", "ab c", "c d", "d d", "a a", "aa b", "dd d", "Ġ a"};
  d.eos = 14;
  d.add_bos = false;
  return d;
}

TEST(BpeTokenizer, MatchesNaiveReferenceOnWords) {
  const VocabData d = bpe_vocab();
  Tokenizer tok(d);
  std::mt19937 rng(99);
  std::uniform_int_distribution<int> letter(0, 3), length(1, 40);
  for (int s = 0; s < 400; ++s) {
    std::string word;
    for (int n = length(rng); n > 0; --n) word += static_cast<char>('a' + letter(rng));
    EXPECT_EQ(test::ids_to_string(tok.encode(word, false, false)), test::ids_to_string(naive_bpe(d, word))) << word;
    EXPECT_EQ(tok.decode(tok.encode(word, false, false)), word);
  }
}

TEST(BpeTokenizer, SpecialTokenSplitting) {
  Tokenizer tok(bpe_vocab());
  // Control tokens only with parse_special; user-defined ones always.
  EXPECT_EQ(tok.encode("ab<|end|>", false, true), (std::vector<int32_t>{4, 14}));
  // Without parse_special the control text is ordinary text; this tiny vocab only has "d" of
  // it (the other bytes have no token and no unk, so they are dropped).
  EXPECT_EQ(tok.encode("ab<|end|>", false, false), (std::vector<int32_t>{4, 3}));
  EXPECT_EQ(tok.encode("a<x>a", false, false), (std::vector<int32_t>{0, 15, 0}));
  EXPECT_EQ(tok.decode({4, 14, 15}), "ab<x>");
  EXPECT_EQ(tok.decode({4, 14, 15}, true), "ab<|end|><x>");
  EXPECT_TRUE(tok.is_eog(14));
  EXPECT_FALSE(tok.is_eog(4));
}

TEST(BpeTokenizer, LongestSpecialMatchWins) {
  VocabData d = bpe_vocab();
  d.tokens.push_back("<|end");  // a shorter user-defined token sharing the prefix
  d.types.push_back(4);
  Tokenizer tok(d);
  EXPECT_EQ(tok.encode("<|end|>", false, true), (std::vector<int32_t>{14}));
  EXPECT_EQ(tok.encode("<|end|>", false, false).front(), 16);  // control not allowed: shorter one
}

void expect_error(VocabData d, ErrorCode code, const std::string& needle) {
  try {
    Tokenizer tok(std::move(d));
    ADD_FAILURE() << "accepted; expected error mentioning " << needle;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Tokenizer, ValidationErrors) {
  {
    VocabData d = bpe_vocab();
    d.types[3] = 9;
    expect_error(d, ErrorCode::kInvalidFile, "token 3");
  }
  {
    VocabData d = bpe_vocab();
    d.merges.push_back("nospace");
    expect_error(d, ErrorCode::kInvalidFile, "merge #9");
  }
  {
    VocabData d = bpe_vocab();
    d.bos = 999;
    expect_error(d, ErrorCode::kInvalidFile, "bos id 999");
  }
  {
    VocabData d = bpe_vocab();
    d.scores = {1.0f};
    expect_error(d, ErrorCode::kInvalidFile, "scores count");
  }
  {
    VocabData d = bpe_vocab();
    d.pre = "tekken";
    expect_error(d, ErrorCode::kUnsupported, "tekken");
  }
  {
    VocabData d = bpe_vocab();
    d.model = "t5";  // T5 (Unigram): bert is WordPiece now
    expect_error(d, ErrorCode::kUnsupported, "t5");
  }
  {
    VocabData d = spm_vocab({"a"}, {0});
    d.tokens[3 + 65] = "<0xZZ>";
    expect_error(d, ErrorCode::kInvalidFile, "token 68");
  }
  {
    VocabData d;
    expect_error(d, ErrorCode::kInvalidFile, "empty token list");
  }
  Tokenizer tok(bpe_vocab());
  EXPECT_THROW(tok.token_to_piece(-1), Error);
  EXPECT_THROW(tok.decode({0, 16}), Error);
  EXPECT_THROW(tok.token_text(100), Error);
}

TEST(Tokenizer, HostileInputNeverCrashesAndRoundTripsBytes) {
  const auto gpt2 = test::load_gguf_tokenizer(test::shared_testdata("vocab/ggml-vocab-gpt-2.gguf"));
  const auto spm = test::load_gguf_tokenizer(test::shared_testdata("vocab/ggml-vocab-llama-spm.gguf"));
  const std::string hostile[] = {
      std::string("a\0b", 3), "\xC0\x80", "\xE0\x80\x80", "\xED\xA0\x80\xED\xBF\xBF", "\x80\x80\x80",
      "\xF4\x90\x80\x80", "\xFF\xFE", "\xE4\xB8", "x\xF0\x9F\x98", "<s></s><unk>", "<|endoftext|>",
      std::string(3000, ' '), std::string(2000, '\n') + "x", "\xEF\xBF\xBD",
  };
  std::mt19937 rng(7);
  std::vector<std::string> inputs(std::begin(hostile), std::end(hostile));
  for (int i = 0; i < 300; ++i) {
    std::string s(static_cast<size_t>(rng() % 64), '\0');
    for (char& c : s) c = static_cast<char>(rng());
    inputs.push_back(s);
  }
  for (const std::string& s : inputs) {
    for (bool parse_special : {false, true}) {
      const auto a = gpt2->encode(s, true, parse_special);
      const auto b = spm->encode(s, true, parse_special);
      if (!parse_special) {
        // Both vocabs can represent every byte, so decoding gives the input back, with the
        // malformed parts replaced the same way unicode::make_valid does.
        EXPECT_EQ(test::hex(gpt2->decode(a)), test::hex(unicode::make_valid(s)));
        EXPECT_EQ(test::hex(spm->decode(b)), test::hex(unicode::make_valid(s)));
      }
    }
  }
}

}  // namespace
}  // namespace edgellm
