// Exact match and token F1 of a short answer, as SQuAD v1.1's evaluate-v1.1.py scores them
// (metric_max_over_ground_truths: the best over the references), on the normalisation and
// tokens of text_tokens.h (qa_normalize / qa_tokens: SQuAD's, with MLQA's extension to other
// scripts).
//   exact match = 1 when the normalised strings are equal, else 0;
//   F1 = 2 P R / (P + R) over the multiset of common tokens (P = common / prediction tokens,
//        R = common / reference tokens); 0 when nothing is common, including when either side
//        normalises to no token (v1.1's rule; v2.0 would give 1 for two empty answers).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace edgellm::eval {

struct AnswerScore {
  double exact_match = 0;  // 0 or 1
  double f1 = 0;
};

AnswerScore answer_match(const std::vector<std::string>& references, std::string_view prediction);

}  // namespace edgellm::eval
