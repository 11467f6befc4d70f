#include "core/utf8.h"

#include <cstring>

namespace edgellm::utf8 {

size_t first_invalid(std::string_view s) {
  const size_t n = s.size();
  size_t pos = 0;
  while (pos < n) {
    // Most text is ASCII: skip 8 bytes at a time while none has its top bit set.
    while (pos + 8 <= n) {
      uint64_t word;
      std::memcpy(&word, s.data() + pos, sizeof word);
      if (word & 0x8080808080808080ull) break;
      pos += 8;
    }
    if (pos >= n) break;
    const Decoded d = decode(s, pos);
    if (!d.ok()) return pos;
    pos += d.length;
  }
  return n;
}

size_t incomplete_suffix_length(std::string_view s) {
  // An unfinished sequence is at most 3 bytes long: look back for its lead byte.
  const size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const size_t pos = n - back;
    if ((static_cast<unsigned char>(s[pos]) & 0xC0) == 0x80) continue;  // a continuation byte
    const Decoded d = decode(s, pos);
    return d.status == DecodeStatus::kTruncated ? back : 0;
  }
  return 0;
}

void append(std::string& out, char32_t cp) {
  if (!is_scalar_value(cp)) cp = kReplacementChar;
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

std::string encode(char32_t cp) {
  std::string s;
  append(s, cp);
  return s;
}

}  // namespace edgellm::utf8
