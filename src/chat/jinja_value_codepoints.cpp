// Python's code point indexing of strings over their UTF-8 bytes; core/utf8.h decodes and encodes.
#include "chat/jinja_value.h"
#include "core/utf8.h"

namespace edgellm::jinja {
namespace {

// Where an ill-formed byte b lives among the code points: above every scalar value.
constexpr uint32_t kRawByteBase = 0x110000u;

}  // namespace

std::vector<uint32_t> utf8_decode(std::string_view s) {
  std::vector<uint32_t> out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const utf8::Decoded d = utf8::decode(s, i);
    if (d.ok()) {
      out.push_back(d.cp);
      i += d.length;
    } else {
      out.push_back(kRawByteBase + static_cast<unsigned char>(s[i]));  // one byte at a time
      ++i;
    }
  }
  return out;
}

void utf8_append(std::string& out, uint32_t cp) {
  if (cp >= kRawByteBase && cp <= kRawByteBase + 0xFFu) {
    out += static_cast<char>(cp - kRawByteBase);
  } else {
    utf8::append(out, cp);
  }
}

std::string utf8_encode(const std::vector<uint32_t>& cps, size_t begin, size_t end) {
  std::string out;
  for (size_t i = begin; i < end && i < cps.size(); ++i) utf8_append(out, cps[i]);
  return out;
}

}  // namespace edgellm::jinja
