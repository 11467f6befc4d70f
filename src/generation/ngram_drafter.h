// Prompt-lookup (n-gram) drafting, as vLLM's ngram speculation and llama.cpp's lookup decoding:
// the last n tokens of the sequence are searched for among the earlier tokens (prompt and
// output); where they occurred before, the tokens that followed them then are the draft.
// Summaries, rewrites, document answers and JSON copy long spans of their input, and there the
// guesses are right; elsewhere they cost a wider forward pass, never a different output.
//
//   history   ... a b c d x y ... a b c   (suffix "a b c", n = 3)
//   draft          d x y ...              (what followed the most recent earlier "a b c")
//
// The longest n in [ngram_min, ngram_max] that matches wins; among its occurrences the most
// recent. Lookup is one hash probe per n, appending one token one insertion per n.
//
// Memory is bounded: the history keeps at most max_history tokens (4 bytes each) and the index
// at most (ngram_max - ngram_min + 1) x max_history entries (one per n-gram end, replaced in place
// when an n-gram recurs). When the history is full the older half is dropped and the index
// rebuilt from the rest (amortised O(n-gram sizes) per token). Defaults (2..4, 4096 tokens): at
// most 4096 x 4 B + 3 x 4096 entries of an unordered_map (~40 B each with its bucket) ~ 0.5 MB.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "generation/drafter.h"

namespace edgellm {

struct NgramDrafterParams {
  int32_t ngram_min = 2;       // shortest suffix looked up (1-token matches are mostly wrong guesses)
  int32_t ngram_max = 4;       // longest suffix looked up; at most kMaxNgram
  int32_t max_history = 4096;  // tokens kept for lookup; at least 2 x (ngram_max + 1)
};

class NgramDrafter final : public Drafter {
 public:
  static constexpr int32_t kMaxNgram = 16;

  // Throws Error(kInvalidArgument) naming the field for sizes out of range.
  explicit NgramDrafter(const NgramDrafterParams& params);

  void append(std::span<const int32_t> tokens) override;
  int32_t draft(int32_t max, int32_t* out) override;

  // The tokens lookup searches: the last max_history or fewer appended (tests check the bound).
  const std::vector<int32_t>& history() const { return history_; }
  size_t index_entries() const { return index_.size(); }
  const NgramDrafterParams& params() const { return params_; }

 private:
  // Key of the n tokens ending before history_[end] (n folded in, so sizes never collide by
  // construction; distinct n-grams may, and lookup compares the tokens).
  uint64_t key(size_t end, int32_t n) const;
  // Indexes the n-grams that end just before history_[end], for every n that fits.
  void index_before(size_t end);

  NgramDrafterParams params_;
  std::vector<int32_t> history_;
  // key -> index in history_ of the token that followed the most recent occurrence.
  std::unordered_map<uint64_t, int32_t> index_;
};

}  // namespace edgellm
