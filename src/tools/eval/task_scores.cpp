#include "tools/eval/task_scores.h"

#include "core/error.h"
#include "tools/eval/answer_match.h"
#include "tools/eval/classification.h"

namespace edgellm::eval {

ScoreSet score_outputs(const std::vector<EvalCase>& cases, const std::vector<std::string>& outputs,
                       BleuSmoothing smoothing, const std::vector<std::optional<std::string>>& classified) {
  require(cases.size() == outputs.size(), ErrorCode::kInvalidArgument, "score_outputs: one output per case");
  require(classified.empty() || classified.size() == cases.size(), ErrorCode::kInvalidArgument,
          "score_outputs: one classified label (or none) per case");
  ScoreSet set;
  double r1 = 0, r2 = 0, rl = 0, em = 0, f1 = 0, acc = 0;
  int64_t n_rouge = 0, n_qa = 0, n_acc = 0;
  std::vector<BleuSegment> segments;
  for (size_t i = 0; i < cases.size(); ++i) {
    const EvalCase& c = cases[i];
    const std::string& out = outputs[i];
    CaseScore s;
    s.metric = c.metric;
    switch (c.metric) {
      case Metric::kRouge:
        s.rouge = rouge(c.references, out);
        s.primary = s.rouge.rougeL.fmeasure;
        r1 += s.rouge.rouge1.fmeasure;
        r2 += s.rouge.rouge2.fmeasure;
        rl += s.rouge.rougeL.fmeasure;
        ++n_rouge;
        break;
      case Metric::kBleu: {
        BleuSegment seg = bleu_segment(c.references, out);
        s.sentence_bleu = corpus_bleu({seg}, BleuSmoothing::kMethod1).bleu;
        s.primary = s.sentence_bleu;
        segments.push_back(std::move(seg));
        break;
      }
      case Metric::kQa: {
        const AnswerScore a = answer_match(c.references, out);
        s.exact_match = a.exact_match;
        s.f1 = a.f1;
        s.primary = a.f1;
        em += a.exact_match;
        f1 += a.f1;
        ++n_qa;
        break;
      }
      case Metric::kAccuracy:
        // By likelihood when the classify gave it (a case with labels), else from the generation.
        s.predicted_label = !classified.empty() && classified[i].has_value() ? normalize_label(*classified[i])
                                                                             : label_from_generation(out, c.labels);
        s.correct = label_correct(s.predicted_label, c.references);
        s.primary = s.correct ? 1.0 : 0.0;
        acc += s.primary;
        ++n_acc;
        break;
    }
    set.cases.push_back(std::move(s));
  }
  const auto mean = [](double sum, int64_t n) { return n > 0 ? sum / static_cast<double>(n) : 0.0; };
  if (n_rouge > 0) {
    set.metrics.push_back({"rouge1", mean(r1, n_rouge), n_rouge});
    set.metrics.push_back({"rouge2", mean(r2, n_rouge), n_rouge});
    set.metrics.push_back({"rougeL", mean(rl, n_rouge), n_rouge});
  }
  if (!segments.empty()) {
    set.corpus_bleu = corpus_bleu(segments, smoothing);
    set.has_bleu = true;
    set.metrics.push_back({"bleu", set.corpus_bleu.bleu, static_cast<int64_t>(segments.size())});
  }
  if (n_qa > 0) {
    set.metrics.push_back({"exact_match", mean(em, n_qa), n_qa});
    set.metrics.push_back({"f1", mean(f1, n_qa), n_qa});
  }
  if (n_acc > 0) set.metrics.push_back({"accuracy", mean(acc, n_acc), n_acc});
  return set;
}

}  // namespace edgellm::eval
