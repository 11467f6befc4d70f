// The metrics of `edgellm eval` on published examples with published scores:
//   - rouge-score's own tests (google-research/rouge, rouge_scorer_test.py), including its
//     comparison with the original ROUGE-1.5.5 Perl script on its two test sentences;
//   - the ROUGE-L example of Lin (2004), "ROUGE: A Package for Automatic Evaluation of
//     Summaries", section 3.1;
//   - the doctest examples of NLTK's bleu_score.py (sentence_bleu, corpus_bleu, method1).
// And the edges: empty text, invalid UTF-8, one-token hypotheses, no reference.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/utf8.h"
#include "tools/eval/answer_match.h"
#include "tools/eval/bleu.h"
#include "tools/eval/rouge.h"
#include "tools/eval/task_file.h"
#include "tools/eval/text_tokens.h"

namespace edgellm::eval {
namespace {

using Tokens = std::vector<std::string>;

// rouge-score's test: scorer.score(target, prediction); values with assertAlmostEqual (7 places).
void expect_prf(const PrfScore& s, double p, double r, double f, double tol, const char* what) {
  EXPECT_NEAR(s.precision, p, tol) << what;
  EXPECT_NEAR(s.recall, r, tol) << what;
  EXPECT_NEAR(s.fmeasure, f, tol) << what;
}

TEST(MetricsPublished, RougeScoreUnitTests) {
  constexpr double kPlaces7 = 5e-8;
  expect_prf(rouge({"testing one two"}, "testing").rouge1, 1, 1.0 / 3, 0.5, kPlaces7, "testRouge1");
  expect_prf(rouge({"testing one two"}, "testing one").rouge2, 1, 0.5, 2.0 / 3, kPlaces7, "testRouge2");
  expect_prf(rouge({"testing one two"}, "testing one").rougeL, 1, 2.0 / 3, 0.8, kPlaces7, "testRougeLConsecutive");
  expect_prf(rouge({"testing one two"}, "testing two").rougeL, 1, 2.0 / 3, 0.8, kPlaces7, "testRougeLNonConsecutive");
  expect_prf(rouge({"testing one two"}, "testing one").rouge1, 1, 2.0 / 3, 0.8, kPlaces7, "testMultipleRougeTypes");
  const RougeScores empty = rouge({"testing one two"}, "");
  expect_prf(empty.rouge1, 0, 0, 0, 0, "testRougeEmpty rouge1");
  expect_prf(empty.rouge2, 0, 0, 0, 0, "testRougeEmpty rouge2");
  expect_prf(empty.rougeL, 0, 0, 0, 0, "testRougeEmpty rougeL");
}

// rouge-score's testdata/target.txt and prediction.txt (random strings), scored by ROUGE-1.5.5
// (-e data -n 2, no stemming): rouge_scorer_test.py's "AgainstRouge155" values, 5 places.
TEST(MetricsPublished, RougeScoreAgainstRouge155) {
  const std::string targets[] = {
      "ZfbCUIUuePaiLVUlCaUXxkpu XPeWing tUHfPMuZ',-Xd Y BrUgVJing M-HV.-DgdDaY.rFDJCRing Ht-LM EKBDXkME,yz'RBr "
      "q'wtion wIojNbN wL,b .a-'XdQggyFl jB-RPP'iyOIcUxer tKM L\n",
      "KsJdPByEtAor fE-Qg Dpdbring cw-WeFyu vC MoBL Xdn g wkvcEiGvKtion BDFhrpMtion psing sbKao Q m qiing LMmer "
      "HqqLFXe,XPY,J XsurkMer ,ed nB'wH'bWVHjWFEing tQ.saefZwJtKrTlixYpMMsJing UCAPwNHeYVjDing c T BUySKtion "
      "gMPfJpwGw p'NvxAoping eu pBwMBKV'I DNxqelhu,PHPxDEq,mtion SN\n"};
  const std::string predictions[] = {
      "rFDJCRtion Ht-LM EKtDXkME,yz'RBr q'wer wrojNbN wL,b .a-'XdQggyFl jB-RPP'iyOIcUxi\n",
      "n cw-WeFyu vC MoBL Xdn g wkvcEiGvKtion BDFhrpMer pstion sbKao Q m qier LMmed HqqLFXe,XPY,J XsurkMeo ,ed "
      "nB'wH'bWVHjWFEer tQ.saefZwJtKrTlixYpMMNJtion UCAPwNHeYVjD\n"};
  constexpr double kPlaces5 = 5e-6;
  const RougeScores s0 = rouge({targets[0]}, predictions[0]);
  const RougeScores s1 = rouge({targets[1]}, predictions[1]);
  expect_prf(s0.rouge1, 0.68750, 0.40741, 0.51163, kPlaces5, "rouge1 [0]");
  expect_prf(s1.rouge1, 0.65385, 0.40476, 0.50000, kPlaces5, "rouge1 [1]");
  expect_prf(s0.rouge2, 0.53333, 0.30769, 0.39024, kPlaces5, "rouge2 [0]");
  expect_prf(s1.rouge2, 0.48000, 0.29268, 0.36364, kPlaces5, "rouge2 [1]");
  expect_prf(s0.rougeL, 0.68750, 0.40741, 0.51163, kPlaces5, "rougeL [0]");
  expect_prf(s1.rougeL, 0.65385, 0.40476, 0.50000, kPlaces5, "rougeL [1]");
}

// Lin (2004), section 3.1: reference S1 "police killed the gunman"; S2 "police kill the gunman"
// has ROUGE-L 3/4, S3 "the gunman kill police" 2/4 (ROUGE-2 would rate them equally: 1/3 each).
TEST(MetricsPublished, LinRougeLExample) {
  const RougeScores s2 = rouge({"police killed the gunman"}, "police kill the gunman");
  const RougeScores s3 = rouge({"police killed the gunman"}, "the gunman kill police");
  EXPECT_DOUBLE_EQ(s2.rougeL.fmeasure, 0.75);
  EXPECT_DOUBLE_EQ(s3.rougeL.fmeasure, 0.5);
  EXPECT_DOUBLE_EQ(s2.rouge2.fmeasure, 1.0 / 3);
  EXPECT_DOUBLE_EQ(s3.rouge2.fmeasure, 1.0 / 3);
}

// NLTK bleu_score.py doctests (ELLIPSIS: the printed digits are a prefix of the value).
bool starts_with_digits(double v, double printed, int places) {
  const double scale = std::pow(10.0, places);
  return std::floor(v * scale + 1e-9) == std::round(printed * scale);
}

const Tokens kHyp1 = {"It",  "is",       "a",      "guide", "to",  "action",   "which", "ensures", "that",
                      "the", "military", "always", "obeys", "the", "commands", "of",    "the",     "party"};
const Tokens kHyp2 = {"It",      "is",  "to",       "insure",    "the",  "troops", "forever",
                      "hearing", "the", "activity", "guidebook", "that", "party",  "direct"};
const Tokens kRef1 = {"It",   "is",  "a",        "guide", "to",      "action", "that",  "ensures",
                      "that", "the", "military", "will",  "forever", "heed",   "Party", "commands"};
const Tokens kRef2 = {"It",     "is",     "the",   "guiding", "principle", "which",   "guarantees", "the", "military",
                      "forces", "always", "being", "under",   "the",       "command", "of",         "the", "Party"};
const Tokens kRef3 = {"It",     "is", "the",  "practical", "guide",      "for", "the", "army",
                      "always", "to", "heed", "the",       "directions", "of",  "the", "party"};

TEST(MetricsPublished, NltkBleuDoctests) {
  const double b1 = corpus_bleu({{{kRef1, kRef2, kRef3}, kHyp1}}, BleuSmoothing::kMethod0).bleu;
  EXPECT_TRUE(starts_with_digits(b1, 0.5045, 4)) << b1;
  const double b2 = corpus_bleu({{{kRef1, kRef2, kRef3}, kHyp2}}, BleuSmoothing::kMethod0).bleu;
  EXPECT_LT(b2, 0.00005) << b2;  // round(..., 4) == 0.0
  const double b2s = corpus_bleu({{{kRef1, kRef2, kRef3}, kHyp2}}, BleuSmoothing::kMethod1).bleu;
  EXPECT_TRUE(starts_with_digits(b2s, 0.0370, 4)) << b2s;

  const Tokens hyp2 = {"he", "read", "the", "book", "because", "he", "was", "interested", "in", "world", "history"};
  const Tokens ref2a = {"he", "was", "interested", "in", "world", "history", "because", "he", "read", "the", "book"};
  const double corpus = corpus_bleu({{{kRef1, kRef2, kRef3}, kHyp1}, {{ref2a}, hyp2}}, BleuSmoothing::kMethod0).bleu;
  EXPECT_TRUE(starts_with_digits(corpus, 0.5920, 4)) << corpus;
  const double mean = (b1 + corpus_bleu({{{ref2a}, hyp2}}, BleuSmoothing::kMethod0).bleu) / 2;
  EXPECT_TRUE(starts_with_digits(mean, 0.6223, 4)) << mean;

  // The same from text: bleu_tokens splits these sentences into exactly those words.
  const auto join = [](const Tokens& t) {
    std::string s;
    for (const auto& w : t) s += (s.empty() ? "" : " ") + w;
    return s;
  };
  const BleuSegment seg = bleu_segment({join(kRef1), join(kRef2), join(kRef3)}, join(kHyp1));
  EXPECT_EQ(seg.hypothesis, kHyp1);
  EXPECT_DOUBLE_EQ(corpus_bleu({seg}, BleuSmoothing::kMethod0).bleu, b1);
}

TEST(MetricsPublished, SquadExamples) {
  // The normalisation of SQuAD v1.1's evaluate script: case, punctuation and articles.
  EXPECT_EQ(answer_match({"Denver Broncos"}, "the Denver Broncos.").exact_match, 1.0);
  EXPECT_EQ(answer_match({"Saint Bernadette Soubirous"}, "Saint Bernadette").exact_match, 0.0);
  EXPECT_NEAR(answer_match({"Saint Bernadette Soubirous"}, "Saint Bernadette").f1, 0.8, 1e-12);  // P 1, R 2/3
  EXPECT_EQ(qa_normalize("  The  Eiffel\tTower!! "), "eiffel tower");
  EXPECT_EQ(qa_normalize("an-apple"), "anapple");  // punctuation removed before articles
  // MLQA's mixed segmentation: CJK characters are tokens; Chinese punctuation is removed.
  EXPECT_EQ(qa_tokens("北京市，中国"), (Tokens{"北", "京", "市", "中", "国"}));
  EXPECT_NEAR(answer_match({"北京"}, "北京市").f1, 0.8, 1e-12);
}

TEST(MetricsEdges, EmptyTextAndNoOverlap) {
  EXPECT_EQ(corpus_bleu({bleu_segment({"a b c"}, "")}, BleuSmoothing::kMethod1).bleu, 0.0);
  EXPECT_EQ(corpus_bleu({bleu_segment({""}, "")}, BleuSmoothing::kMethod1).bleu, 0.0);
  EXPECT_EQ(corpus_bleu({bleu_segment({"x y"}, "a b")}, BleuSmoothing::kMethod1).bleu, 0.0);
  EXPECT_EQ(corpus_bleu({}, BleuSmoothing::kMethod1).bleu, 0.0);
  EXPECT_THROW(corpus_bleu({BleuSegment{{}, {"a"}}}, BleuSmoothing::kMethod1), Error);
  EXPECT_THROW(parse_bleu_smoothing("method4"), Error);
  const RougeScores r = rouge({}, "anything");
  EXPECT_EQ(r.rougeL.fmeasure, 0.0);
  EXPECT_EQ(answer_match({""}, "").exact_match, 1.0);  // both normalise to ""
  EXPECT_EQ(answer_match({""}, "").f1, 0.0);           // v1.1: no common token
  // One-token hypothesis: no 2-, 3-, 4-grams; denominators are max(1, 0) = 1 as in NLTK.
  const BleuResult one = corpus_bleu({bleu_segment({"cat"}, "cat")}, BleuSmoothing::kMethod1);
  EXPECT_EQ(one.totals[1], 1);
  EXPECT_NEAR(one.bleu, std::exp(0.25 * (std::log(1.0) + 3 * std::log(0.1))), 1e-15);
}

TEST(MetricsEdges, InvalidUtf8IsReplacementCharacters) {
  const std::string bad =
      "ab\xff"
      "cd \xe4\xb8 \xed\xa0\x80x";  // stray byte, truncated 3-byte, surrogate
  EXPECT_EQ(rouge_tokens(bad), (Tokens{"ab", "cd", "x"}));
  const Tokens b = bleu_tokens(bad);
  EXPECT_EQ(b.front(), "ab");
  EXPECT_EQ(b[1], "\xEF\xBF\xBD");  // U+FFFD, a symbol: a token of its own
  for (const auto& t : b) EXPECT_TRUE(utf8::is_valid(t)) << t;
  EXPECT_NO_THROW(answer_match({bad}, bad));
  EXPECT_EQ(answer_match({bad}, bad).exact_match, 1.0);
  EXPECT_NO_THROW(rouge({bad}, "ab"));
}

// Random bytes (biased towards UTF-8 lead and continuation bytes, spaces and ASCII letters) through
// every metric and the task-file parser: tokens are always valid UTF-8, scores stay in [0, 1],
// the parser throws Error or accepts, nothing else happens (ASan / UBSan in test-asan).
TEST(MetricsEdges, RandomBytesNeverBreakAnything) {
  std::mt19937 rng(41);
  const char alphabet[] = {' ',    'a',    'B',    '\n',   '\xe4', '\xb8', '\xad', '\xf0',
                           '\x9f', '\x80', '\xff', '\xc3', '.',    '"',    '{'};
  for (int iter = 0; iter < 2000; ++iter) {
    std::string a, b;
    for (int k = static_cast<int>(rng() % 40); k > 0; --k) a.push_back(alphabet[rng() % sizeof(alphabet)]);
    for (int k = static_cast<int>(rng() % 40); k > 0; --k) b.push_back(static_cast<char>(rng() % 256));
    for (const auto& toks : {rouge_tokens(a), bleu_tokens(a), qa_tokens(a), rouge_tokens(b), bleu_tokens(b)}) {
      for (const auto& t : toks) ASSERT_TRUE(utf8::is_valid(t) && !t.empty());
    }
    const RougeScores r = rouge({a}, b);
    ASSERT_TRUE(r.rougeL.fmeasure >= 0 && r.rougeL.fmeasure <= 1);
    const double bl = corpus_bleu({bleu_segment({a}, b)}, BleuSmoothing::kMethod1).bleu;
    ASSERT_TRUE(bl >= 0 && bl <= 1) << bl;
    const AnswerScore q = answer_match({a}, b);
    ASSERT_TRUE(q.f1 >= 0 && q.f1 <= 1);
    try {
      parse_task_lines(a + "\n" + b);
    } catch (const Error&) {
    }
  }
}

TEST(MetricsEdges, CjkIsScoredPerCharacter) {
  EXPECT_EQ(rouge_tokens("床前明月光，疑是地上霜。"),
            (Tokens{"床", "前", "明", "月", "光", "疑", "是", "地", "上", "霜"}));
  EXPECT_EQ(rouge_tokens("GPU和CPU都快"), (Tokens{"gpu", "和", "cpu", "都", "快"}));
  EXPECT_EQ(bleu_tokens("你好，World!"), (Tokens{"你", "好", "，", "World", "!"}));
  const RougeScores s = rouge({"床前明月光"}, "床前明月");
  expect_prf(s.rouge1, 1.0, 0.8, 2 * 0.8 / 1.8, 1e-15, "zh rouge1");
  expect_prf(s.rouge2, 1.0, 0.75, 2 * 0.75 / 1.75, 1e-15, "zh rouge2");
}

}  // namespace
}  // namespace edgellm::eval
