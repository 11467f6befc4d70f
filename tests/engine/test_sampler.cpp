// Sampler chain: each stage against hand-computed candidate sets, the whole chain against a naive
// reference written here (full sort, plain loops), and temperature sampling against softmax.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "core/error.h"
#include "engine/sampler.h"

namespace edgellm {
namespace {

std::set<int32_t> ids_of(const CandidateSet& c) {
  std::set<int32_t> s;
  for (const auto& t : c.data) s.insert(t.id);
  return s;
}

CandidateSet make(const std::vector<float>& logits) {
  CandidateSet c;
  c.assign(logits.data(), static_cast<int32_t>(logits.size()));
  return c;
}

// Logits whose softmax is exactly `probs` (up to float rounding of log).
std::vector<float> logits_for(const std::vector<double>& probs) {
  std::vector<float> l;
  for (double p : probs) l.push_back(static_cast<float>(std::log(p)));
  return l;
}

float logit_of(const CandidateSet& c, int32_t id) {
  for (const auto& t : c.data) {
    if (t.id == id) return t.logit;
  }
  ADD_FAILURE() << "id " << id << " not among candidates";
  return 0.0f;
}

TEST(Sampler, GreedyIsArgmaxWithLowestIdOnTies) {
  std::mt19937 gen(7);
  std::normal_distribution<float> nd(0.0f, 3.0f);  // test data only; the sampler never uses <random> distributions
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<float> logits(1000);
    for (float& x : logits) x = nd(gen);
    const int32_t expected = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    SamplerParams p;
    p.temperature = 0.0f;
    Sampler s(p, 1000);
    EXPECT_EQ(s.sample(logits.data()), expected);
  }
  std::vector<float> tie = {1.0f, 4.0f, 2.0f, 4.0f, 4.0f};
  SamplerParams p;
  p.temperature = 0.0f;
  Sampler s(p, 5);
  EXPECT_EQ(s.sample(tie.data()), 1);
}

TEST(Sampler, TopKKeepsExactlyTheKBest) {
  CandidateSet c = make({1.0f, 5.0f, 3.0f, 5.0f, 2.0f, 0.0f});
  apply_top_k(c, 3);
  EXPECT_EQ(ids_of(c), (std::set<int32_t>{1, 2, 3}));
  ASSERT_TRUE(c.sorted);
  EXPECT_EQ(c.data[0].id, 1);  // tie 5.0 between ids 1 and 3: lower id first
  EXPECT_EQ(c.data[1].id, 3);

  CandidateSet one = make({1.0f, 5.0f, 3.0f, 5.0f});
  apply_top_k(one, 1);
  EXPECT_EQ(ids_of(one), (std::set<int32_t>{1}));

  CandidateSet all = make({1.0f, 2.0f});
  apply_top_k(all, 0);  // disabled
  EXPECT_EQ(all.size(), 2u);
  apply_top_k(all, 10);  // k beyond the vocabulary keeps everything
  EXPECT_EQ(all.size(), 2u);
}

TEST(Sampler, TopPKeepsTheSmallestNucleus) {
  // probs 0.5, 0.25, 0.125, 0.125 (ids 3, 0, 1, 2 after sorting).
  const std::vector<float> l = logits_for({0.25, 0.125, 0.125, 0.5});
  CandidateSet a = make(l);
  apply_top_p(a, 0.7f);  // 0.5 < 0.7 <= 0.75
  EXPECT_EQ(ids_of(a), (std::set<int32_t>{3, 0}));
  CandidateSet b = make(l);
  apply_top_p(b, 0.1f);  // the top token alone already covers 0.1
  EXPECT_EQ(ids_of(b), (std::set<int32_t>{3}));
  CandidateSet c = make(l);
  apply_top_p(c, 0.8f);  // needs a third token; ids 1 and 2 tie, the lower id wins
  EXPECT_EQ(ids_of(c), (std::set<int32_t>{3, 0, 1}));
  CandidateSet d = make(l);
  apply_top_p(d, 1.0f);  // disabled
  EXPECT_EQ(d.size(), 4u);
  CandidateSet e = make(l);
  apply_top_p(e, 0.0f);  // keeps at least one
  EXPECT_EQ(ids_of(e), (std::set<int32_t>{3}));
}

TEST(Sampler, TopPOnALargeFlatVocabularyMatchesAFullSort) {
  // A flat distribution forces the nucleus beyond the first sorted prefix (256), exercising the
  // widening path; the reference sorts everything.
  std::mt19937 gen(11);
  std::uniform_real_distribution<float> ud(0.0f, 0.5f);
  std::vector<float> logits(5000);
  for (float& x : logits) x = ud(gen);
  const float p = 0.6f;
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  double total = 0.0;
  const float m = logits[order[0]];
  for (float x : logits) total += std::exp(static_cast<double>(x) - m);
  std::set<int32_t> expected;
  double cum = 0.0;
  for (int32_t id : order) {
    expected.insert(id);
    cum += std::exp(static_cast<double>(logits[id]) - m) / total;
    if (cum >= p) break;
  }
  ASSERT_GT(expected.size(), 256u);
  CandidateSet c = make(logits);
  apply_top_p(c, p);
  EXPECT_EQ(ids_of(c), expected);
}

TEST(Sampler, MinPKeepsTokensAboveAFractionOfTheMax) {
  const std::vector<float> l = logits_for({0.5, 0.25, 0.125, 0.1, 0.025});
  CandidateSet a = make(l);
  apply_min_p(a, 0.3f);  // keep p >= 0.15
  EXPECT_EQ(ids_of(a), (std::set<int32_t>{0, 1}));
  CandidateSet b = make(l);
  apply_min_p(b, 0.15f);  // keep p >= 0.075
  EXPECT_EQ(ids_of(b), (std::set<int32_t>{0, 1, 2, 3}));
  CandidateSet c = make(l);
  apply_min_p(c, 1.0f);  // only the max
  EXPECT_EQ(ids_of(c), (std::set<int32_t>{0}));
  CandidateSet d = make(l);
  apply_min_p(d, 0.0f);  // disabled
  EXPECT_EQ(d.size(), 5u);
}

TEST(Sampler, PenaltiesChangeExactlyTheRepeatedLogits) {
  // window [0, 1, 1, 3]: counts 0->1, 1->2, 3->1.
  const std::vector<float> l = {2.0f, -2.0f, 1.0f, 0.5f, -1.0f};
  SamplerParams p;
  p.temperature = 0.0f;
  p.repeat_penalty = 2.0f;
  p.frequency_penalty = 0.5f;
  p.presence_penalty = 0.25f;
  p.penalty_last_n = 4;
  Sampler s(p, 5);
  for (int32_t id : {0, 1, 1, 3}) s.accept(id);
  (void)s.sample(l.data());
  CandidateSet c = make(l);
  apply_penalties(c, s.window_counts(), p.repeat_penalty, p.frequency_penalty, p.presence_penalty);
  EXPECT_FLOAT_EQ(logit_of(c, 0), 2.0f / 2.0f - 0.5f - 0.25f);
  EXPECT_FLOAT_EQ(logit_of(c, 1), -2.0f * 2.0f - 2 * 0.5f - 0.25f);
  EXPECT_FLOAT_EQ(logit_of(c, 2), 1.0f);
  EXPECT_FLOAT_EQ(logit_of(c, 3), 0.5f / 2.0f - 0.5f - 0.25f);
  EXPECT_FLOAT_EQ(logit_of(c, 4), -1.0f);
  // After penalties id 2 (1.0) beats id 0 (0.25): greedy must see the penalised logits.
  EXPECT_EQ(s.sample(l.data()), 2);

  // The window slides: with last_n = 2 only [1, 3] count.
  p.penalty_last_n = 2;
  Sampler w(p, 5);
  for (int32_t id : {0, 1, 1, 3}) w.accept(id);
  EXPECT_EQ(w.window_counts(), (TokenCounts{{1, 1}, {3, 1}}));
  EXPECT_EQ(w.sample(l.data()), 0);  // id 0 is no longer penalised

  // last_n = 0 disables the window entirely.
  p.penalty_last_n = 0;
  Sampler off(p, 5);
  off.accept(0);
  EXPECT_TRUE(off.window_counts().empty());
}

TEST(Sampler, LogitBiasShiftsOneToken) {
  const std::vector<float> l = {3.0f, 2.0f, 1.0f};
  SamplerParams p;
  p.temperature = 0.0f;
  p.logit_bias = {{0, -INFINITY}, {2, 1.5f}};
  Sampler s(p, 3);
  EXPECT_EQ(s.sample(l.data()), 2);  // 0 banned, 2 -> 2.5 beats 1 -> 2.0
  p.logit_bias = {{7, 1.0f}};
  EXPECT_THROW(Sampler(p, 3), Error);
}

// sample(logits, excluded) (ignore_eos) against the same ids banned by a -inf logit bias: the
// same choices, draw for draw (both consume one uniform per draw), greedy and sampled; an id
// out of range is ignored.
TEST(Sampler, ExcludedIdsEqualAMinusInfinityBias) {
  std::mt19937 gen(11);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  const std::vector<int32_t> excluded = {0, 5, 17, 1000};
  for (const float temperature : {0.0f, 0.8f}) {
    SamplerParams p;
    p.seed = 7;
    p.temperature = temperature;
    p.top_k = 0;
    p.min_p = 0.0f;
    SamplerParams banned = p;
    for (const int32_t id : {0, 5, 17}) banned.logit_bias.emplace_back(id, -INFINITY);
    Sampler a(p, 64), b(banned, 64);
    for (int step = 0; step < 500; ++step) {
      std::vector<float> l(64);
      for (float& x : l) x = nd(gen);
      l[static_cast<size_t>(step % 3 == 0 ? 5 : 17)] = 50.0f;  // an excluded id is often the argmax
      const int32_t id = a.sample(l.data(), excluded);
      ASSERT_EQ(id, b.sample(l.data())) << "temperature " << temperature << " step " << step;
      ASSERT_TRUE(id != 0 && id != 5 && id != 17) << id;
    }
    // Every allowed token -inf or NaN (a broken row): still never an excluded id (the bias path's
    // fallbacks may take any candidate); greedy takes the lowest allowed one.
    std::vector<float> dead(64, -INFINITY);
    dead[0] = 3.0f;
    dead[5] = 2.0f;
    dead[9] = NAN;
    for (int k = 0; k < 50; ++k) {
      const int32_t id = a.sample(dead.data(), excluded);
      EXPECT_TRUE(id != 0 && id != 5 && id != 17) << id;
      if (temperature == 0.0f) {
        EXPECT_EQ(id, 1);
      }
    }
    const std::vector<int32_t> all_but_last = [] {
      std::vector<int32_t> v(63);
      std::iota(v.begin(), v.end(), 0);
      return v;
    }();
    EXPECT_EQ(a.sample(dead.data(), all_but_last), 63);
  }
}

TEST(Sampler, TemperatureZeroKeepsOnlyTheArgmax) {
  CandidateSet c = make({0.5f, 2.0f, 2.0f, -1.0f});
  apply_temperature(c, 0.0f);
  EXPECT_EQ(ids_of(c), (std::set<int32_t>{1}));
  CandidateSet d = make({1.0f, 2.0f});
  apply_temperature(d, 0.5f);
  EXPECT_FLOAT_EQ(d.data[0].logit, 2.0f);
  EXPECT_FLOAT_EQ(d.data[1].logit, 4.0f);
}

TEST(Sampler, RngIsTheStandardMersenneTwister) {
  // mt19937 with the default seed 5489: its first two outputs are fixed by the C++ standard's
  // definition of the engine, so uniform01 is the same number on every platform.
  std::mt19937 rng;
  const double expected = (static_cast<double>(3499211612u >> 5) * 67108864.0 + static_cast<double>(581869302u >> 6)) /
                          9007199254740992.0;
  EXPECT_EQ(uniform01(rng), expected);
  std::mt19937 r2(1);
  for (int i = 0; i < 10000; ++i) {
    const double u = uniform01(r2);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
  }
}

TEST(Sampler, SameSeedGivesTheSameSequence) {
  std::mt19937 gen(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<std::vector<float>> rows(200, std::vector<float>(300));
  for (auto& r : rows) {
    for (float& x : r) x = nd(gen);
  }
  auto run = [&](uint64_t seed) {
    SamplerParams p;
    p.seed = seed;
    p.temperature = 1.0f;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    Sampler s(p, 300);
    std::vector<int32_t> out;
    for (const auto& r : rows) {
      out.push_back(s.sample(r.data()));
      s.accept(out.back());
    }
    return out;
  };
  EXPECT_EQ(run(42), run(42));
  EXPECT_NE(run(42), run(43));
  // reset() restarts the stream.
  SamplerParams p;
  p.seed = 9;
  Sampler s(p, 300);
  const int32_t a = s.sample(rows[0].data());
  s.reset();
  EXPECT_EQ(s.sample(rows[0].data()), a);
}

// Naive chain for the default order: penalties -> top-k -> top-p -> min-p -> temperature -> draw.
// Written independently of the sampler: full std::sort, explicit counts, linear inverse CDF. The
// sampler draws in "sorted order if a truncation stage sorted, else id order", so the reference
// walks the same order (the order only decides which token a given uniform number maps to).
int32_t naive_sample(std::vector<float> logits, const SamplerParams& p, const std::vector<int32_t>& history,
                     std::mt19937& rng) {
  const int32_t n = static_cast<int32_t>(logits.size());
  std::map<int32_t, int32_t> counts;
  const size_t start = p.penalty_last_n < 0 ? 0
                       : history.size() > static_cast<size_t>(p.penalty_last_n)
                           ? history.size() - static_cast<size_t>(p.penalty_last_n)
                           : 0;
  if (p.penalty_last_n != 0) {
    for (size_t i = start; i < history.size(); ++i) counts[history[i]]++;
  }
  for (const auto& [id, c] : counts) {
    float& x = logits[static_cast<size_t>(id)];
    x = x <= 0 ? x * p.repeat_penalty : x / p.repeat_penalty;
    x -= static_cast<float>(c) * p.frequency_penalty + p.presence_penalty;
  }
  std::vector<int32_t> ids(static_cast<size_t>(n));
  std::iota(ids.begin(), ids.end(), 0);
  bool sorted = false;
  auto sort_all = [&] {
    std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    });
    sorted = true;
  };
  if (p.top_k > 0 && p.top_k < n) {
    sort_all();
    ids.resize(static_cast<size_t>(p.top_k));
  }
  if (p.top_p < 1.0f && ids.size() > 1) {
    float m = -INFINITY;
    for (int32_t id : ids) m = std::max(m, logits[id]);
    double total = 0;
    for (int32_t id : ids) total += std::exp(static_cast<double>(logits[id]) - m);
    if (!sorted) sort_all();
    double cum = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
      cum += std::exp(static_cast<double>(logits[ids[i]]) - m);
      if (cum >= p.top_p * total) {
        ids.resize(i + 1);
        break;
      }
    }
  }
  if (p.min_p > 0.0f && ids.size() > 1) {
    float m = -INFINITY;
    for (int32_t id : ids) m = std::max(m, logits[id]);
    std::vector<int32_t> kept;
    for (int32_t id : ids) {
      if (logits[id] >= m + std::log(p.min_p)) kept.push_back(id);
    }
    ids = kept;
  }
  std::vector<double> w;
  float m = -INFINITY;
  for (int32_t id : ids) m = std::max(m, logits[id] / p.temperature);
  double total = 0;
  for (int32_t id : ids) {
    w.push_back(std::exp(static_cast<double>(logits[id] / p.temperature) - m));
    total += w.back();
  }
  const double r = uniform01(rng) * total;
  double cum = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    cum += w[i];
    if (r < cum) return ids[i];
  }
  return ids.back();
}

TEST(Sampler, ChainMatchesANaiveReference) {
  std::mt19937 gen(5);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  struct Config {
    int32_t top_k;
    float top_p, min_p, temp, rep, freq, pres;
    int32_t last_n;
  };
  const std::vector<Config> configs = {
      {40, 0.95f, 0.05f, 0.8f, 1.0f, 0.0f, 0.0f, 64},  // llama.cpp defaults
      {0, 0.9f, 0.0f, 1.0f, 1.3f, 0.2f, 0.1f, 16},     // no top-k: top-p sorts the full vocabulary
      {0, 1.0f, 0.1f, 1.5f, 1.1f, 0.0f, 0.5f, -1},     // min-p only: id order draw
      {5, 1.0f, 0.0f, 0.7f, 1.0f, 0.3f, 0.0f, 8},
  };
  const int32_t n_vocab = 2000;
  for (size_t ci = 0; ci < configs.size(); ++ci) {
    const Config& c = configs[ci];
    SamplerParams p;
    p.top_k = c.top_k;
    p.top_p = c.top_p;
    p.min_p = c.min_p;
    p.temperature = c.temp;
    p.repeat_penalty = c.rep;
    p.frequency_penalty = c.freq;
    p.presence_penalty = c.pres;
    p.penalty_last_n = c.last_n;
    p.seed = 1234 + ci;
    Sampler s(p, n_vocab);
    std::mt19937 ref_rng(static_cast<uint32_t>(p.seed));
    std::vector<int32_t> history;
    for (int step = 0; step < 150; ++step) {
      std::vector<float> logits(static_cast<size_t>(n_vocab));
      for (float& x : logits) x = nd(gen);
      // Make recently used tokens likely so the penalties matter.
      for (size_t i = history.size() > 5 ? history.size() - 5 : 0; i < history.size(); ++i) {
        logits[static_cast<size_t>(history[i])] += 4.0f;
      }
      const int32_t expected = naive_sample(logits, p, history, ref_rng);
      const int32_t got = s.sample(logits.data());
      ASSERT_EQ(got, expected) << "config " << ci << " step " << step;
      s.accept(got);
      history.push_back(got);
    }
  }
}

TEST(Sampler, TemperatureFrequenciesMatchSoftmax) {
  const std::vector<float> logits = {1.0f, 0.2f, -0.5f, 2.0f, 0.0f, 1.5f, -2.0f, 0.7f};
  const float temp = 0.7f;
  constexpr int kDraws = 200000;
  // Each frequency is a binomial proportion with standard deviation sqrt(p(1-p)/N) <= 0.5/sqrt(N)
  // (~0.0011 here); 5 of those makes a false failure about a one-in-a-million event.
  const double kFreqTolerance = 5.0 * 0.5 / std::sqrt(static_cast<double>(kDraws));
  SamplerParams p;
  p.temperature = temp;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = 2024;
  Sampler s(p, static_cast<int32_t>(logits.size()));
  std::vector<int> hits(logits.size(), 0);
  for (int i = 0; i < kDraws; ++i) hits[static_cast<size_t>(s.sample(logits.data()))]++;
  double total = 0;
  for (float l : logits) total += std::exp(l / temp);
  for (size_t i = 0; i < logits.size(); ++i) {
    const double expected = std::exp(logits[i] / temp) / total;
    EXPECT_NEAR(static_cast<double>(hits[i]) / kDraws, expected, kFreqTolerance) << "token " << i;
  }
}

TEST(Sampler, LargeVocabularyDefaultChainStaysInTheTopK) {
  // Qwen-sized vocabulary: the default chain must pick one of the 40 best logits.
  const int32_t n_vocab = 151936;
  std::mt19937 gen(8);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  std::vector<float> logits(static_cast<size_t>(n_vocab));
  for (float& x : logits) x = nd(gen);
  std::vector<float> sorted = logits;
  std::nth_element(sorted.begin(), sorted.begin() + 39, sorted.end(), std::greater<float>());
  const float kth = sorted[39];
  Sampler s(SamplerParams{}, n_vocab);
  for (int i = 0; i < 50; ++i) {
    const int32_t id = s.sample(logits.data());
    EXPECT_GE(logits[static_cast<size_t>(id)], kth);
    EXPECT_LE(s.last_candidates().size(), 40u);
  }
}

TEST(Sampler, RejectsBadParameters) {
  SamplerParams p;
  EXPECT_THROW(Sampler(p, 0), Error);
  p.min_p = 1.5f;
  EXPECT_THROW(Sampler(p, 10), Error);
  p = SamplerParams{};
  p.temperature = NAN;
  EXPECT_THROW(Sampler(p, 10), Error);
  p = SamplerParams{};
  p.order = {SamplerStage::kTopK, SamplerStage::kTopK};
  EXPECT_THROW(Sampler(p, 10), Error);
  EXPECT_EQ(sampler_stage_from_name("min_p"), SamplerStage::kMinP);
  EXPECT_THROW(sampler_stage_from_name("top-q"), Error);
}

TEST(Sampler, NanLogitsAreNeverPicked) {
  const std::vector<float> l = {NAN, 1.0f, NAN};
  SamplerParams p;
  p.seed = 1;
  Sampler s(p, 3);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(s.sample(l.data()), 1);
}


// ---- TokenConstraint: check the pick first, mask only when it is refused.

// Allows a fixed set of ids; counts what the sampler asked.
class SetConstraint : public TokenConstraint {
 public:
  explicit SetConstraint(std::vector<int32_t> ids) : ids_(std::move(ids)) {}
  bool allows(int32_t id) override {
    ++allows_calls;
    return std::find(ids_.begin(), ids_.end(), id) != ids_.end();
  }
  void fill_allowed(TokenBitset& allowed) override {
    ++fills;
    allowed.clear_all();
    for (int32_t id : ids_) allowed.set(id);
  }
  int allows_calls = 0;
  int fills = 0;

 private:
  std::vector<int32_t> ids_;
};

TEST(SamplerConstraint, GreedyTakesTheBestAllowedToken) {
  std::vector<float> logits = {0.5f, 3.0f, 1.0f, 2.5f, -1.0f};
  SamplerParams p;
  p.temperature = 0.0f;
  Sampler s(p, 5);
  SetConstraint allow_best({1, 2});
  EXPECT_EQ(s.sample(logits.data(), {}, &allow_best), 1);
  EXPECT_EQ(allow_best.fills, 0);  // the argmax was allowed: no mask built
  EXPECT_FALSE(s.last_needed_mask());
  SetConstraint refuse_best({2, 3, 4});
  EXPECT_EQ(s.sample(logits.data(), {}, &refuse_best), 3);
  EXPECT_EQ(refuse_best.fills, 1);
  EXPECT_TRUE(s.last_needed_mask());
  // Excluded ids (ignore_eog) stay excluded under a constraint.
  const std::vector<int32_t> excluded = {3};
  EXPECT_EQ(s.sample(logits.data(), excluded, &refuse_best), 2);
  SetConstraint none({3});
  EXPECT_THROW(s.sample(logits.data(), excluded, &none), Error);
}

// Plain temperature sampling with a constraint draws from the softmax renormalised over the
// allowed ids (a refused first pick is redrawn from the allowed mass). The empirical frequencies
// of 40,000 draws against the exact probabilities computed here: each within 4 standard errors
// (measured: at most 0.71 sigma, seed 11).
TEST(SamplerConstraint, SamplingFollowsTheRenormalisedDistribution) {
  const std::vector<float> logits = {1.0f, 2.0f, 0.0f, 3.0f, 1.5f, -0.5f, 2.5f, 0.2f};
  const std::vector<int32_t> allowed = {0, 2, 4, 5, 7};
  SamplerParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = 11;
  Sampler s(p, 8);
  SetConstraint c(allowed);
  const int n = 40000;
  std::vector<int> hits(8, 0);
  for (int i = 0; i < n; ++i) hits[static_cast<size_t>(s.sample(logits.data(), {}, &c))]++;
  double z = 0;
  for (int32_t id : allowed) z += std::exp(static_cast<double>(logits[static_cast<size_t>(id)]));
  for (int32_t id = 0; id < 8; ++id) {
    const bool ok = std::find(allowed.begin(), allowed.end(), id) != allowed.end();
    if (!ok) {
      EXPECT_EQ(hits[static_cast<size_t>(id)], 0) << id;
      continue;
    }
    const double prob = std::exp(static_cast<double>(logits[static_cast<size_t>(id)])) / z;
    const double sigma = std::sqrt(prob * (1 - prob) / n);
    EXPECT_NEAR(hits[static_cast<size_t>(id)] / static_cast<double>(n), prob, 4 * sigma) << id;
  }
  // The mask was built only for refused first picks (about the refused mass of the draws).
  EXPECT_GT(c.fills, n / 4);
  EXPECT_LT(c.fills, n);
}

// With a constraint that allows everything the sampler is the unconstrained one, draw for draw.
TEST(SamplerConstraint, AnAllowAllConstraintChangesNothing) {
  std::vector<float> logits(300);
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  for (float& x : logits) x = nd(rng);
  SamplerParams p;
  p.seed = 3;
  Sampler a(p, 300), b(p, 300);
  std::vector<int32_t> all(300);
  std::iota(all.begin(), all.end(), 0);
  SetConstraint c(all);
  for (int i = 0; i < 200; ++i) ASSERT_EQ(a.sample(logits.data()), b.sample(logits.data(), {}, &c));
  EXPECT_EQ(c.fills, 0);
}

}  // namespace
}  // namespace edgellm
