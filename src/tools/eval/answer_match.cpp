#include "tools/eval/answer_match.h"

#include <algorithm>
#include <map>

#include "tools/eval/text_tokens.h"

namespace edgellm::eval {
namespace {

double token_f1(const std::vector<std::string>& prediction, const std::vector<std::string>& reference) {
  std::map<std::string, int64_t> pred_counts;
  for (const auto& t : prediction) ++pred_counts[t];
  int64_t common = 0;
  for (const auto& t : reference) {
    auto it = pred_counts.find(t);
    if (it != pred_counts.end() && it->second > 0) {
      --it->second;
      ++common;
    }
  }
  if (common == 0) return 0.0;
  const double p = static_cast<double>(common) / static_cast<double>(prediction.size());
  const double r = static_cast<double>(common) / static_cast<double>(reference.size());
  return 2 * p * r / (p + r);
}

}  // namespace

AnswerScore answer_match(const std::vector<std::string>& references, std::string_view prediction) {
  const std::string pred_norm = qa_normalize(prediction);
  const std::vector<std::string> pred_tokens = qa_tokens(prediction);
  AnswerScore best;
  for (const std::string& ref : references) {
    if (qa_normalize(ref) == pred_norm) best.exact_match = 1.0;
    best.f1 = std::max(best.f1, token_f1(pred_tokens, qa_tokens(ref)));
  }
  return best;
}

}  // namespace edgellm::eval
