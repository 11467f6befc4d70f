#include "generation/stop_strings.h"

#include <algorithm>
#include <utility>

#include "core/error.h"

namespace edgellm {

StopStringFilter::StopStringFilter(std::vector<std::string> stops) : stops_(std::move(stops)) {
  for (size_t i = 0; i < stops_.size(); ++i) {
    require(!stops_[i].empty(), ErrorCode::kInvalidArgument,
            "stop string #" + std::to_string(i + 1) + " is empty");
  }
}

std::string StopStringFilter::push(std::string_view text) {
  if (matched_) return {};
  pending_.append(text);
  if (stops_.empty()) {
    std::string out;
    out.swap(pending_);
    return out;
  }
  // Earliest occurrence of any stop string; on equal starts the longer one is reported (it
  // covers the shorter, and both cut the text at the same place).
  size_t best = std::string::npos;
  const std::string* best_stop = nullptr;
  for (const auto& s : stops_) {
    const size_t at = pending_.find(s);
    if (at == std::string::npos) continue;
    if (at < best || (at == best && s.size() > best_stop->size())) {
      best = at;
      best_stop = &s;
    }
  }
  if (best_stop != nullptr) {
    matched_ = true;
    matched_stop_ = *best_stop;
    std::string out = pending_.substr(0, best);
    pending_.clear();
    return out;
  }
  // Longest suffix of pending_ that is a proper prefix of some stop string: that much must wait.
  size_t hold = 0;
  for (const auto& s : stops_) {
    const size_t max_k = std::min(s.size() - 1, pending_.size());
    for (size_t k = max_k; k > hold; --k) {
      if (pending_.compare(pending_.size() - k, k, s, 0, k) == 0) {
        hold = k;
        break;
      }
    }
  }
  std::string out = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return out;
}

std::string StopStringFilter::flush() {
  std::string out;
  if (!matched_) out.swap(pending_);
  pending_.clear();
  return out;
}

}  // namespace edgellm
