#include "generation/ngram_drafter.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "core/hash.h"

namespace edgellm {

NgramDrafter::NgramDrafter(const NgramDrafterParams& params) : params_(params) {
  const auto bad = [](const std::string& what) { throw Error(ErrorCode::kInvalidArgument, "ngram drafter: " + what); };
  if (params.ngram_min < 1) bad("ngram_min " + std::to_string(params.ngram_min) + " < 1");
  if (params.ngram_max < params.ngram_min || params.ngram_max > kMaxNgram) {
    bad("ngram_max " + std::to_string(params.ngram_max) + " outside [ngram_min " + std::to_string(params.ngram_min) +
        ", " + std::to_string(kMaxNgram) + "]");
  }
  if (params.max_history < 2 * (params.ngram_max + 1)) {
    bad("max_history " + std::to_string(params.max_history) +
        " < 2 x (ngram_max + 1) = " + std::to_string(2 * (params.ngram_max + 1)));
  }
  history_.reserve(static_cast<size_t>(std::min(params.max_history, 1024)));
}

uint64_t NgramDrafter::key(size_t end, int32_t n) const {
  uint64_t h = hash_mix(static_cast<uint64_t>(n));
  for (size_t i = end - static_cast<size_t>(n); i < end; ++i) h = hash_combine(h, static_cast<uint32_t>(history_[i]));
  return h;
}

void NgramDrafter::index_before(size_t end) {
  for (int32_t n = params_.ngram_min; n <= params_.ngram_max && static_cast<size_t>(n) <= end; ++n) {
    index_[key(end, n)] = static_cast<int32_t>(end);  // the most recent occurrence wins
  }
}

void NgramDrafter::append(std::span<const int32_t> tokens) {
  for (int32_t t : tokens) {
    if (history_.size() == static_cast<size_t>(params_.max_history)) {
      // Full: keep the newer half and index it again (its n-grams, with what followed each).
      const size_t drop = history_.size() - static_cast<size_t>(params_.max_history / 2);
      history_.erase(history_.begin(), history_.begin() + static_cast<std::ptrdiff_t>(drop));
      index_.clear();
      for (size_t end = 1; end < history_.size(); ++end) index_before(end);
    }
    history_.push_back(t);
    index_before(history_.size() - 1);
  }
}

int32_t NgramDrafter::draft(int32_t max, int32_t* out) {
  const size_t len = history_.size();
  for (int32_t n = std::min<int32_t>(params_.ngram_max, static_cast<int32_t>(len) - 1); n >= params_.ngram_min; --n) {
    const auto it = index_.find(key(len, n));
    if (it == index_.end()) continue;
    const auto next = static_cast<size_t>(it->second);
    // Distinct n-grams may share a key: compare the tokens.
    if (!std::equal(history_.begin() + static_cast<std::ptrdiff_t>(next - static_cast<size_t>(n)),
                    history_.begin() + static_cast<std::ptrdiff_t>(next), history_.end() - n)) {
      continue;
    }
    const int32_t count = static_cast<int32_t>(std::min<size_t>(static_cast<size_t>(std::max(max, 0)), len - next));
    std::copy_n(history_.begin() + static_cast<std::ptrdiff_t>(next), count, out);
    return count;
  }
  return 0;
}

}  // namespace edgellm
