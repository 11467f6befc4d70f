#include "tokenizer/unicode.h"

#include <algorithm>

namespace edgellm::unicode {

uint16_t flags(uint32_t cp) {
  if (cp > 0x10FFFF) return kUnassigned;
  // ASCII is most of the text in practice; the table's first entries are small, but a cached
  // direct lookup avoids the binary search entirely.
  static const auto ascii = [] {
    struct Table { uint16_t f[128]; } t{};
    size_t r = 0;
    for (uint32_t c = 0; c < 128; ++c) {
      while (r + 1 < kCodepointRangeCount && kCodepointRanges[r + 1].start <= c) ++r;
      t.f[c] = kCodepointRanges[r].flags;
    }
    return t;
  }();
  if (cp < 128) return ascii.f[cp];
  const CodepointRange* begin = kCodepointRanges;
  const CodepointRange* end = kCodepointRanges + kCodepointRangeCount;
  const CodepointRange* it = std::upper_bound(
      begin, end, cp, [](uint32_t value, const CodepointRange& r) { return value < r.start; });
  return (it - 1)->flags;  // it > begin because the table starts at U+0000
}

uint32_t decode_one(std::string_view text, size_t pos, size_t* len, bool* valid) {
  const auto* s = reinterpret_cast<const uint8_t*>(text.data());
  const size_t n = text.size();
  const uint8_t b0 = s[pos];
  *valid = true;
  if (b0 < 0x80) {
    *len = 1;
    return b0;
  }
  // Expected length and the allowed range of the second byte (which excludes overlongs,
  // surrogates and values above U+10FFFF, per Unicode Table 3-7).
  size_t need = 0;
  uint8_t lo = 0x80, hi = 0xBF;
  uint32_t cp = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2; cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 3; cp = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 4; cp = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    *len = 1;  // C0, C1, F5..FF or a lone continuation byte
    *valid = false;
    return kReplacementChar;
  }
  size_t i = 1;
  for (; i < need; ++i) {
    if (pos + i >= n) break;
    const uint8_t b = s[pos + i];
    const uint8_t l = (i == 1) ? lo : 0x80;
    const uint8_t h = (i == 1) ? hi : 0xBF;
    if (b < l || b > h) break;
    cp = (cp << 6) | (b & 0x3F);
  }
  if (i < need) {
    *len = i;  // the maximal well-formed subpart becomes one U+FFFD
    *valid = false;
    return kReplacementChar;
  }
  *len = need;
  return cp;
}

size_t incomplete_tail_length(std::string_view text) {
  // A valid-but-incomplete sequence is at most 3 bytes long; look back for its lead byte.
  const size_t n = text.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const size_t pos = n - back;
    const auto b = static_cast<uint8_t>(text[pos]);
    if ((b & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
    if (b < 0xC2 || b > 0xF4) return 0;
    size_t len = 0;
    bool valid = false;
    decode_one(text, pos, &len, &valid);
    // Incomplete means: the decoder stopped only because the text ended.
    return (!valid && pos + len == n) ? back : 0;
  }
  return 0;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = kReplacementChar;
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string to_utf8(uint32_t cp) {
  std::string s;
  append_utf8(s, cp);
  return s;
}

DecodedText decode(std::string_view text) {
  DecodedText d;
  d.cps.reserve(text.size());
  d.offsets.reserve(text.size() + 1);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t len = 0;
    bool valid = false;
    d.offsets.push_back(pos);
    d.cps.push_back(decode_one(text, pos, &len, &valid));
    pos += len;
  }
  d.offsets.push_back(pos);
  return d;
}

std::string make_valid(std::string_view text, size_t* n_replaced) {
  std::string out;
  out.reserve(text.size());
  size_t replaced = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t len = 0;
    bool valid = false;
    const uint32_t cp = decode_one(text, pos, &len, &valid);
    if (valid) {
      out.append(text.data() + pos, len);
    } else {
      append_utf8(out, cp);
      ++replaced;
    }
    pos += len;
  }
  if (n_replaced) *n_replaced = replaced;
  return out;
}

}  // namespace edgellm::unicode
