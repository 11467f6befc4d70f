#include "grammar/utf8_ranges.h"

#include "core/utf8.h"

namespace edgellm::grammar {

namespace {

// Appends the patterns of [lo, hi], a range of one encoded length that contains no surrogate.
void split(uint32_t lo, uint32_t hi, std::vector<Utf8Sequence>& out) {
  // Ranges that cross an encoded-length boundary are cut there first.
  static constexpr uint32_t kBounds[] = {0x7F, 0x7FF, 0xFFFF};
  for (const uint32_t b : kBounds) {
    if (lo <= b && hi > b) {
      split(lo, b, out);
      split(b + 1, hi, out);
      return;
    }
  }
  if (hi <= 0x7F) {
    Utf8Sequence s;
    s.length = 1;
    s.bytes[0] = {static_cast<uint8_t>(lo), static_cast<uint8_t>(hi)};
    out.push_back(s);
    return;
  }
  // Cut until lo and hi differ only in whole trailing continuation bytes: then each byte position
  // ranges independently between lo's byte and hi's byte.
  for (int i = 1; i < 4; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        split(lo, lo | m, out);
        split((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        split(lo, (hi & ~m) - 1, out);
        split(hi & ~m, hi, out);
        return;
      }
    }
  }
  const std::string a = utf8::encode(lo);
  const std::string b = utf8::encode(hi);
  Utf8Sequence s;
  s.length = static_cast<uint8_t>(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    s.bytes[i] = {static_cast<uint8_t>(a[i]), static_cast<uint8_t>(b[i])};
  }
  out.push_back(s);
}

}  // namespace

std::vector<Utf8Sequence> utf8_sequences(const std::vector<CodePointRange>& ranges) {
  std::vector<Utf8Sequence> out;
  for (const CodePointRange& r : ranges) split(r.lo, r.hi, out);
  return out;
}

}  // namespace edgellm::grammar
