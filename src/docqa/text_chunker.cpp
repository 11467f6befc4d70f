#include "docqa/text_chunker.h"

#include <algorithm>
#include <string>
#include <tuple>
#include <utility>

#include "core/error.h"
#include "tokenizer/bert_normalizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace edgellm {

namespace {

bool is_space(uint32_t cp) {
  return cp == ' ' || cp == '\t' || cp == '\r' || cp == '\n' || unicode::is_whitespace(cp);
}

// Terminators that end a sentence with no space after them (CJK and full-width forms).
bool is_cjk_terminator(uint32_t cp) {
  return cp == 0x3002 /* 。 */ || cp == 0xFF01 /* ！ */ || cp == 0xFF1F /* ？ */ || cp == 0xFF1B /* ； */ ||
         cp == 0x2026 /* … */ || cp == 0xFF0E /* ． */ || cp == 0xFF61 /* ｡ */;
}

bool is_latin_terminator(uint32_t cp) {
  return cp == '.' || cp == '!' || cp == '?';
}

// Closing quotes and brackets that stay with the sentence they end.
bool is_closer(uint32_t cp) {
  return cp == '"' || cp == '\'' || cp == ')' || cp == ']' || cp == 0x201D /* ” */ || cp == 0x2019 /* ’ */ ||
         cp == 0x300D /* 」 */ || cp == 0x300F /* 』 */ || cp == 0xFF09 /* ） */ || cp == 0x3011 /* 】 */;
}

// [begin, end) without surrounding whitespace (byte offsets into cps' text via offs).
void push_trimmed(const unicode::DecodedText& d, size_t i0, size_t i1, bool paragraph_start,
                  std::vector<SentenceSpan>& out) {
  while (i0 < i1 && is_space(d.cps[i0])) ++i0;
  while (i1 > i0 && is_space(d.cps[i1 - 1])) --i1;
  if (i1 > i0) out.push_back({d.offsets[i0], d.offsets[i1], paragraph_start});
}

int32_t count_tokens(const Tokenizer& tok, std::string_view text) {
  return static_cast<int32_t>(tok.encode(text, /*add_special=*/false, /*parse_special=*/false).size());
}

}  // namespace

std::vector<SentenceSpan> split_sentences(std::string_view text) {
  const unicode::DecodedText d = unicode::decode(text);
  const size_t n = d.cps.size();
  std::vector<SentenceSpan> out;
  size_t start = 0;
  bool paragraph_start = true;
  const auto emit = [&](size_t end) {
    const size_t before = out.size();
    push_trimmed(d, start, end, paragraph_start, out);
    if (out.size() > before) paragraph_start = false;
    start = end;
  };
  for (size_t i = 0; i < n; ++i) {
    const uint32_t cp = d.cps[i];
    if (cp == '\n') {
      // A blank line (only whitespace up to the next line end) ends the paragraph.
      size_t j = i + 1;
      while (j < n && d.cps[j] != '\n' && is_space(d.cps[j])) ++j;
      emit(i + 1);
      if (j < n && d.cps[j] == '\n') paragraph_start = true;
      continue;
    }
    size_t end = 0;
    if (is_cjk_terminator(cp)) {
      end = i + 1;
    } else if (is_latin_terminator(cp)) {
      size_t j = i + 1;
      while (j < n && is_latin_terminator(d.cps[j])) ++j;  // "?!", "..."
      while (j < n && is_closer(d.cps[j])) ++j;
      if (j == n || is_space(d.cps[j])) end = j;  // "3.14" and "e.g.x" do not end one
    }
    if (end == 0) continue;
    while (end < n && is_closer(d.cps[end])) ++end;
    emit(end);
    i = end - 1;
  }
  emit(n);
  return out;
}

std::vector<TextChunk> chunk_text(std::string_view text, const Tokenizer& tok, const ChunkOptions& o) {
  require(o.max_tokens >= 8, ErrorCode::kInvalidArgument,
          "chunk size " + std::to_string(o.max_tokens) + " tokens is too small (at least 8)");
  require(o.overlap_tokens >= 0 && o.overlap_tokens <= o.max_tokens / 2, ErrorCode::kInvalidArgument,
          "chunk overlap " + std::to_string(o.overlap_tokens) + " must be in [0, " + std::to_string(o.max_tokens / 2) +
              "] (half the chunk size)");
  // Units: sentences, or the pieces of a sentence longer than max_tokens.
  struct Unit {
    size_t begin, end;
    int32_t tokens;
    bool paragraph_start;
  };
  std::vector<Unit> units;
  for (const SentenceSpan& s : split_sentences(text)) {
    const std::string_view sentence = text.substr(s.begin, s.end - s.begin);
    const int32_t n = count_tokens(tok, sentence);
    if (n <= o.max_tokens) {
      units.push_back({s.begin, s.end, n, s.paragraph_start});
      continue;
    }
    // Too long: words (CJK ideographs one by one, they have no spaces) packed up to max_tokens.
    const unicode::DecodedText d = unicode::decode(sentence);
    size_t piece_begin = 0;  // code point index
    int32_t piece_tokens = 0;
    bool first = s.paragraph_start;
    for (size_t i = 0; i < d.cps.size();) {
      size_t j = i + 1;
      if (!is_bert_cjk(d.cps[i])) {
        while (j < d.cps.size() && !is_space(d.cps[j]) && !is_bert_cjk(d.cps[j])) ++j;
      }
      const size_t word_end = j;  // the spaces after it belong to no piece of a cut word
      while (j < d.cps.size() && is_space(d.cps[j])) ++j;
      const std::string_view word = sentence.substr(d.offsets[i], d.offsets[j] - d.offsets[i]);
      const int32_t w = std::max(1, count_tokens(tok, word));
      if (piece_tokens > 0 && piece_tokens + w > o.max_tokens) {
        units.push_back({s.begin + d.offsets[piece_begin], s.begin + d.offsets[i], piece_tokens, first});
        first = false;
        piece_begin = i;
        piece_tokens = 0;
      }
      if (w > o.max_tokens) {
        // One "word" beyond the size (a URL, a base64 blob, kana or Thai with no spaces): cut at
        // code points into pieces of about half the size, halved again while one is too long.
        size_t step =
            std::max<size_t>(1, (word_end - i) * static_cast<size_t>(o.max_tokens) / (2 * static_cast<size_t>(w)));
        for (size_t a = i; a < word_end;) {
          const size_t b = std::min(word_end, a + step);
          const int32_t t = count_tokens(tok, sentence.substr(d.offsets[a], d.offsets[b] - d.offsets[a]));
          if (t > o.max_tokens && b - a > 1) {
            step = std::max<size_t>(1, (b - a) / 2);
            continue;
          }
          units.push_back({s.begin + d.offsets[a], s.begin + d.offsets[b], std::min(t, o.max_tokens), first});
          first = false;
          a = b;
        }
        piece_begin = j;
        i = j;
        continue;
      }
      piece_tokens += w;
      i = j;
    }
    if (piece_tokens > 0) units.push_back({s.begin + d.offsets[piece_begin], s.end, piece_tokens, first});
  }

  // Unit sums are an estimate of a chunk's tokens (the spaces between sentences, merges across
  // a boundary); every chunk and every overlap is counted again as the text it is, and shrunk
  // by a unit while the count is over.
  // The byte range of units [u0, u1) without the spaces around it (pieces of a cut sentence
  // carry the spaces after their last word).
  const auto trimmed = [&](size_t u0, size_t u1) {
    const size_t b = units[u0].begin;
    const unicode::DecodedText d = unicode::decode(text.substr(b, units[u1 - 1].end - b));
    size_t i0 = 0, i1 = d.cps.size();
    while (i0 < i1 && is_space(d.cps[i0])) ++i0;
    while (i1 > i0 && is_space(d.cps[i1 - 1])) --i1;
    return std::pair<size_t, size_t>(b + d.offsets[i0], b + d.offsets[i1]);
  };
  const auto range_tokens = [&](size_t u0, size_t u1) {
    const auto [b, e] = trimmed(u0, u1);
    return count_tokens(tok, text.substr(b, e - b));
  };
  std::vector<TextChunk> chunks;
  const auto make = [&](size_t u0, size_t u1, int32_t tokens) {
    TextChunk c;
    std::tie(c.begin, c.end) = trimmed(u0, u1);
    c.tokens = tokens;
    c.text = std::string(text.substr(c.begin, c.end - c.begin));
    chunks.push_back(std::move(c));
  };
  size_t first = 0;      // the current chunk's first unit
  size_t new_first = 0;  // its first unit the previous chunk does not hold (first..: the overlap)
  while (first < units.size()) {
    // The overlap gives way when it and the first new unit do not fit together as text.
    while (first < new_first && range_tokens(first, new_first + 1) > o.max_tokens) ++first;
    size_t end = new_first + 1;
    int32_t estimate = 0;
    for (size_t u = first; u < end; ++u) estimate += units[u].tokens;
    while (end < units.size() && !units[end].paragraph_start && estimate + units[end].tokens <= o.max_tokens) {
      estimate += units[end].tokens;
      ++end;
    }
    int32_t tokens = range_tokens(first, end);
    while (tokens > o.max_tokens && end > new_first + 1) tokens = range_tokens(first, --end);
    make(first, end, tokens);
    if (end >= units.size()) break;
    new_first = end;
    if (units[end].paragraph_start || o.overlap_tokens == 0) {
      first = end;  // a new paragraph starts fresh
      continue;
    }
    // Overlap: the last units of this chunk whose text fits in overlap_tokens (never the whole
    // chunk; every chunk holds at least one unit its predecessor does not).
    size_t next = end;
    while (next > first + 1 && range_tokens(next - 1, end) <= o.overlap_tokens) --next;
    first = next;
  }
  return chunks;
}

}  // namespace edgellm
