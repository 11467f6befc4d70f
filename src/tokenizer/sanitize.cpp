#include "tokenizer/sanitize.h"

#include "tokenizer/unicode.h"

namespace edgellm {

std::string sanitize_user_text(std::string_view text, size_t* n_changed) {
  std::string out;
  out.reserve(text.size());
  size_t changed = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t len = 0;
    bool valid = false;
    const uint32_t cp = unicode::decode_one(text, pos, &len, &valid);
    if (!valid) {
      unicode::append_utf8(out, unicode::kReplacementChar);
      ++changed;
    } else if ((cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') || (cp >= 0x7F && cp <= 0x9F)) {
      ++changed;  // dropped
    } else {
      out.append(text.substr(pos, len));
    }
    pos += len;
  }
  if (n_changed) *n_changed = changed;
  return out;
}

}  // namespace edgellm
