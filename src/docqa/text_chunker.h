// Documents -> chunks for retrieval: sentences kept whole where they fit, sizes in the embedding
// model's tokens, a token overlap between neighbours (document Q&A, docs/docqa.md).
//
//   sentences   end after . ! ? (followed by a space, a line end or the text's end, closing
//               quotes and brackets included), after the CJK / full-width terminators 。！？；…
//               (no space needed: CJK text has none), and at every line end; a blank line ends a
//               paragraph, which a chunk never spans (headings and list items stay with what
//               follows only within their paragraph)
//   packing     consecutive sentences of a paragraph while the chunk stays within max_tokens; a
//               sentence longer than max_tokens alone is cut into pieces at word boundaries (at
//               characters for CJK runs, which have no spaces)
//   overlap     a chunk after the first of its paragraph begins with the last sentences (or
//               pieces) of the previous one that fit in overlap_tokens, so a fact cut at a
//               boundary is whole in one of the two; a last sentence longer than overlap_tokens
//               gives no overlap (sentences are never cut for an overlap)
// Token counts are the tokenizer's, without special tokens, of the chunk's text as it is: a chunk
// never holds more than max_tokens, an overlap never more than overlap_tokens (only a single
// code point could, and max_tokens >= 8 holds any). The text is expected valid UTF-8 (DocQa
// sanitizes it first); ranges always fall on code point boundaries. Cost: about three tokenizer
// passes over the text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace edgellm {

class Tokenizer;

struct ChunkOptions {
  int32_t max_tokens = 256;     // at most this many tokens per chunk (bge / MiniLM take 512)
  int32_t overlap_tokens = 32;  // tokens of the previous chunk repeated at the start of the next
};

struct TextChunk {
  size_t begin = 0, end = 0;  // byte range in the document (whitespace around it trimmed)
  int32_t tokens = 0;
  std::string text;  // document[begin, end)
};

// The sentences of `text` as byte ranges (whitespace-trimmed, never empty), in order; a range
// with `paragraph_start` true is the first of its paragraph.
struct SentenceSpan {
  size_t begin, end;
  bool paragraph_start;
};
std::vector<SentenceSpan> split_sentences(std::string_view text);

// Throws Error(kInvalidArgument) for max_tokens < 8 or overlap_tokens outside [0, max_tokens / 2].
std::vector<TextChunk> chunk_text(std::string_view text, const Tokenizer& tokenizer, const ChunkOptions& options);

}  // namespace edgellm
