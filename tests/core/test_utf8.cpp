// core/utf8.h against the Unicode standard: the boundaries of Table 3-7 (well-formed byte
// sequences), overlongs, surrogates, values above U+10FFFF, truncated sequences, the maximal
// subpart example of Table 3-8, and exhaustive comparisons with a reference written here from
// the definition instead of the table (decode by bit pattern, then require the shortest form and
// a scalar value).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/utf8.h"

namespace edgellm {
namespace {

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}

std::string hex(std::string_view s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (!out.empty()) out += ' ';
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

// ---- reference, from the definition (Unicode 3.9, D92) rather than Table 3-7's ranges

size_t ref_shortest_length(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

bool ref_scalar(uint32_t cp) { return cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF); }

// Length announced by the lead byte's bit pattern (0 for 10xxxxxx and 11111xxx).
size_t ref_lead_length(unsigned char b) {
  if ((b & 0x80) == 0) return 1;
  if ((b & 0xE0) == 0xC0) return 2;
  if ((b & 0xF0) == 0xE0) return 3;
  if ((b & 0xF8) == 0xF0) return 4;
  return 0;
}

// Decodes s[pos..] by bit pattern; true when it is a well-formed sequence.
bool ref_decode(std::string_view s, size_t pos, uint32_t* cp, size_t* len) {
  const auto b0 = static_cast<unsigned char>(s[pos]);
  const size_t n = ref_lead_length(b0);
  if (n == 0 || pos + n > s.size()) return false;
  uint32_t v = n == 1 ? b0 : (b0 & (0x7Fu >> n));
  for (size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(s[pos + k]);
    if ((b & 0xC0) != 0x80) return false;
    v = (v << 6) | (b & 0x3F);
  }
  if (!ref_scalar(v) || ref_shortest_length(v) != n) return false;
  *cp = v;
  *len = n;
  return true;
}

// First offset where the reference finds no well-formed sequence (s.size() if none).
size_t ref_first_invalid(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    uint32_t cp;
    size_t len;
    if (!ref_decode(s, pos, &cp, &len)) return pos;
    pos += len;
  }
  return s.size();
}

std::string ref_encode(uint32_t cp) {
  std::string s;
  const size_t n = ref_shortest_length(cp);
  if (n == 1) return std::string(1, static_cast<char>(cp));
  const unsigned lead_mark = n == 2 ? 0xC0 : n == 3 ? 0xE0 : 0xF0;
  s.push_back(static_cast<char>(lead_mark | (cp >> (6 * (n - 1)))));
  for (size_t k = n - 1; k-- > 0;) s.push_back(static_cast<char>(0x80 | ((cp >> (6 * k)) & 0x3F)));
  return s;
}

// ---- Table 3-7

struct WellFormed {
  std::string seq;
  char32_t cp;
};

TEST(Utf8, Table3_7BoundariesDecode) {
  // First and last sequence of every row of Table 3-7.
  const std::vector<WellFormed> cases = {
      {bytes({0x00}), 0x0000},                   {bytes({0x7F}), 0x007F},
      {bytes({0xC2, 0x80}), 0x0080},             {bytes({0xDF, 0xBF}), 0x07FF},
      {bytes({0xE0, 0xA0, 0x80}), 0x0800},       {bytes({0xE0, 0xBF, 0xBF}), 0x0FFF},
      {bytes({0xE1, 0x80, 0x80}), 0x1000},       {bytes({0xEC, 0xBF, 0xBF}), 0xCFFF},
      {bytes({0xED, 0x80, 0x80}), 0xD000},       {bytes({0xED, 0x9F, 0xBF}), 0xD7FF},
      {bytes({0xEE, 0x80, 0x80}), 0xE000},       {bytes({0xEF, 0xBF, 0xBF}), 0xFFFF},
      {bytes({0xF0, 0x90, 0x80, 0x80}), 0x10000}, {bytes({0xF0, 0xBF, 0xBF, 0xBF}), 0x3FFFF},
      {bytes({0xF1, 0x80, 0x80, 0x80}), 0x40000}, {bytes({0xF3, 0xBF, 0xBF, 0xBF}), 0xFFFFF},
      {bytes({0xF4, 0x80, 0x80, 0x80}), 0x100000}, {bytes({0xF4, 0x8F, 0xBF, 0xBF}), 0x10FFFF},
  };
  for (const auto& c : cases) {
    const utf8::Decoded d = utf8::decode(c.seq, 0);
    EXPECT_TRUE(d.ok()) << hex(c.seq);
    EXPECT_EQ(d.cp, c.cp) << hex(c.seq);
    EXPECT_EQ(d.length, c.seq.size()) << hex(c.seq);
    EXPECT_TRUE(utf8::is_valid(c.seq)) << hex(c.seq);
    EXPECT_EQ(utf8::encode(c.cp), c.seq) << std::hex << static_cast<uint32_t>(c.cp);
    EXPECT_EQ(utf8::encoded_length(c.cp), c.seq.size());
  }
}

struct IllFormed {
  std::string seq;
  uint32_t length;  // the maximal subpart decode() reports at offset 0
  const char* why;
};

void expect_ill_formed(const std::vector<IllFormed>& cases) {
  for (const auto& c : cases) {
    const utf8::Decoded d = utf8::decode(c.seq, 0);
    EXPECT_EQ(d.status, utf8::DecodeStatus::kIllFormed) << hex(c.seq) << " " << c.why;
    EXPECT_EQ(d.cp, utf8::kReplacementChar) << hex(c.seq);
    EXPECT_EQ(d.length, c.length) << hex(c.seq) << " " << c.why;
    EXPECT_FALSE(utf8::is_valid(c.seq)) << hex(c.seq);
    EXPECT_EQ(utf8::first_invalid(c.seq), 0u) << hex(c.seq);
    EXPECT_EQ(utf8::first_invalid("ok" + c.seq), 2u) << hex(c.seq);
  }
}

TEST(Utf8, Overlongs) {
  expect_ill_formed({
      {bytes({0xC0, 0x80}), 1, "U+0000 in 2 bytes"},
      {bytes({0xC1, 0xBF}), 1, "U+007F in 2 bytes"},
      {bytes({0xE0, 0x80, 0x80}), 1, "U+0000 in 3 bytes"},
      {bytes({0xE0, 0x9F, 0xBF}), 1, "U+07FF in 3 bytes"},
      {bytes({0xF0, 0x80, 0x80, 0x80}), 1, "U+0000 in 4 bytes"},
      {bytes({0xF0, 0x8F, 0xBF, 0xBF}), 1, "U+FFFF in 4 bytes"},
  });
}

TEST(Utf8, Surrogates) {
  expect_ill_formed({
      {bytes({0xED, 0xA0, 0x80}), 1, "U+D800"},
      {bytes({0xED, 0xAF, 0xBF}), 1, "U+DBFF"},
      {bytes({0xED, 0xB0, 0x80}), 1, "U+DC00"},
      {bytes({0xED, 0xBF, 0xBF}), 1, "U+DFFF"},
      {bytes({0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80}), 1, "CESU-8 pair for U+1F600"},
  });
  EXPECT_FALSE(utf8::is_scalar_value(0xD800));
  EXPECT_FALSE(utf8::is_scalar_value(0xDFFF));
  EXPECT_TRUE(utf8::is_scalar_value(0xD7FF));
  EXPECT_TRUE(utf8::is_scalar_value(0xE000));
}

TEST(Utf8, AboveMaxCodePoint) {
  expect_ill_formed({
      {bytes({0xF4, 0x90, 0x80, 0x80}), 1, "U+110000"},
      {bytes({0xF4, 0xBF, 0xBF, 0xBF}), 1, "U+13FFFF"},
      {bytes({0xF5, 0x80, 0x80, 0x80}), 1, "lead F5"},
      {bytes({0xF7, 0xBF, 0xBF, 0xBF}), 1, "U+1FFFFF"},
      {bytes({0xF8, 0x88, 0x80, 0x80, 0x80}), 1, "5-byte form"},
      {bytes({0xFC, 0x84, 0x80, 0x80, 0x80, 0x80}), 1, "6-byte form"},
      {bytes({0xFE}), 1, "FE"},
      {bytes({0xFF}), 1, "FF"},
  });
  EXPECT_FALSE(utf8::is_scalar_value(0x110000));
  EXPECT_TRUE(utf8::is_scalar_value(0x10FFFF));
}

TEST(Utf8, BrokenContinuations) {
  expect_ill_formed({
      {bytes({0x80}), 1, "lone continuation"},
      {bytes({0xBF}), 1, "lone continuation"},
      {bytes({0xC2, 0x41}), 1, "ASCII after a 2-byte lead"},
      {bytes({0xC2, 0xC0}), 1, "C0 after a 2-byte lead"},
      {bytes({0xE4, 0xB8, 0x41}), 2, "3-byte sequence cut by ASCII"},
      {bytes({0xF0, 0x9F, 0x98, 0x41}), 3, "4-byte sequence cut by ASCII"},
      {bytes({0xF1, 0x80, 0x80, 0xE1}), 3, "4-byte sequence cut by a lead"},
  });
}

TEST(Utf8, TruncatedSequences) {
  struct Case {
    std::string seq;
    uint32_t length;
  };
  const std::vector<Case> cases = {
      {bytes({0xC2}), 1},
      {bytes({0xE0, 0xA0}), 2},
      {bytes({0xE4, 0xB8}), 2},
      {bytes({0xED, 0x9F}), 2},
      {bytes({0xF0, 0x9F, 0x98}), 3},
      {bytes({0xF4, 0x8F}), 2},
      {bytes({0xF4}), 1},
  };
  for (const auto& c : cases) {
    const utf8::Decoded d = utf8::decode(c.seq, 0);
    EXPECT_EQ(d.status, utf8::DecodeStatus::kTruncated) << hex(c.seq);
    EXPECT_EQ(d.length, c.length) << hex(c.seq);
    EXPECT_FALSE(utf8::is_valid(c.seq)) << hex(c.seq);
    EXPECT_EQ(utf8::first_invalid("abc" + c.seq), 3u) << hex(c.seq);
    EXPECT_EQ(utf8::incomplete_suffix_length("x" + c.seq), c.seq.size()) << hex(c.seq);
  }
  // Ill-formed prefixes are not "incomplete": no continuation can repair them.
  EXPECT_EQ(utf8::incomplete_suffix_length(bytes({0xED, 0xA0})), 0u);  // surrogate
  EXPECT_EQ(utf8::incomplete_suffix_length(bytes({0xE0, 0x80})), 0u);  // overlong
  EXPECT_EQ(utf8::incomplete_suffix_length(bytes({0xF4, 0x90})), 0u);  // > U+10FFFF
  EXPECT_EQ(utf8::incomplete_suffix_length(bytes({0xC0})), 0u);
  EXPECT_EQ(utf8::incomplete_suffix_length(bytes({0x80, 0x80})), 0u);
  EXPECT_EQ(utf8::incomplete_suffix_length(bytes({0xE4, 0xB8, 0xAD})), 0u);  // complete
  EXPECT_EQ(utf8::incomplete_suffix_length(""), 0u);
  EXPECT_EQ(utf8::incomplete_suffix_length("abc"), 0u);
}

// Unicode 15, chapter 3, Table 3-8: one U+FFFD per maximal subpart.
TEST(Utf8, Table3_8MaximalSubparts) {
  const std::string s = bytes({0x61, 0xF1, 0x80, 0x80, 0xE1, 0x80, 0xC2, 0x62, 0x80, 0x63, 0x80, 0xBF, 0x64});
  std::vector<char32_t> got;
  for (size_t pos = 0; pos < s.size();) {
    const utf8::Decoded d = utf8::decode(s, pos);
    got.push_back(d.cp);
    pos += d.length;
  }
  const std::vector<char32_t> want = {U'a', 0xFFFD, 0xFFFD, 0xFFFD, U'b', 0xFFFD, U'c', 0xFFFD, 0xFFFD, U'd'};
  EXPECT_EQ(got, want);
}

// ---- round trips

TEST(Utf8, RoundTripOfEveryClassBoundary) {
  const uint32_t boundaries[] = {0x0,    0x7F,    0x80,    0x7FF,   0x800,    0xFFF,    0x1000,  0xCFFF,
                                 0xD000, 0xD7FF,  0xE000,  0xFFFD,  0xFFFF,   0x10000,  0x3FFFF, 0x40000,
                                 0xFFFFF, 0x100000, 0x10FFFF};
  for (uint32_t cp : boundaries) {
    const std::string s = utf8::encode(cp);
    EXPECT_EQ(s, ref_encode(cp)) << std::hex << cp;
    const utf8::Decoded d = utf8::decode(s, 0);
    EXPECT_TRUE(d.ok());
    EXPECT_EQ(static_cast<uint32_t>(d.cp), cp);
    EXPECT_EQ(d.length, s.size());
  }
}

TEST(Utf8, RoundTripOfEveryScalarValue) {
  for (uint32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (!ref_scalar(cp)) continue;
    std::string s;
    utf8::append(s, cp);
    ASSERT_EQ(s, ref_encode(cp)) << std::hex << cp;
    const utf8::Decoded d = utf8::decode(s, 0);
    ASSERT_TRUE(d.ok()) << std::hex << cp;
    ASSERT_EQ(static_cast<uint32_t>(d.cp), cp);
    ASSERT_EQ(d.length, s.size());
    ASSERT_EQ(utf8::encoded_length(cp), s.size());
  }
}

TEST(Utf8, NonScalarValuesEncodeAsReplacement) {
  const std::string fffd = bytes({0xEF, 0xBF, 0xBD});
  for (uint32_t cp : {0xD800u, 0xDBFFu, 0xDC00u, 0xDFFFu, 0x110000u, 0x1FFFFFu, 0xFFFFFFFFu}) {
    EXPECT_EQ(utf8::encode(cp), fffd) << std::hex << cp;
    EXPECT_EQ(utf8::encoded_length(cp), 3u);
  }
}

// ---- exhaustive agreement with the reference

TEST(Utf8, AllOneAndTwoByteStringsMatchReference) {
  for (int a = 0; a < 256; ++a) {
    const std::string s1 = bytes({a});
    ASSERT_EQ(utf8::first_invalid(s1), ref_first_invalid(s1)) << hex(s1);
    for (int b = 0; b < 256; ++b) {
      const std::string s2 = bytes({a, b});
      ASSERT_EQ(utf8::first_invalid(s2), ref_first_invalid(s2)) << hex(s2);
    }
  }
}

TEST(Utf8, AllThreeByteStringsWithAMultiByteLeadMatchReference) {
  std::string s(3, '\0');
  for (int a = 0xC0; a < 0x100; ++a) {
    for (int b = 0; b < 256; ++b) {
      for (int c = 0; c < 256; ++c) {
        s[0] = static_cast<char>(a);
        s[1] = static_cast<char>(b);
        s[2] = static_cast<char>(c);
        ASSERT_EQ(utf8::first_invalid(s), ref_first_invalid(s)) << hex(s);
        uint32_t cp;
        size_t len;
        const bool ref_ok = ref_decode(s, 0, &cp, &len);
        const utf8::Decoded d = utf8::decode(s, 0);
        ASSERT_EQ(d.ok(), ref_ok) << hex(s);
        if (ref_ok) {
          ASSERT_EQ(static_cast<uint32_t>(d.cp), cp) << hex(s);
          ASSERT_EQ(d.length, len) << hex(s);
        }
      }
    }
  }
}

TEST(Utf8, FourByteLeadsMatchReference) {
  // Every lead F0..FF with every second byte, and third / fourth bytes at the edges of the
  // continuation range and just outside it.
  const int edges[] = {0x00, 0x7F, 0x80, 0x81, 0xBE, 0xBF, 0xC0, 0xFF};
  std::string s(4, '\0');
  for (int a = 0xF0; a < 0x100; ++a) {
    for (int b = 0; b < 256; ++b) {
      for (int c : edges) {
        for (int d : edges) {
          s[0] = static_cast<char>(a);
          s[1] = static_cast<char>(b);
          s[2] = static_cast<char>(c);
          s[3] = static_cast<char>(d);
          ASSERT_EQ(utf8::first_invalid(s), ref_first_invalid(s)) << hex(s);
          uint32_t cp;
          size_t len;
          const bool ref_ok = ref_decode(s, 0, &cp, &len);
          const utf8::Decoded dec = utf8::decode(s, 0);
          ASSERT_EQ(dec.ok(), ref_ok) << hex(s);
          if (ref_ok) {
            ASSERT_EQ(static_cast<uint32_t>(dec.cp), cp) << hex(s);
          }
        }
      }
    }
  }
}

// first_invalid skips ASCII 8 bytes at a time: an error at any offset of the word must be found.
TEST(Utf8, FirstInvalidAtEveryOffsetOfTheAsciiFastPath) {
  for (size_t prefix = 0; prefix < 40; ++prefix) {
    for (const std::string& bad : {bytes({0x80}), bytes({0xC0, 0x80}), bytes({0xED, 0xA0, 0x80}), bytes({0xE4})}) {
      const std::string s = std::string(prefix, 'a') + bad + std::string(17, 'b');
      EXPECT_EQ(utf8::first_invalid(s), prefix) << prefix << " " << hex(bad);
      // The same after a multi-byte character, so the fast path restarts at an odd offset.
      const std::string t = bytes({0xE4, 0xB8, 0xAD}) + s;
      EXPECT_EQ(utf8::first_invalid(t), prefix + 3) << prefix << " " << hex(bad);
    }
    const std::string good = std::string(prefix, 'a') + bytes({0xF0, 0x9F, 0x98, 0x80}) + std::string(prefix, 'z');
    EXPECT_TRUE(utf8::is_valid(good));
  }
  EXPECT_TRUE(utf8::is_valid(""));
  EXPECT_EQ(utf8::first_invalid(""), 0u);
}

}  // namespace
}  // namespace edgellm
