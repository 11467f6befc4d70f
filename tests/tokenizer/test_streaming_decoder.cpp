// StreamingDecoder: ids fed one at a time through characters split across tokens must give
// the same text as decode(), and never a U+FFFD for a character that is merely incomplete.
#include <gtest/gtest.h>

#include "core/error.h"
#include "tokenizer/streaming_decoder.h"
#include "tokenizer/unicode.h"
#include "tokenizer_test_util.h"

namespace edgellm {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

struct StreamResult {
  std::string text;
  int held_back = 0;  // pushes that returned nothing because a character was incomplete
};

StreamResult stream(const Tokenizer& tok, const std::vector<int32_t>& ids, const std::string& valid_input) {
  StreamingDecoder dec(tok);
  StreamResult r;
  for (int32_t id : ids) {
    const std::string piece = tok.token_to_piece(id);
    const std::string out = dec.push(id);
    if (!piece.empty() && out.empty() && dec.pending_bytes() > 0) ++r.held_back;
    // The input is valid UTF-8, so a replacement character would be a streaming bug.
    if (valid_input.find(kFffd) == std::string::npos) {
      EXPECT_EQ(out.find(kFffd), std::string::npos) << "U+FFFD emitted mid-stream after id " << id;
    }
    r.text += out;
  }
  r.text += dec.flush();
  return r;
}

TEST(StreamingDecoder, SpmByteTokensAndCjk) {
  // tiny-zh-poems: character-level SPM vocab; characters it lacks (emoji, rare CJK) are encoded
  // as 3-4 byte tokens <0xNN>, each of which is an incomplete character on its own.
  const auto tok = test::load_gguf_tokenizer(test::shared_model("tiny-zh-poems.gguf"));
  std::string text = test::read_file(test::shared_testdata("text/zh-eval.txt")).substr(0, 3000);
  text.resize(text.size() - unicode::incomplete_tail_length(text));  // do not cut a character
  text += " emoji \xF0\x9F\x98\x80\xF0\x9F\x9A\x80 and \xE9\xBE\x98\xE9\xBD\x89";  // 😀🚀 龘齉
  const auto ids = tok->encode(text, /*add_special=*/true, false);
  const StreamResult r = stream(*tok, ids, text);
  EXPECT_EQ(r.text, tok->decode(ids));
  EXPECT_EQ(r.text, text);  // byte fallback makes the round trip exact
  EXPECT_GT(r.held_back, 4) << "the test text must exercise split characters";
}

TEST(StreamingDecoder, ByteLevelBpeSplitsEmoji) {
  const auto tok = test::load_hf_tokenizer("qwen3");
  const std::string text =
      "Emoji \xF0\x9F\x98\x80\xF0\x9F\x9A\x80\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD and "
      "\xE7\xAB\xAF\xE4\xBE\xA7\xE5\xA4\xA7\xE6\xA8\xA1\xE5\x9E\x8B <|im_end|>";
  const auto ids = tok->encode(text, false, true);
  const StreamResult r = stream(*tok, ids, text);
  EXPECT_EQ(r.text, tok->decode(ids));
  EXPECT_EQ(tok->decode(ids, true), text);
  EXPECT_GT(r.held_back, 0) << "the emoji must be split across tokens";
}

TEST(StreamingDecoder, DanglingAndInvalidBytes) {
  const auto tok = test::load_gguf_tokenizer(test::shared_model("tiny-zh-poems.gguf"));
  const auto byte = [&](int b) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
    return *tok->find_token(buf);
  };
  {
    StreamingDecoder dec(*tok);
    EXPECT_EQ(dec.push(byte(0xE4)), "");
    EXPECT_EQ(dec.push(byte(0xB8)), "");
    EXPECT_EQ(dec.pending_bytes(), 2u);
    EXPECT_EQ(dec.flush(), kFffd);  // a dangling partial character becomes one U+FFFD
    EXPECT_EQ(dec.flush(), "");
  }
  {
    StreamingDecoder dec(*tok);
    EXPECT_EQ(dec.push(byte(0xE4)), "");
    const int32_t a = *tok->find_token("a");
    EXPECT_EQ(dec.push(a), std::string(kFffd).append("a"));  // can no longer complete: replaced at once
    EXPECT_EQ(dec.push(byte(0xFF)), kFffd);
    EXPECT_THROW(dec.push(-5), Error);
    EXPECT_EQ(dec.push(byte(0xE4)), "");
    EXPECT_EQ(dec.push(byte(0xB8)), "");
    EXPECT_EQ(dec.push(byte(0xAD)), "\xE4\xB8\xAD");  // 中
  }
}

TEST(StreamingDecoder, SpmSpacePrefixMatchesDecode) {
  // stories260K adds a space prefix: decode() drops it, and so does a decoder at sequence start.
  const auto tok = test::load_gguf_tokenizer(test::shared_model("stories260K.gguf"));
  const auto ids = tok->encode("Once upon a time", true, false);
  StreamingDecoder start(*tok);
  StreamingDecoder cont(*tok, /*sequence_start=*/false);
  std::string a, b;
  for (int32_t id : ids) {
    a += start.push(id);
    b += cont.push(id);
  }
  EXPECT_EQ(a, "Once upon a time");
  EXPECT_EQ(a, tok->decode(ids));
  EXPECT_EQ(b, " Once upon a time");  // continuing after a prompt keeps the space
}

}  // namespace
}  // namespace edgellm
