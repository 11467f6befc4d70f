// How many positions a prompt must leave free for the answer: the one policy shared by
// generate()'s prompt truncation, ChatSession's dropping of old turns and the service's
// admission, so that a prompt that fits one of them fits all of them.
#pragma once

#include <algorithm>
#include <cstdint>

namespace edgellm {

// Positions to keep free for the answer when a prompt must be shortened to fit `free_positions`:
// the requested number of tokens (a quarter of the free space when unlimited, max_tokens < 0),
// but never more than half of it and never less than one.
//   answer_room(64, 256) = 64    answer_room(-1, 256) = 64    answer_room(500, 256) = 128
inline int64_t answer_room(int64_t max_tokens, int64_t free_positions) {
  const int64_t wanted = max_tokens > 0 ? max_tokens : free_positions / 4;
  return std::clamp<int64_t>(wanted, 1, std::max<int64_t>(1, free_positions / 2));
}

}  // namespace edgellm
