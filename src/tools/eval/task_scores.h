// Scores one model's outputs on a task file's cases, per case and per metric (docs/eval.md):
//
//   metric    per case                                  aggregate (named values)
//   rouge     ROUGE-1 / 2 / L P, R, F (rouge.h)        rouge1, rouge2, rougeL: mean F-measure
//   bleu      sentence BLEU (method1, display only)     bleu: corpus BLEU over the bleu cases
//   qa        exact match, F1 (answer_match.h)          exact_match, f1: means
//   accuracy  predicted label, correct (classification.h)  accuracy: mean of correct
//
// Each case also gets one "primary" value in [0, 1] (ROUGE-L F, sentence BLEU, F1, correct) that
// the quantized-vs-base comparison sorts changed cases by. A case whose generation failed scores
// as an empty output.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tools/eval/bleu.h"
#include "tools/eval/rouge.h"
#include "tools/eval/task_file.h"

namespace edgellm::eval {

struct CaseScore {
  Metric metric = Metric::kRouge;
  RougeScores rouge;            // rouge
  double sentence_bleu = 0;     // bleu
  double exact_match = 0;       // qa
  double f1 = 0;                // qa
  std::string predicted_label;  // accuracy
  bool correct = false;         // accuracy
  double primary = 0;
};

struct MetricValue {
  std::string name;   // rouge1, rouge2, rougeL, bleu, exact_match, f1, accuracy
  double value = 0;   // in [0, 1]
  int64_t cases = 0;  // cases it is computed over
};

struct ScoreSet {
  std::vector<CaseScore> cases;      // one per case, in order
  std::vector<MetricValue> metrics;  // only the metrics the task file uses, in the order above
  BleuResult corpus_bleu;            // when there are bleu cases
  bool has_bleu = false;
};

// outputs[i] is the text generated for cases[i] (sizes must match: Error kInvalidArgument).
// classified[i], when given and set, is the label the classify chose for accuracy case i
// (task_runner.h's CaseOutput::classified_label): it scores the case instead of the label read
// from outputs[i]. Empty, or a size other than the cases': every label is read from the outputs.
ScoreSet score_outputs(const std::vector<EvalCase>& cases, const std::vector<std::string>& outputs,
                       BleuSmoothing smoothing, const std::vector<std::optional<std::string>>& classified = {});

}  // namespace edgellm::eval
