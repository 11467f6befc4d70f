#include "tools/eval/bleu.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <map>

#include "core/error.h"
#include "tools/eval/text_tokens.h"

namespace edgellm::eval {
namespace {

constexpr int kMaxN = 4;
constexpr double kMethod1Epsilon = 0.1;  // NLTK SmoothingFunction(epsilon=0.1)

// n-gram -> occurrences; keys joined by '\x1f', which no bleu token contains (it is a control
// character: not whitespace, not P* / S*, so it would join a word; bleu_tokens of real text
// does not produce it, and a key collision could only merge two n-grams that contain it).
std::map<std::string, int64_t> ngram_counts(const std::vector<std::string>& tokens, int n) {
  std::map<std::string, int64_t> counts;
  if (tokens.size() < static_cast<size_t>(n)) return counts;
  for (size_t i = 0; i + static_cast<size_t>(n) <= tokens.size(); ++i) {
    std::string key = tokens[i];
    for (int k = 1; k < n; ++k) {
      key.push_back('\x1f');
      key += tokens[i + static_cast<size_t>(k)];
    }
    ++counts[key];
  }
  return counts;
}

// Neumaier's compensated sum: the four log terms summed as math.fsum does (exactly rounded in
// all but pathological cases; the tests allow 1e-12 relative).
double compensated_sum(const double* v, int n) {
  double sum = 0, comp = 0;
  for (int i = 0; i < n; ++i) {
    const double t = sum + v[i];
    comp += std::fabs(sum) >= std::fabs(v[i]) ? (sum - t) + v[i] : (v[i] - t) + sum;
    sum = t;
  }
  return sum + comp;
}

}  // namespace

const char* bleu_smoothing_name(BleuSmoothing s) {
  switch (s) {
    case BleuSmoothing::kMethod0: return "method0";
    case BleuSmoothing::kMethod1: return "method1";
    case BleuSmoothing::kMethod2: return "method2";
    case BleuSmoothing::kMethod3: return "method3";
  }
  return "?";
}

BleuSmoothing parse_bleu_smoothing(std::string_view name) {
  for (const BleuSmoothing s :
       {BleuSmoothing::kMethod0, BleuSmoothing::kMethod1, BleuSmoothing::kMethod2, BleuSmoothing::kMethod3}) {
    if (name == bleu_smoothing_name(s)) return s;
  }
  throw Error(ErrorCode::kInvalidArgument,
              "unknown BLEU smoothing '" + std::string(name) + "' (method0, method1, method2 or method3)");
}

BleuSegment bleu_segment(const std::vector<std::string>& references, std::string_view hypothesis) {
  BleuSegment s;
  for (const std::string& r : references) s.references.push_back(bleu_tokens(r));
  s.hypothesis = bleu_tokens(hypothesis);
  return s;
}

BleuResult corpus_bleu(const std::vector<BleuSegment>& segments, BleuSmoothing smoothing) {
  BleuResult r;
  for (const BleuSegment& seg : segments) {
    require(!seg.references.empty(), ErrorCode::kInvalidArgument, "BLEU: a segment has no reference");
    for (int n = 1; n <= kMaxN; ++n) {
      const auto hyp = ngram_counts(seg.hypothesis, n);
      std::map<std::string, int64_t> max_ref;  // per hypothesis n-gram: its most occurrences in one reference
      for (const auto& ref_tokens : seg.references) {
        const auto ref = ngram_counts(ref_tokens, n);
        for (const auto& [gram, count] : hyp) {
          (void)count;
          const auto it = ref.find(gram);
          int64_t& m = max_ref[gram];
          if (it != ref.end()) m = std::max(m, it->second);
        }
      }
      int64_t clipped = 0, total = 0;
      for (const auto& [gram, count] : hyp) {
        clipped += std::min(count, max_ref[gram]);
        total += count;
      }
      r.matches[static_cast<size_t>(n - 1)] += clipped;
      r.totals[static_cast<size_t>(n - 1)] += std::max<int64_t>(total, 1);
    }
    const int64_t c = static_cast<int64_t>(seg.hypothesis.size());
    // closest_ref_length: min over references of (|len - c|, len)
    int64_t best = -1;
    for (const auto& ref_tokens : seg.references) {
      const int64_t len = static_cast<int64_t>(ref_tokens.size());
      if (best < 0 || std::llabs(len - c) < std::llabs(best - c) ||
          (std::llabs(len - c) == std::llabs(best - c) && len < best)) {
        best = len;
      }
    }
    r.hypothesis_length += c;
    r.reference_length += best;
  }
  if (r.hypothesis_length > r.reference_length) {
    r.brevity_penalty = 1.0;
  } else if (r.hypothesis_length == 0) {
    r.brevity_penalty = 0.0;
  } else {
    r.brevity_penalty =
        std::exp(1.0 - static_cast<double>(r.reference_length) / static_cast<double>(r.hypothesis_length));
  }
  if (r.matches[0] == 0) return r;  // NLTK returns 0 before smoothing

  double p[kMaxN];
  int zeros_seen = 0;
  for (int i = 0; i < kMaxN; ++i) {
    const auto num = static_cast<double>(r.matches[static_cast<size_t>(i)]);
    const auto den = static_cast<double>(r.totals[static_cast<size_t>(i)]);
    const bool zero = r.matches[static_cast<size_t>(i)] == 0;
    switch (smoothing) {
      case BleuSmoothing::kMethod0: p[i] = zero ? DBL_MIN : num / den; break;
      case BleuSmoothing::kMethod1: p[i] = zero ? (num + kMethod1Epsilon) / den : num / den; break;
      case BleuSmoothing::kMethod2: p[i] = i == 0 ? num / den : (num + 1) / (den + 1); break;
      case BleuSmoothing::kMethod3:
        if (zero) {
          ++zeros_seen;
          p[i] = 1.0 / (std::ldexp(1.0, zeros_seen) * den);
        } else {
          p[i] = num / den;
        }
        break;
    }
  }
  double terms[kMaxN];
  for (int i = 0; i < kMaxN; ++i) terms[i] = 0.25 * std::log(p[i]);
  r.bleu = r.brevity_penalty * std::exp(compensated_sum(terms, kMaxN));
  return r;
}

}  // namespace edgellm::eval
