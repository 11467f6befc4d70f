// One bit per vocabulary id: the set of tokens a constraint allows next (sampler.h's
// TokenConstraint fills it, the sampler masks the logits of the others). 151,936 ids are 2,374
// 64-bit words (19 KB).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace edgellm {

class TokenBitset {
 public:
  TokenBitset() = default;
  explicit TokenBitset(int32_t n) { resize(n); }

  void resize(int32_t n) {
    n_ = n;
    words_.assign((static_cast<size_t>(n) + 63) / 64, 0);
  }
  int32_t size() const { return n_; }
  void clear_all() { std::fill(words_.begin(), words_.end(), 0); }
  void set_all() {
    std::fill(words_.begin(), words_.end(), ~uint64_t{0});
    trim();
  }
  void set(int32_t id) { words_[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63); }
  void reset(int32_t id) { words_[static_cast<size_t>(id) >> 6] &= ~(uint64_t{1} << (id & 63)); }
  bool test(int32_t id) const { return (words_[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1; }
  size_t count() const {
    size_t c = 0;
    for (uint64_t w : words_) c += static_cast<size_t>(std::popcount(w));
    return c;
  }
  bool none() const {
    for (uint64_t w : words_) {
      if (w != 0) return false;
    }
    return true;
  }
  void or_with(const TokenBitset& other) {
    for (size_t i = 0; i < words_.size(); ++i) words_[i] |= other.words_[i];
  }
  // Calls f(id) for every set bit in increasing order.
  template <class F>
  void for_each(F&& f) const {
    for (size_t w = 0; w < words_.size(); ++w) {
      uint64_t bits = words_[w];
      while (bits != 0) {
        f(static_cast<int32_t>(w * 64 + static_cast<size_t>(std::countr_zero(bits))));
        bits &= bits - 1;
      }
    }
  }
  std::vector<uint64_t>& words() { return words_; }
  const std::vector<uint64_t>& words() const { return words_; }

 private:
  void trim() {
    if (n_ % 64 != 0 && !words_.empty()) words_.back() &= (uint64_t{1} << (n_ % 64)) - 1;
  }
  int32_t n_ = 0;
  std::vector<uint64_t> words_;
};

}  // namespace edgellm
