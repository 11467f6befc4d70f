// Stop strings for streaming generation. Text arrives piece by piece (one or more tokens per
// piece), and a stop string may be split across pieces, so text that could still become the start
// of a stop string is held back until the next piece decides. The stop string itself is never
// released.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace edgellm {

class StopStringFilter {
 public:
  // Throws Error(kInvalidArgument) for an empty stop string (it would match before any text).
  explicit StopStringFilter(std::vector<std::string> stops = {});

  // Appends newly generated text and returns the part that is now safe to emit. When a stop
  // string completes, the returned text ends right before its first occurrence, matched() becomes
  // true and everything after it is dropped; later calls return "".
  std::string push(std::string_view text);

  // End of generation without a match: returns the held-back text (it can no longer become a stop
  // string). Returns "" after a match.
  std::string flush();

  bool matched() const { return matched_; }
  // The stop string that matched (empty when none did).
  const std::string& matched_stop() const { return matched_stop_; }
  // Bytes currently held back.
  size_t held_bytes() const { return pending_.size(); }
  bool empty() const { return stops_.empty(); }

 private:
  std::vector<std::string> stops_;
  std::string pending_;  // released nowhere yet; never contains a whole stop string
  bool matched_ = false;
  std::string matched_stop_;
};

}  // namespace edgellm
