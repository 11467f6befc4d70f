// Token text -> id, as one flat open-addressing table of ids over the vocabulary's own strings.
//
// Why not std::unordered_map<std::string, int32_t>: for a 151,936-token vocabulary (Qwen) that
// map holds a copy of every token in its own heap node, ~10 MB; this table is 4 bytes per slot
// at a load of at most 1/2 (2 MiB for Qwen) and compares against the strings the tokenizer
// already keeps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace edgellm {

class TokenIndex {
 public:
  // Indexes tokens[i] -> i; with duplicate texts the last id wins (as llama.cpp's map). The
  // index keeps no pointer to `tokens` (the owner may move): find() takes the same vector.
  void build(const std::vector<std::string>& tokens);
  int32_t find(const std::vector<std::string>& tokens, std::string_view text) const;  // -1 when absent
  size_t bytes() const { return slots_.capacity() * sizeof(int32_t); }

 private:
  static uint64_t hash(std::string_view s);
  std::vector<int32_t> slots_;  // token id or -1; size a power of two
};

}  // namespace edgellm
