// The sampler chain: turns one row of logits (n_vocab floats) into the next token id.
// Semantics follow llama.cpp's samplers: logit bias, then a configurable order of
// penalties -> top-k -> top-p -> min-p -> temperature, then a seeded draw (or argmax when the
// temperature is 0). Every stage works on a CandidateSet so that stages after top-k only touch
// the k survivors; nothing sorts the whole vocabulary unless a stage really needs the order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <random>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/token_bitset.h"

namespace edgellm {

enum class SamplerStage { kPenalties, kTopK, kTopP, kMinP, kTemperature };

// "penalties", "top_k", "top_p", "min_p", "temperature"; parse is the inverse (nullopt-free:
// throws Error(kInvalidArgument) naming the unknown stage).
const char* sampler_stage_name(SamplerStage stage);
SamplerStage sampler_stage_from_name(const std::string& name);

struct SamplerParams {
  float temperature = 0.8f;        // <= 0: greedy (argmax after bias and penalties)
  int32_t top_k = 40;              // <= 0: disabled
  float top_p = 0.95f;             // >= 1: disabled
  float min_p = 0.05f;             // <= 0: disabled; keep p >= min_p * p_max
  float repeat_penalty = 1.0f;     // 1: disabled; positive logits divided, negative multiplied
  float frequency_penalty = 0.0f;  // subtracted once per occurrence in the window
  float presence_penalty = 0.0f;   // subtracted once if the token occurs in the window
  int32_t penalty_last_n = 64;     // window of accepted tokens; 0: no penalties; -1: all tokens
  uint64_t seed = 0;
  std::vector<std::pair<int32_t, float>> logit_bias;  // (token id, added to its logit)
  std::vector<SamplerStage> order = {SamplerStage::kPenalties, SamplerStage::kTopK, SamplerStage::kTopP,
                                     SamplerStage::kMinP, SamplerStage::kTemperature};
};

struct TokenLogit {
  int32_t id;
  float logit;
};

// The surviving candidates of one sampling step. `sorted` means descending by logit with ties in
// ascending id order (a strict total order, so results never depend on the sort algorithm);
// `by_id` means data[i].id == i for every i (the untouched full vocabulary), which lets the
// penalty stage index directly instead of hashing.
struct CandidateSet {
  std::vector<TokenLogit> data;
  bool sorted = false;
  bool by_id = false;

  void assign(const float* logits, int32_t n_vocab);
  size_t size() const { return data.size(); }
};

// Token counts over the penalty window: (id -> occurrences).
using TokenCounts = std::unordered_map<int32_t, int32_t>;

// Stages, exposed for tests and for callers that build their own chain. Each keeps at least
// `min_keep` candidates (when that many exist).
void apply_logit_bias(CandidateSet& cands, const std::vector<std::pair<int32_t, float>>& bias);
void apply_penalties(CandidateSet& cands, const TokenCounts& counts, float repeat_penalty,
                     float frequency_penalty, float presence_penalty);
void apply_top_k(CandidateSet& cands, int32_t k);
void apply_top_p(CandidateSet& cands, float p, size_t min_keep = 1);
void apply_min_p(CandidateSet& cands, float p, size_t min_keep = 1);
// t <= 0 keeps only the argmax (lowest id on ties), as llama.cpp does.
void apply_temperature(CandidateSet& cands, float t);

// Softmax of the candidates' logits, in candidate order, computed in double so that the
// probabilities (and the draw) do not depend on float summation order quirks.
std::vector<double> candidate_probs(const CandidateSet& cands);

// Argmax over the candidates; ties go to the lowest id. Throws kInvalidArgument when empty.
int32_t pick_greedy(const CandidateSet& cands);

// Platform-independent uniform number in [0, 1) with 53 random bits, built from two raw
// std::mt19937 outputs (the engine's output sequence is fixed by the C++ standard, unlike
// std::uniform_real_distribution whose algorithm is implementation-defined).
double uniform01(std::mt19937& rng);

// Draws one candidate with probability softmax(logit); uses exactly one uniform01 value.
int32_t pick_random(const CandidateSet& cands, std::mt19937& rng);

// What may come next, when the output must follow a grammar or a JSON Schema
// (grammar/grammar_matcher.h implements it). The sampler first runs its chain as usual and asks
// about the one token it picked; only when that token is refused does it ask for the whole set,
// mask the logits of every other token and run the chain again over the allowed ones. For greedy
// decoding and plain temperature sampling the result has exactly the distribution of sampling
// from the masked logits (a refused first pick is redrawn from the renormalised allowed mass);
// with top-k / top-p / min-p the first pick is truncated against the whole vocabulary, as
// llama.cpp's "grammar after the chain" does. While most recent picks were refused (more than
// half, a moving average), the sampler masks first and runs the chain once (every 8th step still
// checks first). Unconstrained sampling never touches this.
class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;
  virtual bool allows(int32_t id) = 0;
  // Sets exactly the allowed ids; `allowed` has n_vocab bits.
  virtual void fill_allowed(TokenBitset& allowed) = 0;
};

class Sampler {
 public:
  // Throws kInvalidArgument for n_vocab <= 0, NaN/negative parameters, a logit-bias id out of
  // range or a stage listed twice.
  Sampler(const SamplerParams& params, int32_t n_vocab);

  // Runs the chain over a copy of `logits` (n_vocab floats) and returns the chosen id. Does not
  // record the token: call accept() with whatever token is actually appended.
  // `excluded`: ids that are never chosen (their logit becomes -inf before the chain; ids out of
  // range are ignored). ignore_eos passes the end-of-generation tokens here, as llama.cpp turns
  // ignore_eos into a -inf logit bias on them.
  // `constraint` (may be null): see TokenConstraint. Throws Error(kInvalidArgument) when the
  // constraint allows no token that is not excluded.
  int32_t sample(const float* logits, std::span<const int32_t> excluded = {}, TokenConstraint* constraint = nullptr);

  // Adds a token to the penalty window (prompt tokens too, as llama.cpp does).
  void accept(int32_t id);
  // Forgets the penalty window and restarts the RNG from the seed.
  void reset();

  const SamplerParams& params() const { return params_; }
  int32_t n_vocab() const { return n_vocab_; }
  // Occurrences of each token in the current penalty window.
  const TokenCounts& window_counts() const { return counts_; }
  // Candidates left after the last sample() call's chain (for tests and debugging).
  const CandidateSet& last_candidates() const { return cands_; }
  // Whether the last sample() call with a constraint needed the full mask (its first pick was
  // refused).
  bool last_needed_mask() const { return last_needed_mask_; }

 private:
  SamplerParams params_;
  int32_t n_vocab_;
  std::mt19937 rng_;
  std::deque<int32_t> window_;  // accepted tokens, oldest first, at most penalty_last_n
  TokenCounts counts_;          // kept in step with window_ so sample() never rescans it
  CandidateSet cands_;
  TokenBitset allowed_;
  bool last_needed_mask_ = false;
  // Check-first or mask-first (see TokenConstraint): moving average of refused first picks.
  static constexpr uint32_t kProbeEvery = 8;
  double refusal_rate_ = 0.0;
  uint32_t constrained_steps_ = 0;

  // One run of the chain; `allowed` (may be null) restricts the candidates.
  int32_t sample_chain(const float* logits, std::span<const int32_t> excluded, const TokenBitset* allowed);
};

}  // namespace edgellm
