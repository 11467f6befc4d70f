// How many tokens to draft next, from how the last drafts fared (speculative decoding's back-off,
// docs/speculative-decoding.md). Wrong drafts cost a wider forward for nothing, so the draft length
// follows the acceptance, as Hugging Face's assisted generation does ("heuristic": +2 after a
// verify that kept every draft, -1 after one that kept some), halving after one that kept none
// (its first draft was already wrong: at k = 8 the descent to 1 takes 3 wide forwards instead of
// 7; always-wrong drafts on Qwen2.5-1.5B Q4_K_M cost 8 % of 48 tokens with -1 steps,
// docs/benchmarks.md), and below 1 speculation pauses:
// after a verify at length 1 that kept nothing, no drafting for 2, 4, 8 ... up to kMaxPause
// steps, then one probe at length 1; any kept draft ends the pause sequence. With drafts that are
// always wrong the cost falls to one 2-token forward every kMaxPause + 1 tokens; with drafts that
// are always right the length stays at its maximum. The schedule changes only how many forward
// passes run, never the output.
#pragma once

#include <algorithm>
#include <cstdint>

namespace edgellm {

class DraftSchedule {
 public:
  static constexpr int32_t kMaxPause = 32;

  explicit DraftSchedule(int32_t max_len) : max_(max_len), len_(max_len) {}

  // Tokens to draft before the next forward (0: decode one token). Call once per decode step.
  int32_t next() {
    if (pause_left_ > 0) {
      --pause_left_;
      return 0;
    }
    return len_;
  }

  // A verify forward carried `drafted` (> 0) drafts and the sampler kept `accepted` of them.
  void verified(int32_t drafted, int32_t accepted) {
    if (accepted == drafted) {
      len_ = std::min(max_, len_ + 2);
      pause_ = 0;
    } else if (len_ > 1) {
      len_ = accepted == 0 ? std::max<int32_t>(1, len_ / 2) : len_ - 1;
    } else if (accepted == 0) {
      pause_ = pause_ == 0 ? 2 : std::min(kMaxPause, 2 * pause_);
      pause_left_ = pause_;
    }
    if (accepted > 0) pause_ = 0;
  }

  int32_t length() const { return len_; }

 private:
  int32_t max_;
  int32_t len_;
  int32_t pause_ = 0;       // length of the current pause (0: none since the last kept draft)
  int32_t pause_left_ = 0;  // steps of it still to wait
};

}  // namespace edgellm
