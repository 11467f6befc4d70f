#include "tokenizer/token_index.h"

namespace edgellm {

uint64_t TokenIndex::hash(std::string_view s) {
  // FNV-1a, 64-bit: token texts are short, and it needs no seed or tables.
  uint64_t h = 1469598103934665603ull;
  for (const char c : s) {
    h ^= static_cast<uint8_t>(c);
    h *= 1099511628211ull;
  }
  return h;
}

void TokenIndex::build(const std::vector<std::string>& tokens) {
  size_t cap = 16;
  while (cap < 2 * tokens.size()) cap *= 2;
  slots_.assign(cap, -1);
  const size_t mask = cap - 1;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string_view text = tokens[i];
    for (size_t at = hash(text) & mask;; at = (at + 1) & mask) {
      int32_t& slot = slots_[at];
      if (slot < 0 || tokens[static_cast<size_t>(slot)] == text) {
        slot = static_cast<int32_t>(i);  // new, or a duplicate text: the later id replaces it
        break;
      }
    }
  }
}

int32_t TokenIndex::find(const std::vector<std::string>& tokens, std::string_view text) const {
  if (slots_.empty()) return -1;
  const size_t mask = slots_.size() - 1;
  for (size_t at = hash(text) & mask;; at = (at + 1) & mask) {
    const int32_t id = slots_[at];
    if (id < 0) return -1;
    if (tokens[static_cast<size_t>(id)] == text) return id;
  }
}

}  // namespace edgellm
