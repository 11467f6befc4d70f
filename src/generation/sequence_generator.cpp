#include "generation/sequence_generator.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <span>
#include <string>

#include "core/error.h"
#include "engine/sampler.h"
#include "generation/answer_room.h"
#include "grammar/grammar_matcher.h"
#include "tokenizer/tokenizer.h"

namespace edgellm {

namespace {

using Clock = std::chrono::steady_clock;

// softmax(logits)[id] in double, shifted by the maximum so no exp overflows.
float softmax_at(const float* logits, int32_t n, int32_t id) {
  float max = logits[0];
  for (int32_t i = 1; i < n; ++i) max = std::max(max, logits[i]);
  double sum = 0;
  for (int32_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i]) - max);
  return static_cast<float>(std::exp(static_cast<double>(logits[id]) - max) / sum);
}

double seconds_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// Forwards the sampler's questions to the grammar and adds up the time they take.
class TimedConstraint final : public TokenConstraint {
 public:
  TimedConstraint(grammar::GrammarMatcher& m, GenerationTimings& t) : m_(m), t_(t) {}
  bool allows(int32_t id) override {
    const Clock::time_point t0 = Clock::now();
    const bool ok = m_.allows(id);
    t_.grammar_seconds += seconds_between(t0, Clock::now());
    return ok;
  }
  void fill_allowed(TokenBitset& allowed) override {
    const Clock::time_point t0 = Clock::now();
    m_.fill_allowed(allowed);
    t_.grammar_seconds += seconds_between(t0, Clock::now());
    t_.grammar_masks++;
  }

 private:
  grammar::GrammarMatcher& m_;
  GenerationTimings& t_;
};

// Validates the prompt against the vocabulary and the free context; returns the ids to prefill
// (the prompt itself, or its truncated form when allowed).
std::vector<int32_t> checked_prompt(const std::vector<int32_t>& prompt, int32_t n_vocab, int32_t n_ctx,
                                    int32_t pos0, const Tokenizer* tokenizer, const GenerationParams& params,
                                    int32_t* dropped) {
  require(!prompt.empty(), ErrorCode::kInvalidArgument, "generate: the prompt is empty (no token ids)");
  for (size_t i = 0; i < prompt.size(); ++i) {
    if (prompt[i] < 0 || prompt[i] >= n_vocab) {
      throw Error(ErrorCode::kInvalidArgument, "generate: prompt token #" + std::to_string(i) + " has id " +
                                                   std::to_string(prompt[i]) + ", outside the vocabulary [0, " +
                                                   std::to_string(n_vocab) + ")");
    }
  }
  *dropped = 0;
  const int64_t free_positions = static_cast<int64_t>(n_ctx) - pos0;
  if (n_ctx <= 0 || static_cast<int64_t>(prompt.size()) <= free_positions) return prompt;
  const std::string what = "generate: the prompt has " + std::to_string(prompt.size()) +
                           " tokens but only " + std::to_string(std::max<int64_t>(free_positions, 0)) +
                           " of the context's " + std::to_string(n_ctx) + " positions are free";
  require(params.truncate_prompt, ErrorCode::kContextFull, what + " (raise the context size or allow truncation)");
  require(free_positions >= 2, ErrorCode::kContextFull, what + "; too few to truncate into");
  const int64_t keep = free_positions - answer_room(params.max_tokens, free_positions);
  const bool keep_bos = pos0 == 0 && tokenizer != nullptr && prompt.front() == tokenizer->bos();
  std::vector<int32_t> out;
  if (keep_bos) out.push_back(prompt.front());
  const size_t tail = static_cast<size_t>(keep) - out.size();
  out.insert(out.end(), prompt.end() - static_cast<std::ptrdiff_t>(tail), prompt.end());
  *dropped = static_cast<int32_t>(prompt.size() - out.size());
  return out;
}

}  // namespace

SequenceGenerator::SequenceGenerator(Sampler& sampler, const Tokenizer* tokenizer, int32_t n_vocab, int32_t n_ctx,
                                     int32_t pos0, const std::vector<int32_t>& prompt, const GenerationParams& params)
    : sampler_(sampler), tokenizer_(tokenizer), params_(params), n_ctx_(n_ctx), pos0_(pos0), t_start_(Clock::now()) {
  if (sampler.n_vocab() != n_vocab) {
    throw Error(ErrorCode::kInvalidArgument, "generate: the sampler was built for a vocabulary of " +
                                                 std::to_string(sampler.n_vocab()) + " tokens but the model has " +
                                                 std::to_string(n_vocab));
  }
  require(params.stop.empty() || tokenizer != nullptr, ErrorCode::kInvalidArgument,
          "generate: stop strings need a tokenizer (the model's vocabulary) to turn tokens into text");
  prompt_ = checked_prompt(prompt, n_vocab, n_ctx, pos0, tokenizer, params, &result_.prompt_tokens_dropped);
  stops_ = StopStringFilter(params.stop);  // validates the stop strings before any work
  if (params.context_shift) {
    const int64_t keep = params.n_keep < 0 ? static_cast<int64_t>(pos0) + static_cast<int64_t>(prompt_.size())
                                           : static_cast<int64_t>(params.n_keep);
    if (n_ctx <= 0 || keep > static_cast<int64_t>(n_ctx) - 2) {
      throw Error(ErrorCode::kInvalidArgument,
                  "generate: context shift keeps " + std::to_string(keep) + " positions (n_keep" +
                      (params.n_keep < 0 ? std::string(" = the whole prompt") : std::string()) +
                      ") but the context has " + std::to_string(n_ctx) + ": at least 2 must be left for the window");
    }
    n_keep_ = static_cast<int32_t>(keep);
  }
  bool text_start = false;
  if (tokenizer != nullptr) {
    // The output is the start of the text only when nothing but BOS precedes it; after a real
    // prompt the first token's leading space is part of the continuation (" They ...").
    text_start = pos0 == 0 && prompt_.size() == 1 && prompt_.front() == tokenizer->bos();
    detok_.emplace(*tokenizer, text_start);
  }
  if (params.grammar != nullptr) {
    require(tokenizer != nullptr, ErrorCode::kInvalidArgument,
            "generate: a grammar needs the model's tokenizer (to recognise end-of-generation tokens)");
    const int32_t grammar_vocab = params.grammar->vocabulary().size();
    require(grammar_vocab == n_vocab, ErrorCode::kInvalidArgument, [&] {
      return "generate: the grammar was compiled for a vocabulary of " + std::to_string(grammar_vocab) +
             " tokens but the model has " + std::to_string(n_vocab);
    });
    matcher_ = std::make_unique<grammar::GrammarMatcher>(params.grammar);
    matcher_->set_strip_leading_space(text_start && tokenizer->strips_leading_space());
  }
  if (params.penalize_prompt) {
    for (int32_t id : prompt_) sampler_.accept(id);
  }
  result_.timings.prompt_tokens = static_cast<int32_t>(prompt_.size());
}

SequenceGenerator::~SequenceGenerator() = default;

void SequenceGenerator::prefill_advanced(int32_t n) {
  if (n < 0 || n > prompt_remaining()) {
    throw Error(ErrorCode::kInternal, "SequenceGenerator: prefill advanced past the prompt");
  }
  n_prefilled_ += n;
  if (!prefill_done()) return;
  result_.timings.prefill_seconds = seconds_between(t_start_, Clock::now());
  if (params_.max_tokens == 0) {
    finished_ = true;
    result_.finish_reason = FinishReason::kLength;
  }
}

std::string SequenceGenerator::release_tail() {
  std::string tail = detok_ ? stops_.push(detok_->flush()) : std::string();
  tail += stops_.flush();
  result_.text += tail;
  return tail;
}

StepOutput SequenceGenerator::finished_output(FinishReason reason, std::string tail) {
  finished_ = true;
  result_.finish_reason = reason;
  StepOutput out;
  out.finished = true;
  out.reason = reason;
  out.tail = std::move(tail);
  return out;
}

StepOutput SequenceGenerator::step(const float* logits) {
  if (finished_ || !prefill_done()) {
    throw Error(ErrorCode::kInternal, "SequenceGenerator: step() before the prompt is prefilled or after the end");
  }
  // ignore_eog: end-of-generation tokens are never sampled (llama.cpp's ignore_eos). Passing them
  // through instead would put them into the context, where a model takes them as the end of a
  // document: small ones then repeat them, an answer of empty tokens.
  std::span<const int32_t> excluded;
  if (params_.ignore_eog && tokenizer_ != nullptr) excluded = tokenizer_->eog_ids();
  std::optional<TimedConstraint> constraint;
  if (matcher_) constraint.emplace(*matcher_, result_.timings);
  const int32_t id = sampler_.sample(logits, excluded, constraint ? &*constraint : nullptr);
  if (matcher_ && !matcher_->accept_token(id)) {
    throw Error(ErrorCode::kInternal, "SequenceGenerator: the sampler returned token " + std::to_string(id) +
                                          ", which the grammar refuses");
  }
  const float probability = params_.token_probability ? softmax_at(logits, sampler_.n_vocab(), id) : -1.0f;
  const Clock::time_point now = Clock::now();
  if (t_first_ == Clock::time_point{}) {
    t_first_ = now;
    result_.timings.ttft_seconds = seconds_between(t_start_, now);
  } else {
    result_.timings.decode_tokens++;
    result_.timings.decode_seconds = seconds_between(t_first_, now);
  }
  if (!params_.ignore_eog && tokenizer_ != nullptr && tokenizer_->is_eog(id)) {
    result_.eog_token = id;
    return finished_output(FinishReason::kStop, release_tail());
  }
  sampler_.accept(id);
  result_.tokens.push_back(id);
  last_token_ = id;

  StepOutput out;
  out.token = id;
  out.probability = probability;
  out.text = detok_ ? stops_.push(detok_->push(id)) : std::string();
  result_.text += out.text;
  if (stops_.matched()) {
    result_.stop_string = stops_.matched_stop();
    StepOutput done = finished_output(FinishReason::kStop, {});
    done.token = id;
    done.probability = probability;
    done.text = std::move(out.text);
    return done;
  }
  const bool at_max = params_.max_tokens > 0 && static_cast<int64_t>(result_.tokens.size()) >= params_.max_tokens;
  // The sampled token needs a position of its own to be decoded at (a context shift makes one).
  const bool no_room = !params_.context_shift && n_ctx_ > 0 && next_pos() >= n_ctx_;
  // The grammar is complete and nothing can extend it: the answer is whole (even where the
  // model has no end-of-generation token or ignore_eog forbids it).
  const bool grammar_done = matcher_ && matcher_->is_terminated();
  if (grammar_done) {
    StepOutput done = finished_output(FinishReason::kStop, release_tail());
    done.token = id;
    done.probability = probability;
    done.text = std::move(out.text);
    return done;
  }
  if (at_max || no_room) {
    StepOutput done = finished_output(FinishReason::kLength, release_tail());
    done.token = id;
    done.probability = probability;
    done.text = std::move(out.text);
    return done;
  }
  return out;
}

ShiftPlan SequenceGenerator::shift_plan() const {
  ShiftPlan plan;
  const int32_t length = next_pos();  // positions the sequence holds
  plan.n_keep = std::min(n_keep_, length);
  plan.n_discard = std::max<int32_t>(1, (length - plan.n_keep) / 2);
  return plan;
}

void SequenceGenerator::shifted(const ShiftPlan& plan) {
  shifted_ += plan.n_discard;
  result_.context_shifts++;
}

StepOutput SequenceGenerator::finish(FinishReason reason, const std::string& error) {
  if (finished_) return StepOutput{};
  const bool keeps_tail = reason == FinishReason::kLength || reason == FinishReason::kTimeout;
  if (reason == FinishReason::kError) result_.error = error;
  return finished_output(reason, keeps_tail ? release_tail() : std::string());
}

}  // namespace edgellm
