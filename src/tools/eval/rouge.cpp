#include "tools/eval/rouge.h"

#include <algorithm>
#include <map>

#include "tools/eval/text_tokens.h"

namespace edgellm::eval {
namespace {

// n-gram -> occurrences. Keys are the n tokens joined by '\x1f' (a byte no token contains:
// rouge_tokens yields [a-z0-9] runs and single CJK characters).
std::map<std::string, int64_t> ngram_counts(const std::vector<std::string>& tokens, int n, int64_t* total) {
  std::map<std::string, int64_t> counts;
  *total = 0;
  if (n <= 0 || tokens.size() < static_cast<size_t>(n)) return counts;
  for (size_t i = 0; i + static_cast<size_t>(n) <= tokens.size(); ++i) {
    std::string key = tokens[i];
    for (int k = 1; k < n; ++k) {
      key.push_back('\x1f');
      key += tokens[i + static_cast<size_t>(k)];
    }
    ++counts[key];
    ++*total;
  }
  return counts;
}

}  // namespace

double f_measure(double precision, double recall) {
  return precision + recall > 0 ? 2 * precision * recall / (precision + recall) : 0.0;
}

PrfScore rouge_n(const std::vector<std::string>& target, const std::vector<std::string>& prediction, int n) {
  int64_t n_target = 0, n_prediction = 0;
  const auto t = ngram_counts(target, n, &n_target);
  const auto p = ngram_counts(prediction, n, &n_prediction);
  int64_t overlap = 0;
  for (const auto& [gram, count] : t) {
    const auto it = p.find(gram);
    if (it != p.end()) overlap += std::min(count, it->second);
  }
  PrfScore s;
  s.precision = static_cast<double>(overlap) / static_cast<double>(std::max<int64_t>(n_prediction, 1));
  s.recall = static_cast<double>(overlap) / static_cast<double>(std::max<int64_t>(n_target, 1));
  s.fmeasure = f_measure(s.precision, s.recall);
  return s;
}

PrfScore rouge_l(const std::vector<std::string>& target, const std::vector<std::string>& prediction) {
  if (target.empty() || prediction.empty()) return {};
  // LCS length by dynamic programming over prediction positions, one row of the table at a time:
  // O(|target| x |prediction|) time, O(|prediction|) memory.
  std::vector<int64_t> prev(prediction.size() + 1, 0), cur(prediction.size() + 1, 0);
  for (size_t i = 1; i <= target.size(); ++i) {
    for (size_t j = 1; j <= prediction.size(); ++j) {
      cur[j] = target[i - 1] == prediction[j - 1] ? prev[j - 1] + 1 : std::max(prev[j], cur[j - 1]);
    }
    std::swap(prev, cur);
  }
  const double lcs = static_cast<double>(prev[prediction.size()]);
  PrfScore s;
  s.precision = lcs / static_cast<double>(prediction.size());
  s.recall = lcs / static_cast<double>(target.size());
  s.fmeasure = f_measure(s.precision, s.recall);
  return s;
}

RougeScores rouge(const std::vector<std::string>& references, std::string_view prediction) {
  const std::vector<std::string> pred = rouge_tokens(prediction);
  RougeScores best;
  bool first = true;
  for (const std::string& ref : references) {
    const std::vector<std::string> target = rouge_tokens(ref);
    const PrfScore r1 = rouge_n(target, pred, 1), r2 = rouge_n(target, pred, 2), rl = rouge_l(target, pred);
    // score_multi keeps the first reference with the highest F-measure (a strict > comparison).
    if (first || r1.fmeasure > best.rouge1.fmeasure) best.rouge1 = r1;
    if (first || r2.fmeasure > best.rouge2.fmeasure) best.rouge2 = r2;
    if (first || rl.fmeasure > best.rougeL.fmeasure) best.rougeL = rl;
    first = false;
  }
  return best;
}

}  // namespace edgellm::eval
