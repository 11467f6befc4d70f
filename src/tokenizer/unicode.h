// Unicode helpers for the tokenizers: UTF-8 decoding with a documented error rule (on top of the
// one codec, core/utf8.h), and code point category flags from the generated table
// (unicode_tables.cpp, made by scripts/gen-unicode-tables.py; the Unicode version is
// kUnicodeVersion).
//
// Malformed UTF-8 rule (used everywhere in the tokenizer, and by sanitize_user_text / decode):
// the decoder reads the longest prefix of a well-formed sequence (Unicode "maximal subpart",
// the W3C/WHATWG rule). If that prefix is not a complete character, the prefix (at least one
// byte) becomes one U+FFFD. So overlong forms (C0 80), surrogates (ED A0 80), code points above
// U+10FFFF (F4 90 ..), bytes F5..FF and lone continuation bytes each produce one U+FFFD per
// offending byte, and a truncated sequence (E4 B8 then end) produces one U+FFFD for the whole
// truncated sequence.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/utf8.h"

namespace edgellm::unicode {

inline constexpr uint32_t kReplacementChar = utf8::kReplacementChar;

// Category flags: bit set per code point (must match scripts/gen-unicode-tables.py).
enum : uint16_t {
  kLetter = 0x01,      // \p{L}
  kNumber = 0x02,      // \p{N}
  kPunct = 0x04,       // \p{P}
  kSymbol = 0x08,      // \p{S}
  kMark = 0x10,        // \p{M}
  kSeparator = 0x20,   // \p{Z}
  kControl = 0x40,     // Cc Cf Cs Co
  kUnassigned = 0x80,  // Cn
  kWhitespace = 0x100, // White_Space property (\s)
};

struct CodepointRange {
  uint32_t start;
  uint16_t flags;
};
extern const char* const kUnicodeVersion;
extern const CodepointRange kCodepointRanges[];
extern const size_t kCodepointRangeCount;

// Flags of a code point; code points above U+10FFFF are reported as kUnassigned.
uint16_t flags(uint32_t cp);
inline bool is_letter(uint32_t cp) { return flags(cp) & kLetter; }
inline bool is_number(uint32_t cp) { return flags(cp) & kNumber; }
inline bool is_whitespace(uint32_t cp) { return flags(cp) & kWhitespace; }

// Decodes one character starting at text[pos]; sets *len to the bytes consumed (>= 1) and
// *valid to false when the bytes were malformed (the return value is then U+FFFD).
inline uint32_t decode_one(std::string_view text, size_t pos, size_t* len, bool* valid) {
  const utf8::Decoded d = utf8::decode(text, pos);
  *len = d.length;
  *valid = d.ok();
  return d.cp;
}

// Length in bytes of the well-formed prefix of a UTF-8 sequence that starts at text[pos] and is
// cut by the end of `text`: > 0 only if text[pos..] is a *valid but incomplete* sequence.
inline size_t incomplete_tail_length(std::string_view text) { return utf8::incomplete_suffix_length(text); }

// Appends the UTF-8 encoding of cp (cp must be a scalar value; others append U+FFFD).
inline void append_utf8(std::string& out, uint32_t cp) { utf8::append(out, cp); }
inline std::string to_utf8(uint32_t cp) { return utf8::encode(cp); }

// Code points with their byte offsets in the source text (offsets.size() == cps.size() + 1).
struct DecodedText {
  std::vector<uint32_t> cps;
  std::vector<size_t> offsets;
};
DecodedText decode(std::string_view text);

// Replaces malformed sequences by U+FFFD per the rule above; returns how many U+FFFD were
// inserted through *n_replaced.
std::string make_valid(std::string_view text, size_t* n_replaced = nullptr);

}  // namespace edgellm::unicode
