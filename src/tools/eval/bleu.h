// Corpus BLEU exactly as NLTK's nltk.translate.bleu_score.corpus_bleu computes it (NLTK 3.8,
// Debian bookworm's python3-nltk), with uniform weights (0.25, 0.25, 0.25, 0.25) and one of
// NLTK's SmoothingFunction methods 0-3 (Chen & Cherry 2014):
//   p_n  = sum over segments of clipped n-gram matches / sum of max(1, hypothesis n-grams)
//          (a hypothesis n-gram counts at most as often as it occurs in one reference; the
//          denominator of every segment is at least 1, as NLTK's modified_precision makes it);
//   BP   = 1 if c > r, 0 if c = 0, else exp(1 - r / c), where c = total hypothesis length and
//          r = sum of each segment's closest reference length (ties: the shorter one);
//   BLEU = 0 when no unigram matches at all, else BP * exp(sum 0.25 * log p_n) after smoothing:
//     method0  no smoothing: a zero p_n becomes DBL_MIN (NLTK warns; BLEU is then ~1e-77, not 0)
//     method1  a zero p_n becomes 0.1 / denominator (epsilon 0.1)
//     method2  p_n = (matches + 1) / (denominator + 1) for n >= 2 (Lin & Och 2004)
//     method3  the k-th zero p_n becomes 1 / (2^k x denominator) (NIST geometric smoothing)
// Sentence BLEU (nltk sentence_bleu) is the corpus BLEU of one segment.
// Tokens come from text_tokens.h (bleu_tokens); BLEU is reported on a 0-1 scale, as NLTK does.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace edgellm::eval {

enum class BleuSmoothing { kMethod0 = 0, kMethod1 = 1, kMethod2 = 2, kMethod3 = 3 };

// "method0".."method3"; parse_bleu_smoothing throws Error(kInvalidArgument) for anything else.
const char* bleu_smoothing_name(BleuSmoothing s);
BleuSmoothing parse_bleu_smoothing(std::string_view name);

struct BleuSegment {
  std::vector<std::vector<std::string>> references;  // tokens of each reference (at least one)
  std::vector<std::string> hypothesis;
};

struct BleuResult {
  double bleu = 0;
  std::array<int64_t, 4> matches{};  // clipped n-gram matches, n = 1..4
  std::array<int64_t, 4> totals{};   // sum of max(1, hypothesis n-grams)
  double brevity_penalty = 0;
  int64_t hypothesis_length = 0;
  int64_t reference_length = 0;
};

// Throws Error(kInvalidArgument) when a segment has no reference (NLTK would fail too).
BleuResult corpus_bleu(const std::vector<BleuSegment>& segments, BleuSmoothing smoothing);

// One segment from text (bleu_tokens on each side).
BleuSegment bleu_segment(const std::vector<std::string>& references, std::string_view hypothesis);

}  // namespace edgellm::eval
