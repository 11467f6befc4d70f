// UTF-8 decoding rule, category flags and sanitize_user_text, against hand-written expectations.
#include <gtest/gtest.h>

#include <initializer_list>

#include "tokenizer/sanitize.h"
#include "tokenizer/unicode.h"
#include "tokenizer_test_util.h"

namespace edgellm {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

// Concatenation via append: GCC 12 at -O3 misreports "literal" + std::string (-Wrestrict).
std::string cat(std::initializer_list<std::string> parts) {
  std::string s;
  for (const std::string& p : parts) s.append(p);
  return s;
}

std::string rep(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += kFffd;
  return s;
}

TEST(Unicode, CategoryFlags) {
  using namespace unicode;
  EXPECT_TRUE(flags('A') & kLetter);
  EXPECT_TRUE(flags(0xE9) & kLetter);     // é
  EXPECT_TRUE(flags(0x4E2D) & kLetter);   // 中 (Lo)
  EXPECT_TRUE(flags(0x0663) & kNumber);   // ARABIC-INDIC DIGIT THREE (Nd)
  EXPECT_TRUE(flags(0xBD) & kNumber);     // ½ (No)
  EXPECT_TRUE(flags(0x3002) & kPunct);    // 。
  EXPECT_TRUE(flags(0x20AC) & kSymbol);   // €
  EXPECT_TRUE(flags(0x1F600) & kSymbol);  // 😀 (So)
  EXPECT_TRUE(flags(0x0301) & kMark);     // combining acute
  EXPECT_TRUE(flags(0x3000) & kWhitespace);
  EXPECT_TRUE(flags(0x3000) & kSeparator);
  EXPECT_TRUE(flags('\n') & kWhitespace);
  EXPECT_TRUE(flags('\n') & kControl);
  EXPECT_FALSE(flags(0x1C) & kWhitespace);  // not White_Space (Python's isspace disagrees)
  EXPECT_TRUE(flags(0xE000) & kControl);     // private use (Co)
  EXPECT_TRUE(flags(0x0378) & kUnassigned);
  EXPECT_TRUE(flags(0x110000) & kUnassigned);
  EXPECT_STRNE(kUnicodeVersion, "");
}

TEST(Unicode, MaximalSubpartReplacement) {
  struct Case {
    std::string in;
    std::string out;
    size_t n_replaced;
  } cases[] = {
      {"plain", "plain", 0},
      {"\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80", "\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80", 0},  // é中😀
      {"\x80", rep(1), 1},                          // lone continuation byte
      {"\xC0\x80", rep(2), 2},                      // overlong NUL: C0 is never valid
      {"\xE0\x80\x80", rep(3), 3},                  // overlong 3-byte form
      {"\xED\xA0\x80", rep(3), 3},                  // UTF-16 surrogate D800
      {"\xF4\x90\x80\x80", rep(4), 4},              // above U+10FFFF
      {"\xF5\x80", rep(2), 2},                      // F5 is never valid
      {"\xE4\xB8", rep(1), 1},                      // truncated: one U+FFFD for the subpart
      {"\xE4\xB8" "A", cat({rep(1), "A"}), 1},
      {"\xF0\x9F\x98", rep(1), 1},
      {"a\xFFz", cat({"a", rep(1), "z"}), 1},
  };
  for (const Case& c : cases) {
    size_t n = 99;
    EXPECT_EQ(test::hex(unicode::make_valid(c.in, &n)), test::hex(c.out)) << test::hex(c.in);
    EXPECT_EQ(n, c.n_replaced) << test::hex(c.in);
  }
}

TEST(Unicode, IncompleteTail) {
  EXPECT_EQ(unicode::incomplete_tail_length(""), 0u);
  EXPECT_EQ(unicode::incomplete_tail_length("abc"), 0u);
  EXPECT_EQ(unicode::incomplete_tail_length("a\xE4"), 1u);
  EXPECT_EQ(unicode::incomplete_tail_length("a\xE4\xB8"), 2u);
  EXPECT_EQ(unicode::incomplete_tail_length("a\xE4\xB8\xAD"), 0u);  // complete
  EXPECT_EQ(unicode::incomplete_tail_length("\xF0\x9F\x98"), 3u);
  EXPECT_EQ(unicode::incomplete_tail_length("\xED\xA0"), 0u);       // surrogate: never valid
  EXPECT_EQ(unicode::incomplete_tail_length("\x80\x80"), 0u);
  EXPECT_EQ(unicode::incomplete_tail_length("\xC0"), 0u);
}

TEST(Sanitize, Rules) {
  struct Case {
    std::string in;
    std::string out;
    size_t changed;
  } cases[] = {
      {"hello", "hello", 0},
      {std::string("a\0b", 3), "ab", 1},
      {"tab\tlf\ncr\r", "tab\tlf\ncr\r", 0},
      {"\x01\x1F\x7F", "", 3},
      {"x\x1B[31my", "x[31my", 1},                  // ESC of a terminal colour code
      {"\xC2\x85\xC2\x9F", "", 2},                  // C1 controls U+0085, U+009F
      {"\xC2\xA0", "\xC2\xA0", 0},                  // NBSP is not a control
      {"\xE2\x80\x8D", "\xE2\x80\x8D", 0},          // ZWJ kept (emoji sequences need it)
      {"\xC0\x80", rep(2), 2},
      {"\xED\xA0\x80!", cat({rep(3), "!"}), 3},
      {"\xE4\xB8", rep(1), 1},
      {"ok\xFF", cat({"ok", rep(1)}), 1},
      {"\xE4\xB8\xAD\xE6\x96\x87\xF0\x9F\x98\x80", "\xE4\xB8\xAD\xE6\x96\x87\xF0\x9F\x98\x80", 0},
  };
  for (const Case& c : cases) {
    size_t n = 99;
    EXPECT_EQ(test::hex(sanitize_user_text(c.in, &n)), test::hex(c.out)) << test::hex(c.in);
    EXPECT_EQ(n, c.changed) << test::hex(c.in);
  }
  EXPECT_EQ(sanitize_user_text("abc"), "abc");  // n_changed is optional
}

}  // namespace
}  // namespace edgellm
