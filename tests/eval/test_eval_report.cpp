// Scoring a model's outputs on a task set (task_scores.h), the label read from a generation
// (classification.h) and the report (eval_report.h): aggregates recomputed by hand in the test,
// the changed cases and their order, the JSON fields and the Markdown escaping.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "core/json.h"
#include "tools/eval/classification.h"
#include "tools/eval/eval_report.h"
#include "tools/eval/task_scores.h"

namespace edgellm::eval {
namespace {

TEST(Classification, LabelFromGeneration) {
  const std::vector<std::string> labels = {"positive", "negative", "pos"};
  EXPECT_EQ(label_from_generation("Positive.", labels), "positive");
  EXPECT_EQ(label_from_generation("\n\n  negative, because the food was cold", labels), "negative");
  EXPECT_EQ(label_from_generation("pos", labels), "pos");
  EXPECT_EQ(label_from_generation("possibly positive", labels), "possibly positive");  // "pos" is no whole word
  EXPECT_EQ(label_from_generation("\"weather\"\nmore", {}), "weather");
  EXPECT_EQ(label_from_generation("「天气」", {"天气", "闹钟"}), "天气");  // CJK brackets are punctuation
  EXPECT_EQ(label_from_generation("", labels), "");
  EXPECT_TRUE(label_correct("Weather!", {"weather"}));
  EXPECT_FALSE(label_correct("weathers", {"weather"}));
  EXPECT_EQ(normalize_label(" \xff x "), "\xff x");  // invalid bytes are kept, not trimmed past
}

std::vector<EvalCase> mixed_cases() {
  const std::string text =
      "{\"id\": \"r1\", \"prompt\": \"p\", \"reference\": \"the cat sat on the mat\", \"metric\": \"rouge\"}\n"
      "{\"id\": \"r2\", \"prompt\": \"p\", \"reference\": \"床前明月光\", \"metric\": \"rouge\"}\n"
      "{\"id\": \"b1\", \"prompt\": \"p\", \"reference\": \"a b c d e\", \"metric\": \"bleu\"}\n"
      "{\"id\": \"b2\", \"prompt\": \"p\", \"references\": [\"x y z\", \"x y w\"], \"metric\": \"bleu\"}\n"
      "{\"id\": \"q1\", \"prompt\": \"p\", \"reference\": \"Paris\", \"metric\": \"qa\"}\n"
      "{\"id\": \"a1\", \"prompt\": \"p\", \"reference\": \"neg\", \"labels\": [\"pos\", \"neg\"], \"metric\": "
      "\"accuracy\"}\n"
      "{\"id\": \"a2\", \"prompt\": \"p\", \"reference\": \"pos\", \"labels\": [\"pos\", \"neg\"], \"metric\": "
      "\"accuracy\"}\n";
  return parse_task_lines(text);
}

TEST(TaskScores, AggregatesPerMetric) {
  const auto cases = mixed_cases();
  const std::vector<std::string> outputs = {"the cat sat", "床前明月", "a b c d e", "x y", "paris.", "Neg", "neg"};
  const ScoreSet s = score_outputs(cases, outputs, BleuSmoothing::kMethod1);
  ASSERT_EQ(s.metrics.size(), 7u);
  // ROUGE-1 F by hand: "the cat sat" vs "the cat sat on the mat": P 3/3, R 3/6 -> 2/3;
  // "床前明月" vs "床前明月光": P 1, R 4/5 -> 8/9.
  EXPECT_EQ(s.metrics[0].name, "rouge1");
  EXPECT_NEAR(s.metrics[0].value, (2.0 / 3 + 8.0 / 9) / 2, 1e-15);
  EXPECT_EQ(s.metrics[0].cases, 2);
  EXPECT_EQ(s.metrics[3].name, "bleu");
  // Corpus BLEU by hand: 1-grams 5+2 of 5+2, 2-grams 4+1 of 4+1, 3-grams 3 of 3+1, 4-grams 2 of
  // 2+1 (the 2-token hypothesis has max(1, 0) = 1 for n = 3, 4); c = 7, r = 5 + 3 -> BP e^(1-8/7).
  const double expect_bleu = std::exp(1.0 - 8.0 / 7) *
                             std::exp(0.25 * (std::log(1.0) + std::log(1.0) + std::log(3.0 / 4) + std::log(2.0 / 3)));
  EXPECT_NEAR(s.metrics[3].value, expect_bleu, 1e-15);
  EXPECT_EQ(s.metrics[4].name, "exact_match");
  EXPECT_EQ(s.metrics[4].value, 1.0);
  EXPECT_EQ(s.metrics[6].name, "accuracy");
  EXPECT_EQ(s.metrics[6].value, 0.5);
  EXPECT_EQ(s.cases[5].predicted_label, "neg");
  EXPECT_TRUE(s.cases[5].correct);
  EXPECT_FALSE(s.cases[6].correct);
  EXPECT_THROW(score_outputs(cases, {"one"}, BleuSmoothing::kMethod1), Error);
}

ModelEvaluation evaluation(const std::string& label, const std::vector<EvalCase>& cases,
                           const std::vector<std::string>& texts) {
  ModelEvaluation m;
  m.label = label;
  m.run.model_path = "/models/" + label + ".gguf";
  for (const auto& t : texts) {
    CaseOutput o;
    o.text = t;
    o.finish_reason = FinishReason::kStop;
    m.run.outputs.push_back(o);
  }
  m.scores = score_outputs(cases, texts, BleuSmoothing::kMethod1);
  return m;
}

TEST(EvalReport, ChangedCasesJsonAndMarkdown) {
  EvalReport r;
  r.tasks.path = "/tmp/t.jsonl";
  r.tasks.sha256 = std::string(64, 'a');
  r.tasks.cases = mixed_cases();
  r.date = "2026-12-06T00:00:00Z";
  r.base = evaluation("base", r.tasks.cases, {"the cat sat", "床前明月", "a b c d e", "x y", "paris.", "Neg", "neg"});
  // r1 loses (ROUGE-L F 2/3 -> 0), b1 unchanged, a2 gains (0 -> 1), q1 changes text but not score.
  r.model = evaluation("model", r.tasks.cases, {"dog", "床前明月", "a b c d e", "x y", "Paris", "Neg", "pos | x\ny"});
  const auto changed = changed_cases(r);
  ASSERT_EQ(changed.size(), 3u);
  EXPECT_EQ(r.tasks.cases[changed[0].index].id, "r1");
  EXPECT_NEAR(changed[0].delta(), -2.0 / 3, 1e-15);
  EXPECT_EQ(r.tasks.cases[changed[1].index].id, "q1");
  EXPECT_EQ(changed[1].delta(), 0.0);
  EXPECT_EQ(r.tasks.cases[changed[2].index].id, "a2");
  EXPECT_EQ(changed[2].delta(), 1.0);

  const Json j = report_json(r);
  EXPECT_EQ(j.at("models").size(), 2u);
  EXPECT_EQ(j.at("comparison").at("changed_outputs").as_int(), 3);
  EXPECT_EQ(j.at("comparison").at("changed_worse").as_int(), 1);
  const Json& m0 = j.at("comparison").at("metrics").at(0);
  EXPECT_EQ(m0.at("name").as_string(), "rouge1");
  EXPECT_NEAR(m0.at("delta").as_number(), m0.at("model").as_number() - m0.at("base").as_number(), 1e-15);
  EXPECT_EQ(j.at("cases").size(), 7u);
  EXPECT_EQ(j.at("cases").at(6).at("outputs").at("model").at("text").as_string(), "pos | x\ny");
  EXPECT_EQ(j.at("task_file").at("by_metric").at("rouge").as_int(), 2);
  EXPECT_EQ(Json::parse(j.dump()), j);

  const std::string md = report_markdown(r);
  EXPECT_NE(md.find("| rouge1 | 2 |"), std::string::npos) << md;
  EXPECT_NE(md.find("3 of 7 cases generated different text"), std::string::npos);
  EXPECT_NE(md.find("pos \\| x<br>y"), std::string::npos) << "a '|' or newline must not break the table";
  // Without a base: no comparison, one score column.
  r.base.reset();
  EXPECT_EQ(report_json(r).find("comparison"), nullptr);
  EXPECT_TRUE(changed_cases(r).empty());
  EXPECT_EQ(report_markdown(r).find("changed"), std::string::npos);
}

}  // namespace
}  // namespace edgellm::eval
