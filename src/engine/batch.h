// A batch is the unit of work of one forward pass: any mix of prompt tokens (prefill) and
// one-token decode steps from any number of sequences. Entries of the same sequence must have
// increasing positions; an entry attends to every cached position <= its own in its sequence.
#pragma once

#include <cstdint>
#include <vector>

namespace edgellm {

struct BatchEntry {
  int32_t seq_id = 0;        // which sequence's KV blocks this token belongs to
  int32_t token = 0;         // token id
  int32_t pos = 0;           // position in its sequence (RoPE angle and KV slot)
  bool want_logits = false;  // compute the output head for this entry
};

class Batch {
 public:
  void add(int32_t seq_id, int32_t token, int32_t pos, bool want_logits) {
    entries_.push_back({seq_id, token, pos, want_logits});
  }
  // Convenience: a whole prompt for one sequence starting at pos0; logits only for the last.
  void add_sequence(int32_t seq_id, const std::vector<int32_t>& tokens, int32_t pos0, bool logits_last = true) {
    for (size_t i = 0; i < tokens.size(); ++i) {
      add(seq_id, tokens[i], pos0 + static_cast<int32_t>(i), logits_last && i + 1 == tokens.size());
    }
  }
  void clear() {
    entries_.clear();
    stepwise_ = false;
  }
  // Runs the entries as decode steps: attention entry by entry (not by query blocks, whose GEMM
  // sums in another order) on the decode threads, so each entry's logits are bit-identical to
  // decoding the entries one forward pass at a time. Speculative decoding's verify batch (a
  // sequence's next token and its k drafts, generation/speculative.h) sets it: its greedy output
  // must be the tokens plain decoding gives, not merely close. clear() resets it.
  void set_stepwise(bool stepwise) { stepwise_ = stepwise; }
  bool stepwise() const { return stepwise_; }
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  const BatchEntry& operator[](size_t i) const { return entries_[i]; }
  const std::vector<BatchEntry>& entries() const { return entries_; }

 private:
  std::vector<BatchEntry> entries_;
  bool stepwise_ = false;
};

}  // namespace edgellm
