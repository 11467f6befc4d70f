// The one UTF-8 codec of EdgeLLM: strict RFC 3629 / Unicode Table 3-7 decoding and encoding.
// Well-formed means: the shortest form (no overlongs such as C0 80 or E0 80 80), no UTF-16
// surrogates (U+D800..U+DFFF, e.g. ED A0 80), nothing above U+10FFFF (F4 90 80 80, F5..FF).
//
// What a caller does with ill-formed bytes is the caller's rule (the tokenizer replaces them with
// U+FFFD, the Jinja engine keeps them as raw bytes, JSON escaping writes \ufffd); decode() gives
// every caller the same facts to apply it: the code point, or the length of the "maximal subpart"
// (Unicode 3.9, D93b: the longest prefix of a well-formed sequence, at least one byte) and
// whether the input ended inside a well-formed prefix.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace edgellm::utf8 {

inline constexpr char32_t kReplacementChar = 0xFFFD;
inline constexpr char32_t kMaxCodePoint = 0x10FFFF;

// A Unicode scalar value: a code point that is not a surrogate. Only these have an encoding.
constexpr bool is_scalar_value(char32_t cp) { return cp <= kMaxCodePoint && (cp < 0xD800 || cp > 0xDFFF); }

// Bytes append(cp) writes: 1..4, and 3 for a non-scalar value (written as U+FFFD).
constexpr size_t encoded_length(char32_t cp) {
  if (!is_scalar_value(cp)) return 3;
  return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

enum class DecodeStatus : uint8_t {
  kOk,         // a well-formed sequence of `length` bytes
  kIllFormed,  // the `length` bytes (the maximal subpart, 1..3) cannot be completed
  kTruncated,  // the `length` bytes (1..3) are a well-formed prefix cut by the end of the input
};

struct Decoded {
  char32_t cp = kReplacementChar;  // the code point; kReplacementChar unless ok()
  uint32_t length = 0;             // bytes consumed, >= 1 for any pos < size
  DecodeStatus status = DecodeStatus::kIllFormed;

  bool ok() const { return status == DecodeStatus::kOk; }
};

// Decodes the sequence starting at s[pos] (pos < s.size()). On an error the length is that of the
// maximal subpart, so a caller that substitutes one U+FFFD per error follows the Unicode / W3C /
// WHATWG practice ("61 F1 80 80 E1 80 C2 62" gives a, FFFD, FFFD, FFFD, b); a caller that wants
// one replacement per byte advances by 1 instead.
inline Decoded decode(std::string_view s, size_t pos) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  const unsigned b0 = p[pos];
  if (b0 < 0x80) return {b0, 1, DecodeStatus::kOk};
  // Sequence length and the range of the second byte (Table 3-7): the narrowed ranges after E0,
  // ED, F0 and F4 are what exclude overlongs, surrogates and values above U+10FFFF.
  uint32_t need = 0;
  unsigned lo = 0x80, hi = 0xBF;
  char32_t cp = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2;
    cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 3;
    cp = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 4;
    cp = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return {kReplacementChar, 1, DecodeStatus::kIllFormed};  // 80..C1 or F5..FF
  }
  for (uint32_t i = 1; i < need; ++i) {
    if (pos + i >= n) return {kReplacementChar, i, DecodeStatus::kTruncated};
    const unsigned b = p[pos + i];
    if (b < lo || b > hi) return {kReplacementChar, i, DecodeStatus::kIllFormed};
    cp = (cp << 6) | (b & 0x3F);
    lo = 0x80;
    hi = 0xBF;
  }
  return {cp, need, DecodeStatus::kOk};
}

// Byte offset of the first ill-formed (or truncated) sequence; s.size() when s is well-formed.
size_t first_invalid(std::string_view s);
// The whole string is well-formed UTF-8.
inline bool is_valid(std::string_view s) { return first_invalid(s) == s.size(); }

// Length of the well-formed but unfinished sequence that ends s (0..3): the bytes a streaming
// consumer must hold back until more input arrives. 0 when s ends with a complete character or
// with bytes that no continuation can make well-formed.
size_t incomplete_suffix_length(std::string_view s);

// Appends the encoding of cp; a non-scalar value (surrogate, > U+10FFFF) appends U+FFFD, so the
// output is always well-formed.
void append(std::string& out, char32_t cp);
std::string encode(char32_t cp);

}  // namespace edgellm::utf8
