#include "tokenizer/streaming_decoder.h"

#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace edgellm {

StreamingDecoder::StreamingDecoder(const Tokenizer& tokenizer, bool sequence_start, bool render_special)
    : tokenizer_(tokenizer),
      strip_leading_space_(sequence_start && tokenizer.strips_leading_space()),
      render_special_(render_special) {}

std::string StreamingDecoder::push(int32_t id) {
  std::string piece = tokenizer_.token_to_piece(id, render_special_);
  // Same rule as Tokenizer::decode: the first non-control token loses one leading space.
  if (strip_leading_space_ && tokenizer_.token_attr(id) != TokenAttr::kControl) {
    if (!piece.empty() && piece[0] == ' ') piece.erase(0, 1);
    strip_leading_space_ = false;
  }
  pending_ += piece;
  const size_t keep = unicode::incomplete_tail_length(pending_);
  const std::string ready = unicode::make_valid(std::string_view(pending_).substr(0, pending_.size() - keep));
  pending_.erase(0, pending_.size() - keep);
  return ready;
}

std::string StreamingDecoder::flush() {
  std::string out = unicode::make_valid(pending_);
  pending_.clear();
  return out;
}

}  // namespace edgellm
