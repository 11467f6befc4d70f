// The metrics of `edgellm eval` against reference implementations on 250 pairs: NLTK 3.8's
// corpus_bleu (every smoothing method 0-3, per pair and over blocks of pairs and the whole set),
// a Python re-implementation of rouge-score (itself checked against rouge-score's published test
// values) and SQuAD v1.1's EM / F1, with the tokenisation of text_tokens.h written again in
// Python. The golden file is tests/eval/data/metric-golden.json, written by
// scripts/eval-metric-reference.py (its header says how to re-run it).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/json.h"
#include "support/test_env.h"
#include "tools/eval/answer_match.h"
#include "tools/eval/bleu.h"
#include "tools/eval/rouge.h"
#include "tools/eval/text_tokens.h"

namespace edgellm::eval {
namespace {

// ROUGE and F1 are ratios of small integers, computed in double on both sides with the same
// operations: measured worst difference 0 (bit-identical). BLEU: exp of a sum of four logs;
// NLTK sums with math.fsum, we with a compensated sum: measured worst relative difference 0 on
// this set (2.2e-16 would be one ulp). Bounds: 1e-12 absolute / relative.
constexpr double kRatioTolerance = 1e-12;
constexpr double kBleuRelTolerance = 1e-12;

const Json& golden() {
  static const Json j = Json::parse(test::read_file("tests/eval/data/metric-golden.json"));
  return j;
}

std::vector<std::string> strings(const Json& a) {
  std::vector<std::string> out;
  for (const Json& s : a.as_array()) out.push_back(s.as_string());
  return out;
}

std::vector<std::vector<std::string>> string_lists(const Json& a) {
  std::vector<std::vector<std::string>> out;
  for (const Json& l : a.as_array()) out.push_back(strings(l));
  return out;
}

double rel_diff(double a, double b) {
  return std::fabs(a - b) / std::max({std::fabs(a), std::fabs(b), 1e-300});
}

TEST(MetricsGolden, FileHoldsAtLeast200Pairs) {
  EXPECT_GE(golden().at("pairs").size(), 200u);
  EXPECT_EQ(golden().at("nltk").as_string(), "3.8");
}

TEST(MetricsGolden, TokenisationEqualsThePythonRules) {
  for (const Json& p : golden().at("pairs").as_array()) {
    const std::string hyp = p.at("hypothesis").as_string();
    const auto refs = strings(p.at("references"));
    SCOPED_TRACE("hypothesis: " + hyp);
    EXPECT_EQ(rouge_tokens(hyp), strings(p.at("rouge_tokens").at("hypothesis")));
    EXPECT_EQ(bleu_tokens(hyp), strings(p.at("bleu_tokens").at("hypothesis")));
    EXPECT_EQ(qa_normalize(hyp), p.at("qa_normalized").at("hypothesis").as_string());
    EXPECT_EQ(qa_tokens(hyp), strings(p.at("qa_tokens").at("hypothesis")));
    for (size_t i = 0; i < refs.size(); ++i) {
      EXPECT_EQ(rouge_tokens(refs[i]), strings(p.at("rouge_tokens").at("references").at(i)));
      EXPECT_EQ(bleu_tokens(refs[i]), strings(p.at("bleu_tokens").at("references").at(i)));
      EXPECT_EQ(qa_normalize(refs[i]), p.at("qa_normalized").at("references").at(i).as_string());
      EXPECT_EQ(qa_tokens(refs[i]), strings(p.at("qa_tokens").at("references").at(i)));
    }
  }
}

TEST(MetricsGolden, RougeEqualsReference) {
  double worst = 0;
  for (const Json& p : golden().at("pairs").as_array()) {
    const RougeScores s = rouge(strings(p.at("references")), p.at("hypothesis").as_string());
    const Json& want = p.at("rouge");
    const std::pair<const char*, const PrfScore*> kinds[] = {
        {"rouge1", &s.rouge1}, {"rouge2", &s.rouge2}, {"rougeL", &s.rougeL}};
    for (const auto& [name, got] : kinds) {
      const Json& w = want.at(name);
      const double d[] = {std::fabs(got->precision - w.at(size_t{0}).as_number()),
                          std::fabs(got->recall - w.at(size_t{1}).as_number()),
                          std::fabs(got->fmeasure - w.at(size_t{2}).as_number())};
      for (double x : d) worst = std::max(worst, x);
      EXPECT_LE(*std::max_element(std::begin(d), std::end(d)), kRatioTolerance)
          << name << " of '" << p.at("hypothesis").as_string() << "'";
    }
  }
  std::printf("ROUGE: worst difference from the reference %.3g\n", worst);
}

TEST(MetricsGolden, SentenceBleuEqualsNltkForEverySmoothing) {
  double worst = 0;
  int nonzero = 0;
  for (const Json& p : golden().at("pairs").as_array()) {
    const BleuSegment seg{string_lists(p.at("bleu_tokens").at("references")),
                          strings(p.at("bleu_tokens").at("hypothesis"))};
    // The same segment from text must give the same tokens (bleu_segment = bleu_tokens per side).
    const BleuSegment from_text = bleu_segment(strings(p.at("references")), p.at("hypothesis").as_string());
    EXPECT_EQ(from_text.hypothesis, seg.hypothesis);
    for (const char* m : {"method0", "method1", "method2", "method3"}) {
      const double want = p.at("sentence_bleu").at(m).as_number();
      const double got = corpus_bleu({seg}, parse_bleu_smoothing(m)).bleu;
      worst = std::max(worst, rel_diff(got, want));
      nonzero += want > 0 ? 1 : 0;
      EXPECT_LE(rel_diff(got, want), kBleuRelTolerance)
          << m << " of '" << p.at("hypothesis").as_string() << "': " << got << " vs NLTK " << want;
    }
  }
  EXPECT_GT(nonzero, 500);  // the set exercises real scores, not mostly zeros
  std::printf("sentence BLEU: worst relative difference from NLTK %.3g\n", worst);
}

TEST(MetricsGolden, CorpusBleuEqualsNltkForEverySmoothing) {
  const auto& pairs = golden().at("pairs");
  double worst = 0;
  for (const Json& c : golden().at("corpus_bleu").as_array()) {
    std::vector<BleuSegment> segs;
    for (size_t i = static_cast<size_t>(c.at("start").as_int()); i < static_cast<size_t>(c.at("end").as_int()); ++i) {
      segs.push_back({string_lists(pairs.at(i).at("bleu_tokens").at("references")),
                      strings(pairs.at(i).at("bleu_tokens").at("hypothesis"))});
    }
    for (const char* m : {"method0", "method1", "method2", "method3"}) {
      const double want = c.at("bleu").at(m).as_number();
      const double got = corpus_bleu(segs, parse_bleu_smoothing(m)).bleu;
      worst = std::max(worst, rel_diff(got, want));
      EXPECT_LE(rel_diff(got, want), kBleuRelTolerance) << m << " pairs [" << c.at("start").as_int() << ", "
                                                        << c.at("end").as_int() << "): " << got << " vs " << want;
    }
  }
  std::printf("corpus BLEU: worst relative difference from NLTK %.3g\n", worst);
}

TEST(MetricsGolden, ExactMatchAndF1EqualSquadScript) {
  for (const Json& p : golden().at("pairs").as_array()) {
    const AnswerScore s = answer_match(strings(p.at("references")), p.at("hypothesis").as_string());
    EXPECT_EQ(s.exact_match, p.at("qa").at("exact_match").as_number()) << p.at("hypothesis").as_string();
    EXPECT_NEAR(s.f1, p.at("qa").at("f1").as_number(), kRatioTolerance) << p.at("hypothesis").as_string();
  }
}

}  // namespace
}  // namespace edgellm::eval
