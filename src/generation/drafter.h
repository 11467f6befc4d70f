// A drafter guesses the tokens that follow a sequence, for speculative decoding
// (docs/speculative-decoding.md): generate() verifies up to k guesses in one forward pass and keeps
// the ones the sampler would have picked anyway, so a drafter only changes the speed, never the
// output. NgramDrafter (ngram_drafter.h) looks the guesses up in the prompt and the output so far;
// tests replay known outputs. One generation owns its drafter; not thread-safe.
#pragma once

#include <cstdint>
#include <span>

namespace edgellm {

class Drafter {
 public:
  virtual ~Drafter() = default;
  // Tokens that entered the sequence, in order: the prompt first, then every sampled token
  // (the accepted drafts and the token sampled after them).
  virtual void append(std::span<const int32_t> tokens) = 0;
  // Writes up to `max` (>= 1) tokens guessed to follow everything appended so far to `out`;
  // returns how many (0: no guess, the next forward decodes one token).
  virtual int32_t draft(int32_t max, int32_t* out) = 0;
};

}  // namespace edgellm
