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
  // The well-formed prefix (usually all of it) is copied as one block.
  size_t pos = utf8::first_invalid(text);
  std::string out(text.substr(0, pos));
  size_t replaced = 0;
  while (pos < text.size()) {
    const utf8::Decoded d = utf8::decode(text, pos);
    if (d.ok()) {
      out.append(text.data() + pos, d.length);
    } else {
      utf8::append(out, kReplacementChar);
      ++replaced;
    }
    pos += d.length;
  }
  if (n_replaced) *n_replaced = replaced;
  return out;
}

}  // namespace edgellm::unicode
