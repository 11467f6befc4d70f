#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace edgellm {

namespace {

// Strict total order used everywhere: higher logit first, lower id on ties. Because it is total,
// partial_sort / nth_element give the same survivors on every platform and standard library.
inline bool better(const TokenLogit& a, const TokenLogit& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// Top-p stops narrowing the range that holds the end of the nucleus by selection once it is this
// small and sorts it instead (sorting a few hundred candidates is cheaper than more passes).
constexpr size_t kTopPSortThreshold = 256;

float max_logit(const CandidateSet& cands) {
  float m = -std::numeric_limits<float>::infinity();
  for (const auto& c : cands.data) m = std::max(m, c.logit);
  return m;
}

// Unnormalised weights exp(l - max) in double. All -inf logits (everything masked) degrade to a
// uniform distribution rather than NaN.
std::vector<double> weights(const CandidateSet& cands, double* total) {
  std::vector<double> w(cands.size());
  const float m = max_logit(cands);
  double sum = 0.0;
  if (m == -std::numeric_limits<float>::infinity()) {
    std::fill(w.begin(), w.end(), 1.0);
    sum = static_cast<double>(w.size());
  } else {
    for (size_t i = 0; i < cands.size(); ++i) {
      w[i] = std::exp(static_cast<double>(cands.data[i].logit) - static_cast<double>(m));
      sum += w[i];
    }
  }
  *total = sum;
  return w;
}

void sort_prefix(CandidateSet& cands, size_t n) {
  n = std::min(n, cands.size());
  std::partial_sort(cands.data.begin(), cands.data.begin() + static_cast<std::ptrdiff_t>(n), cands.data.end(),
                    better);
}

void require_finite(float v, const char* name) {
  require(std::isfinite(v), ErrorCode::kInvalidArgument, std::string("sampler: ") + name + " must be finite");
}

}  // namespace

const char* sampler_stage_name(SamplerStage stage) {
  switch (stage) {
    case SamplerStage::kPenalties: return "penalties";
    case SamplerStage::kTopK: return "top_k";
    case SamplerStage::kTopP: return "top_p";
    case SamplerStage::kMinP: return "min_p";
    case SamplerStage::kTemperature: return "temperature";
  }
  return "unknown";
}

SamplerStage sampler_stage_from_name(const std::string& name) {
  for (SamplerStage s : {SamplerStage::kPenalties, SamplerStage::kTopK, SamplerStage::kTopP, SamplerStage::kMinP,
                         SamplerStage::kTemperature}) {
    if (name == sampler_stage_name(s)) return s;
  }
  throw Error(ErrorCode::kInvalidArgument, "unknown sampler stage '" + name +
                                               "' (expected penalties, top_k, top_p, min_p or temperature)");
}

void CandidateSet::assign(const float* logits, int32_t n_vocab) {
  data.resize(static_cast<size_t>(n_vocab));
  for (int32_t i = 0; i < n_vocab; ++i) {
    float l = logits[i];
    // A NaN would break the strict ordering (undefined behaviour in std::sort); treat it as
    // "never pick". +inf is clamped so that softmax stays finite (it still dominates).
    if (std::isnan(l)) l = -std::numeric_limits<float>::infinity();
    if (l == std::numeric_limits<float>::infinity()) l = std::numeric_limits<float>::max();
    data[static_cast<size_t>(i)] = {i, l};
  }
  sorted = false;
  by_id = true;
}

void apply_logit_bias(CandidateSet& cands, const std::vector<std::pair<int32_t, float>>& bias) {
  if (bias.empty()) return;
  if (cands.by_id) {
    for (const auto& [id, b] : bias) {
      if (id >= 0 && static_cast<size_t>(id) < cands.size()) cands.data[static_cast<size_t>(id)].logit += b;
    }
  } else {
    std::unordered_map<int32_t, float> m;
    for (const auto& [id, b] : bias) m[id] += b;
    for (auto& c : cands.data) {
      auto it = m.find(c.id);
      if (it != m.end()) c.logit += it->second;
    }
  }
  cands.sorted = false;
}

void apply_penalties(CandidateSet& cands, const TokenCounts& counts, float repeat_penalty, float frequency_penalty,
                     float presence_penalty) {
  if (counts.empty()) return;
  if (repeat_penalty == 1.0f && frequency_penalty == 0.0f && presence_penalty == 0.0f) return;
  auto penalise = [&](TokenLogit& c, int32_t count) {
    if (count <= 0) return;
    // llama.cpp's rule: dividing a negative logit would raise it, so negatives are multiplied.
    if (c.logit <= 0.0f) {
      c.logit *= repeat_penalty;
    } else {
      c.logit /= repeat_penalty;
    }
    c.logit -= static_cast<float>(count) * frequency_penalty + presence_penalty;
  };
  if (cands.by_id) {
    for (const auto& [id, count] : counts) {
      if (id >= 0 && static_cast<size_t>(id) < cands.size()) penalise(cands.data[static_cast<size_t>(id)], count);
    }
  } else {
    for (auto& c : cands.data) {
      auto it = counts.find(c.id);
      if (it != counts.end()) penalise(c, it->second);
    }
  }
  cands.sorted = false;
}

void apply_top_k(CandidateSet& cands, int32_t k) {
  if (k <= 0 || static_cast<size_t>(k) >= cands.size()) return;
  const size_t n = static_cast<size_t>(k);
  if (!cands.sorted) sort_prefix(cands, n);
  cands.data.resize(n);
  cands.sorted = true;
  cands.by_id = false;
}

void apply_top_p(CandidateSet& cands, float p, size_t min_keep) {
  if (p >= 1.0f || cands.size() <= 1) return;
  const double m = static_cast<double>(max_logit(cands));
  const bool all_masked = m == -std::numeric_limits<double>::infinity();
  auto weight = [&](const TokenLogit& c) { return all_masked ? 1.0 : std::exp(static_cast<double>(c.logit) - m); };
  double total = 0.0;
  for (const auto& c : cands.data) total += weight(c);
  const double target = static_cast<double>(p) * total;
  const size_t n = cands.size();
  auto first = cands.data.begin();
  size_t bound = n;  // the nucleus lies within the best `bound` candidates
  if (!cands.sorted) {
    // Quickselect on probability mass: halve [lo, hi) with nth_element until the range where the
    // nucleus ends is small. Invariants: [0, lo) beats [lo, n), [0, hi) beats [hi, n),
    // acc = mass of [0, lo) < target <= mass of [0, hi). Expected O(n) work even when the nucleus
    // holds thousands of a 150k vocabulary's tokens, and the tail is never sorted.
    size_t lo = 0;
    size_t hi = n;
    double acc = 0.0;
    while (hi - lo > kTopPSortThreshold) {
      const size_t mid = lo + (hi - lo) / 2;
      std::nth_element(first + static_cast<std::ptrdiff_t>(lo), first + static_cast<std::ptrdiff_t>(mid),
                       first + static_cast<std::ptrdiff_t>(hi), better);
      double mass = 0.0;
      for (size_t i = lo; i <= mid; ++i) mass += weight(cands.data[i]);
      if (acc + mass >= target) {
        hi = mid + 1;
      } else {
        acc += mass;
        lo = mid + 1;
      }
    }
    bound = std::max(hi, std::min(min_keep, n));
    if (bound == hi) {
      std::sort(first, first + static_cast<std::ptrdiff_t>(hi), better);  // already the best hi
    } else {
      sort_prefix(cands, bound);
    }
  }
  // The cut itself is decided by one sequential sum in the canonical (sorted) order, so it does
  // not depend on how nth_element happened to group the candidates.
  double cum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    if (i == bound) std::sort(first + static_cast<std::ptrdiff_t>(bound), cands.data.end(), better);  // rounding: rare
    cum += weight(cands.data[i]);
    if (cum >= target && i + 1 >= min_keep) {
      cands.data.resize(i + 1);
      break;
    }
  }
  cands.sorted = true;
  cands.by_id = false;
}

void apply_min_p(CandidateSet& cands, float p, size_t min_keep) {
  if (p <= 0.0f || cands.size() <= 1) return;
  const float m = max_logit(cands);
  if (m == -std::numeric_limits<float>::infinity()) return;
  // p_i >= p * p_max  <=>  l_i >= l_max + log(p) (same test as llama.cpp, no softmax needed).
  const float threshold = m + std::log(p);
  size_t kept = 0;
  for (const auto& c : cands.data) kept += c.logit >= threshold ? 1 : 0;
  if (kept >= min_keep) {
    // remove_if compacts in place and keeps the survivors' relative order, so `sorted` stays valid.
    cands.data.erase(std::remove_if(cands.data.begin(), cands.data.end(),
                                    [&](const TokenLogit& c) { return c.logit < threshold; }),
                     cands.data.end());
  } else {
    if (!cands.sorted) sort_prefix(cands, min_keep);
    cands.data.resize(std::min(min_keep, cands.size()));
    cands.sorted = true;
  }
  cands.by_id = false;
}

void apply_temperature(CandidateSet& cands, float t) {
  if (cands.data.empty()) return;
  if (t <= 0.0f) {
    auto best = std::min_element(cands.data.begin(), cands.data.end(), better);
    const TokenLogit keep = *best;
    cands.data.assign(1, keep);
    cands.sorted = true;
    cands.by_id = false;
    return;
  }
  if (t == 1.0f) return;
  for (auto& c : cands.data) c.logit /= t;
}

std::vector<double> candidate_probs(const CandidateSet& cands) {
  double total = 0.0;
  std::vector<double> w = weights(cands, &total);
  for (double& x : w) x /= total;
  return w;
}

int32_t pick_greedy(const CandidateSet& cands) {
  require(cands.size() > 0, ErrorCode::kInvalidArgument, "sampler: no candidates left to pick from");
  if (cands.sorted) return cands.data.front().id;
  return std::min_element(cands.data.begin(), cands.data.end(), better)->id;
}

double uniform01(std::mt19937& rng) {
  // 27 + 26 bits -> a 53-bit integer scaled by 2^-53 (the classic genrand_res53 construction).
  const uint32_t a = static_cast<uint32_t>(rng()) >> 5;
  const uint32_t b = static_cast<uint32_t>(rng()) >> 6;
  return (static_cast<double>(a) * 67108864.0 + static_cast<double>(b)) * (1.0 / 9007199254740992.0);
}

int32_t pick_random(const CandidateSet& cands, std::mt19937& rng) {
  require(cands.size() > 0, ErrorCode::kInvalidArgument, "sampler: no candidates left to pick from");
  const double m = static_cast<double>(max_logit(cands));
  const bool all_masked = m == -std::numeric_limits<double>::infinity();
  auto weight = [&](const TokenLogit& c) { return all_masked ? 1.0 : std::exp(static_cast<double>(c.logit) - m); };
  // Two passes recomputing exp instead of a weight buffer: no allocation per token, and the
  // second pass usually stops early (sorted candidates put the mass first).
  double total = 0.0;
  for (const auto& c : cands.data) total += weight(c);
  const double r = uniform01(rng) * total;
  double cum = 0.0;
  size_t last_nonzero = 0;
  for (size_t i = 0; i < cands.size(); ++i) {
    const double w = weight(cands.data[i]);
    if (w <= 0.0) continue;
    cum += w;
    last_nonzero = i;
    if (r < cum) return cands.data[i].id;
  }
  return cands.data[last_nonzero].id;  // r landed in the rounding gap at the very top
}

Sampler::Sampler(const SamplerParams& params, int32_t n_vocab) : params_(params), n_vocab_(n_vocab) {
  require(n_vocab > 0, ErrorCode::kInvalidArgument, "sampler: n_vocab must be positive, got " + std::to_string(n_vocab));
  require_finite(params.temperature, "temperature");
  require_finite(params.top_p, "top_p");
  require_finite(params.min_p, "min_p");
  require_finite(params.repeat_penalty, "repeat_penalty");
  require_finite(params.frequency_penalty, "frequency_penalty");
  require_finite(params.presence_penalty, "presence_penalty");
  require(params.top_p >= 0.0f, ErrorCode::kInvalidArgument,
          "sampler: top_p must be in [0, 1], got " + std::to_string(params.top_p));
  require(params.min_p >= 0.0f && params.min_p <= 1.0f, ErrorCode::kInvalidArgument,
          "sampler: min_p must be in [0, 1], got " + std::to_string(params.min_p));
  require(params.repeat_penalty > 0.0f, ErrorCode::kInvalidArgument,
          "sampler: repeat_penalty must be > 0, got " + std::to_string(params.repeat_penalty));
  require(params.penalty_last_n >= -1, ErrorCode::kInvalidArgument,
          "sampler: penalty_last_n must be >= -1, got " + std::to_string(params.penalty_last_n));
  for (const auto& [id, b] : params.logit_bias) {
    require(id >= 0 && id < n_vocab, ErrorCode::kInvalidArgument,
            "sampler: logit bias token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                std::to_string(n_vocab) + ")");
    require(!std::isnan(b), ErrorCode::kInvalidArgument, "sampler: logit bias of token " + std::to_string(id) + " is NaN");
  }
  for (size_t i = 0; i < params.order.size(); ++i) {
    for (size_t j = i + 1; j < params.order.size(); ++j) {
      require(params.order[i] != params.order[j], ErrorCode::kInvalidArgument,
              std::string("sampler: stage '") + sampler_stage_name(params.order[i]) + "' listed twice in the order");
    }
  }
  reset();
}

void Sampler::reset() {
  rng_.seed(static_cast<std::mt19937::result_type>(params_.seed ^ (params_.seed >> 32)));
  refusal_rate_ = 0.0;
  constrained_steps_ = 0;
  window_.clear();
  counts_.clear();
}

void Sampler::accept(int32_t id) {
  if (params_.penalty_last_n == 0) return;
  window_.push_back(id);
  ++counts_[id];
  if (params_.penalty_last_n > 0 && window_.size() > static_cast<size_t>(params_.penalty_last_n)) {
    const int32_t old = window_.front();
    window_.pop_front();
    auto it = counts_.find(old);
    if (--it->second == 0) counts_.erase(it);
  }
}

int32_t Sampler::sample(const float* logits, std::span<const int32_t> excluded, TokenConstraint* constraint) {
  require(logits != nullptr, ErrorCode::kInvalidArgument, "sampler: logits pointer is null");
  last_needed_mask_ = false;
  if (constraint == nullptr) return sample_chain(logits, excluded, nullptr);
  // Check-first pays a whole-vocabulary chain that is wasted when the pick is refused. While most
  // picks are refused (a model that does not follow the format yet), build the mask first
  // instead; every kProbeEvery-th step still checks first, to notice when the model starts
  // following the format.
  const bool mask_first = refusal_rate_ > 0.5 && ++constrained_steps_ % kProbeEvery != 0;
  if (!mask_first) {
    const int32_t id = sample_chain(logits, excluded, nullptr);
    const bool ok = constraint->allows(id);
    refusal_rate_ = 0.75 * refusal_rate_ + (ok ? 0.0 : 0.25);
    if (ok) return id;
  }
  last_needed_mask_ = true;
  if (allowed_.size() != n_vocab_) allowed_.resize(n_vocab_);
  constraint->fill_allowed(allowed_);
  for (const int32_t e : excluded) {
    if (e >= 0 && e < n_vocab_) allowed_.reset(e);
  }
  require(!allowed_.none(), ErrorCode::kInvalidArgument,
          "sampler: the output constraint (grammar) allows no token here");
  return sample_chain(logits, excluded, &allowed_);
}

int32_t Sampler::sample_chain(const float* logits, std::span<const int32_t> excluded, const TokenBitset* allowed) {
  const bool greedy = params_.temperature <= 0.0f;
  const bool penalties_active =
      !counts_.empty() && (params_.repeat_penalty != 1.0f || params_.frequency_penalty != 0.0f ||
                           params_.presence_penalty != 0.0f);
  const auto is_excluded = [&](int32_t id) {
    return std::find(excluded.begin(), excluded.end(), id) != excluded.end();
  };
  // What every "nothing allowed to pick" case returns: the lowest id not excluded (and allowed).
  const auto lowest_allowed = [&] {
    int32_t id = 0;
    while (id < n_vocab_ - 1 && (is_excluded(id) || (allowed != nullptr && !allowed->test(id)))) ++id;
    return id;
  };
  if (greedy && params_.logit_bias.empty() && !penalties_active) {
    // Plain argmax over the raw row: no candidate copy (the common case of greedy decoding).
    // Excluded ids are checked only where a token would become the best so far. With a mask,
    // only its ids are looked at (excluded ones were removed from it).
    int32_t best = -1;
    const auto consider = [&](int32_t i) {
      if (!std::isnan(logits[i]) && (best < 0 || logits[i] > logits[best])) best = i;
    };
    if (allowed != nullptr) {
      allowed->for_each(consider);
    } else {
      for (int32_t i = 0; i < n_vocab_; ++i) {
        if (!std::isnan(logits[i]) && (best < 0 || logits[i] > logits[best]) && !is_excluded(i)) best = i;
      }
    }
    // Nothing allowed is finite: the chain's answer (all "never pick" -> lowest allowed id).
    if (best < 0 || logits[best] == -INFINITY) best = lowest_allowed();
    cands_.data.assign(1, TokenLogit{best, logits[best]});
    cands_.sorted = true;
    cands_.by_id = false;
    return best;
  }
  if (allowed != nullptr) {
    // Only the allowed ids become candidates (a grammar usually allows a small part of the
    // vocabulary); bias and penalties then take their by-lookup paths.
    cands_.data.clear();
    allowed->for_each([&](int32_t i) {
      float l = logits[i];
      if (std::isnan(l)) l = -std::numeric_limits<float>::infinity();
      if (l == std::numeric_limits<float>::infinity()) l = std::numeric_limits<float>::max();
      cands_.data.push_back({i, l});
    });
    cands_.sorted = false;
    cands_.by_id = false;
    apply_logit_bias(cands_, params_.logit_bias);
  } else {
    cands_.assign(logits, n_vocab_);
    apply_logit_bias(cands_, params_.logit_bias);
    for (const int32_t id : excluded) {  // cands_ is still by id: assign, then the bias in place
      if (id >= 0 && id < n_vocab_) cands_.data[static_cast<size_t>(id)].logit = -INFINITY;
    }
  }
  for (SamplerStage stage : params_.order) {
    switch (stage) {
      case SamplerStage::kPenalties:
        apply_penalties(cands_, counts_, params_.repeat_penalty, params_.frequency_penalty, params_.presence_penalty);
        break;
      // Truncation stages always keep the best candidate, so under greedy decoding they cannot
      // change the result: skip them (saves sorting 150k logits per token).
      case SamplerStage::kTopK:
        if (!greedy) apply_top_k(cands_, params_.top_k);
        break;
      case SamplerStage::kTopP:
        if (!greedy) apply_top_p(cands_, params_.top_p);
        break;
      case SamplerStage::kMinP:
        if (!greedy) apply_min_p(cands_, params_.min_p);
        break;
      case SamplerStage::kTemperature:
        if (!greedy) apply_temperature(cands_, params_.temperature);
        break;
    }
  }
  const int32_t id = greedy ? pick_greedy(cands_) : pick_random(cands_, rng_);
  // Only when every allowed token is -inf or NaN can an excluded one come out of the chain (its
  // "nothing to pick" fallbacks take any candidate): never return it.
  return is_excluded(id) ? lowest_allowed() : id;
}

}  // namespace edgellm
