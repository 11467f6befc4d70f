// ROUGE-N and ROUGE-L as the rouge-score package computes them (google-research/rouge,
// rouge_scorer.py; Lin 2004): on tokens (text_tokens.h: rouge_tokens), sentence level.
//   ROUGE-N: overlap = sum over the target's n-grams of min(count in target, count in
//            prediction); precision = overlap / max(prediction n-grams, 1), recall = overlap /
//            max(target n-grams, 1).
//   ROUGE-L: the longest common subsequence of the two token sequences; precision = lcs /
//            prediction tokens, recall = lcs / target tokens (all 0 when either is empty).
//   F-measure = 2 P R / (P + R), 0 when P + R = 0 (rouge-score's scoring.fmeasure, beta 1).
// Several references: the one with the highest F-measure counts, per ROUGE type (rouge-score's
// score_multi).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace edgellm::eval {

struct PrfScore {
  double precision = 0, recall = 0, fmeasure = 0;
};

struct RougeScores {
  PrfScore rouge1, rouge2, rougeL;
};

double f_measure(double precision, double recall);
PrfScore rouge_n(const std::vector<std::string>& target, const std::vector<std::string>& prediction, int n);
PrfScore rouge_l(const std::vector<std::string>& target, const std::vector<std::string>& prediction);
// Tokenizes with rouge_tokens and scores against every reference (best F-measure per type).
// An empty `references` gives all zeros.
RougeScores rouge(const std::vector<std::string>& references, std::string_view prediction);

}  // namespace edgellm::eval
