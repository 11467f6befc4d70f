// The document chunker (docqa/text_chunker.h) against properties checked by code of the test's
// own: every non-space byte of the document lies in a chunk, every chunk is its document's bytes
// [begin, end) and valid UTF-8 by a validator written here (RFC 3629's table, not core/utf8.h),
// no chunk holds more than max_tokens or crosses a blank line, and the overlap between
// neighbours is what the options ask (counted in the sentences of a text built for it). Real
// tokenizers: the bge WordPiece vocabulary (English, CJK split per character) and
// tiny-zh-poems' character-level SentencePiece (Chinese with no spaces at all).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "docqa/text_chunker.h"
#include "gguf/gguf_reader.h"
#include "support/test_env.h"
#include "tokenizer/sanitize.h"
#include "tokenizer/tokenizer.h"

namespace edgellm {
namespace {

// RFC 3629 section 4 (the ABNF of UTF8-octets), byte by byte: true when `s` is well-formed.
bool valid_utf8(const std::string& s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  const auto tail = [&](size_t k, unsigned char lo, unsigned char hi) {
    // byte i+1 in [lo, hi], the rest in 80..BF
    if (i + k >= n) return false;  // cut by the end
    if (p[i + 1] < lo || p[i + 1] > hi) return false;
    for (size_t j = 2; j <= k; ++j) {
      if (p[i + j] < 0x80 || p[i + j] > 0xBF) return false;
    }
    i += k + 1;
    return true;
  };
  while (i < n) {
    const unsigned char c = p[i];
    bool ok;
    if (c <= 0x7F) {
      ++i;
      ok = true;
    } else if (c >= 0xC2 && c <= 0xDF) {
      ok = tail(1, 0x80, 0xBF);
    } else if (c == 0xE0) {
      ok = tail(2, 0xA0, 0xBF);
    } else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) {
      ok = tail(2, 0x80, 0xBF);
    } else if (c == 0xED) {
      ok = tail(2, 0x80, 0x9F);
    } else if (c == 0xF0) {
      ok = tail(3, 0x90, 0xBF);
    } else if (c >= 0xF1 && c <= 0xF3) {
      ok = tail(3, 0x80, 0xBF);
    } else if (c == 0xF4) {
      ok = tail(3, 0x80, 0x8F);
    } else {
      ok = false;
    }
    if (!ok) return false;
  }
  return true;
}

bool ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// Unicode's White_Space property (PropList.txt) — what a chunk may leave out between chunks.
bool white_space(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

// Per byte of well-formed `s`: whether it belongs to a White_Space character (the test's own
// decoder: lead byte -> length, payload bits).
std::vector<uint8_t> space_bytes(const std::string& s) {
  std::vector<uint8_t> out(s.size(), 0);
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (size_t k = 1; k < len && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    for (size_t k = 0; k < len && i + k < s.size(); ++k) out[i + k] = white_space(cp);
    i += len;
  }
  return out;
}

std::unique_ptr<Tokenizer> tokenizer_of(const std::string& path) {
  const auto file = gguf::GgufFile::open(path);
  return Tokenizer::from_gguf(*file);
}

int32_t count(const Tokenizer& tok, const std::string& s) {
  return static_cast<int32_t>(tok.encode(s, false, false).size());
}

// The invariants every chunking must hold.
void check_invariants(const std::string& doc, const std::vector<TextChunk>& chunks, const Tokenizer& tok,
                      const ChunkOptions& o, const std::string& what) {
  std::vector<uint8_t> covered(doc.size(), 0);
  size_t prev_begin = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const TextChunk& c = chunks[i];
    SCOPED_TRACE(what + ", chunk " + std::to_string(i));
    ASSERT_LT(c.begin, c.end);
    ASSERT_LE(c.end, doc.size());
    ASSERT_EQ(c.text, doc.substr(c.begin, c.end - c.begin));
    EXPECT_TRUE(valid_utf8(c.text)) << "a chunk splits a UTF-8 sequence";
    EXPECT_FALSE(ascii_space(c.text.front()) || ascii_space(c.text.back())) << "untrimmed";
    EXPECT_EQ(c.text.find("\n\n"), std::string::npos) << "a chunk crosses a paragraph break";
    const int32_t n = count(tok, c.text);
    EXPECT_LE(n, o.max_tokens);
    EXPECT_EQ(n, c.tokens);
    EXPECT_GE(c.begin, prev_begin) << "chunks out of order";
    if (i > 0) {
      // Every chunk holds text its predecessor does not.
      EXPECT_GT(c.end, chunks[i - 1].end);
      if (c.begin < chunks[i - 1].end) {
        const std::string overlap = doc.substr(c.begin, chunks[i - 1].end - c.begin);
        EXPECT_LE(count(tok, overlap), o.overlap_tokens) << "overlap '" << overlap << "'";
      }
    }
    prev_begin = c.begin;
    for (size_t b = c.begin; b < c.end; ++b) covered[b] = 1;
  }
  const std::vector<uint8_t> space = space_bytes(doc);
  for (size_t b = 0; b < doc.size(); ++b) {
    if (!space[b] && !covered[b]) {
      ADD_FAILURE() << what << ": byte " << b << " ('" << doc.substr(b, 20) << "...') is in no chunk";
      return;
    }
  }
}

class Chunker : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    bge_ = tokenizer_of(test::shared_testdata("vocab/ggml-vocab-bert-bge.gguf")).release();
    zh_ = tokenizer_of(test::shared_model("tiny-zh-poems.gguf")).release();
  }
  static void TearDownTestSuite() {
    delete bge_;
    delete zh_;
  }
  static Tokenizer* bge_;
  static Tokenizer* zh_;
};
Tokenizer* Chunker::bge_ = nullptr;
Tokenizer* Chunker::zh_ = nullptr;

TEST_F(Chunker, SentencesOfLatinAndCjkText) {
  const std::vector<SentenceSpan> s = split_sentences("Pi is 3.14 (roughly). Really?! \"Yes.\" e.g. this\nline two");
  std::vector<std::string> got;
  const std::string t = "Pi is 3.14 (roughly). Really?! \"Yes.\" e.g. this\nline two";
  for (const SentenceSpan& x : s) got.push_back(t.substr(x.begin, x.end - x.begin));
  EXPECT_EQ(got,
            (std::vector<std::string>{"Pi is 3.14 (roughly).", "Really?!", "\"Yes.\"", "e.g.", "this", "line two"}));
  const std::string zh = "床前明月光，疑是地上霜。举头望明月！低头思故乡？「好。」\n\n第二段";
  got.clear();
  const std::vector<SentenceSpan> z = split_sentences(zh);
  for (const SentenceSpan& x : z) got.push_back(zh.substr(x.begin, x.end - x.begin));
  EXPECT_EQ(got, (std::vector<std::string>{"床前明月光，疑是地上霜。", "举头望明月！", "低头思故乡？", "「好。」",
                                           "第二段"}));
  EXPECT_TRUE(z[0].paragraph_start);
  EXPECT_FALSE(z[1].paragraph_start);
  EXPECT_TRUE(z.back().paragraph_start);
}

TEST_F(Chunker, OverlapIsTheConfiguredNumberOfSentences) {
  // One paragraph of 40 sentences of exactly 5 tokens each ("t0 t1 t2 t3." under bge: 4 words +
  // the period), so a chunk of 32 tokens holds 6 sentences and an overlap of 12 tokens two.
  std::string doc;
  for (int i = 0; i < 40; ++i) doc += (i ? " " : "") + std::string("alpha beta gamma delta.");
  ASSERT_EQ(count(*bge_, "alpha beta gamma delta."), 5);
  for (const int32_t overlap : {0, 5, 12, 16}) {
    const ChunkOptions o{32, overlap};
    const std::vector<TextChunk> chunks = chunk_text(doc, *bge_, o);
    check_invariants(doc, chunks, *bge_, o, "overlap " + std::to_string(overlap));
    const size_t expect_overlap = static_cast<size_t>(overlap / 5);  // whole sentences of 5 tokens
    for (size_t i = 0; i + 1 < chunks.size(); ++i) {
      const size_t shared = chunks[i + 1].begin < chunks[i].end
                                ? std::count(doc.begin() + static_cast<std::ptrdiff_t>(chunks[i + 1].begin),
                                             doc.begin() + static_cast<std::ptrdiff_t>(chunks[i].end), '.')
                                : 0;
      EXPECT_EQ(shared, expect_overlap) << "chunks " << i << ", " << i + 1 << " with overlap " << overlap;
      if (i + 2 < chunks.size()) {
        // Sentences per chunk: 6 (the 31st token would be the 7th sentence's first).
        EXPECT_EQ(std::count(chunks[i].text.begin(), chunks[i].text.end(), '.'), 6);
      }
    }
  }
}

TEST_F(Chunker, ChineseWithoutSpacesAndOverLongSentences) {
  const std::string doc = test::read_file(test::shared_testdata("text/zh-eval.txt"));
  ASSERT_GT(doc.size(), 10000u);
  const std::string text = sanitize_user_text(doc.substr(0, 60000));  // cut anywhere: sanitized first
  for (const ChunkOptions o : {ChunkOptions{64, 16}, ChunkOptions{8, 4}, ChunkOptions{200, 0}}) {
    check_invariants(text, chunk_text(text, *zh_, o), *zh_, o, "zh " + std::to_string(o.max_tokens));
  }
  // One sentence of 300 characters with no space and no terminator: cut at characters.
  std::string line;
  for (int i = 0; i < 100; ++i) line += "春风又";
  const ChunkOptions o{16, 4};
  const std::vector<TextChunk> chunks = chunk_text(line, *zh_, o);
  check_invariants(line, chunks, *zh_, o, "one long line");
  EXPECT_GE(chunks.size(), 300u / 16);
  // The same under the bge vocabulary (CJK characters are words of their own) and a long URL.
  const std::string mixed = line + " see https://example.org/" + std::string(3000, 'x') + "/end and more text.";
  check_invariants(mixed, chunk_text(mixed, *bge_, o), *bge_, o, "mixed");
}

TEST_F(Chunker, HostileTextKeepsTheInvariants) {
  std::mt19937 rng(7);
  const std::vector<std::string> pieces = {"a",  "bc ", ". ", "。", "\n", "\n\n", "  ",   "é", "😀",
                                           "中", "?!",  "\"", "…",  "\t", "x.y",  "\r\n", "”", "\xff"};
  for (int round = 0; round < 40; ++round) {
    std::string raw;
    const int n = static_cast<int>(rng() % 400);
    for (int i = 0; i < n; ++i) raw += pieces[rng() % pieces.size()];
    const std::string text = sanitize_user_text(raw);
    const ChunkOptions o{8 + static_cast<int32_t>(rng() % 40), 0};
    ChunkOptions oo = o;
    oo.overlap_tokens = static_cast<int32_t>(rng() % static_cast<uint32_t>(o.max_tokens / 2 + 1));
    check_invariants(text, chunk_text(text, *bge_, oo), *bge_, oo, "round " + std::to_string(round));
    check_invariants(text, chunk_text(text, *zh_, oo), *zh_, oo, "zh round " + std::to_string(round));
  }
  EXPECT_TRUE(chunk_text("", *bge_, {}).empty());
  EXPECT_TRUE(chunk_text(" \n\n \t", *bge_, {}).empty());
}

TEST_F(Chunker, RefusesSizesThatCannotWork) {
  const auto refused = [&](ChunkOptions o) {
    try {
      chunk_text("a b c.", *bge_, o);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      return true;
    }
    return false;
  };
  EXPECT_TRUE(refused({7, 0}));
  EXPECT_TRUE(refused({16, 9}));
  EXPECT_TRUE(refused({16, -1}));
  EXPECT_FALSE(refused({16, 8}));
}

}  // namespace
}  // namespace edgellm
