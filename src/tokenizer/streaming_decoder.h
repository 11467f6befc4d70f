// Incremental detokenizer for generation: tokens arrive one at a time and a token can end in
// the middle of a UTF-8 character (SPM byte tokens <0xE4><0xB8><0xAD>, byte-level BPE tokens
// that split an emoji). push() returns only complete characters and keeps a valid-but-
// incomplete tail for the next call; bytes that can never become valid are replaced by U+FFFD
// right away (same rule as Tokenizer::decode, so the concatenated output of push()... + flush()
// equals decode() of the same ids).
#pragma once

#include <cstdint>
#include <string>

namespace edgellm {

class Tokenizer;

class StreamingDecoder {
 public:
  // sequence_start: the ids fed are the start of a sequence, so the SPM space prefix that
  // encode() adds is dropped as decode() does. Pass false when continuing after a prompt.
  explicit StreamingDecoder(const Tokenizer& tokenizer, bool sequence_start = true,
                            bool render_special = false);

  // Throws Error(kInvalidArgument) for an id outside the vocabulary (state unchanged).
  std::string push(int32_t id);
  // Emits what is pending; a dangling partial character becomes one U+FFFD.
  std::string flush();
  // Bytes held back waiting for the rest of a character.
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer& tokenizer_;
  bool strip_leading_space_;
  bool render_special_;
  std::string pending_;
};

}  // namespace edgellm
