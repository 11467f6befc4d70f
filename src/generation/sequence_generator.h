// The generation of one sequence as a step machine: the driver (generate(), the service's
// scheduler) runs the forward passes, the SequenceGenerator owns everything between two of them —
// the validated prompt and how much of it is prefilled, sampling, end-of-generation detection,
// the streaming detokenizer, the stop-string filter, the finish logic and the result.
//
//   SequenceGenerator g(sampler, tokenizer, n_vocab, n_ctx, pos0, prompt, params);
//   while (!g.prefill_done()) { decode g.pending_prompt()[0, n) at g.prefill_pos(); g.prefill_advanced(n); }
//   for (;;) {
//     StepOutput out = g.step(logits of the last decoded position);   // one sampled token
//     deliver out.token / out.text, then out.tail (with id -1)
//     if (out.finished) break;
//     if (g.needs_shift()) { ShiftPlan p = g.shift_plan(); ctx.seq_shift(seq, p.n_keep, p.n_discard); g.shifted(p); }
//     decode g.next_token() at g.next_pos()
//   }
//   a reason from outside (cancel, deadline, KV exhausted, forward error): g.finish(reason)
//
// Nothing here touches the Context, so one scheduler step can advance many generators from one
// batched forward pass; a generator is owned by one thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "generation/generate.h"
#include "generation/stop_strings.h"
#include "tokenizer/streaming_decoder.h"

namespace edgellm {

class Sampler;
class Tokenizer;
namespace grammar {
class GrammarMatcher;
}

// What one step (or an outside finish) produced for the stream.
struct StepOutput {
  int32_t token = -1;    // the sampled id to stream with `text`; -1 when none (end-of-generation token)
  std::string text;      // text that became final with `token` (may be empty: held back)
  std::string tail;      // text released because generation ended (streamed with id -1); may be empty
  bool finished = false;
  FinishReason reason = FinishReason::kStop;  // valid when finished
  // With GenerationParams::token_probability: the probability the model gave `token`, i.e.
  // softmax of the raw logits (temperature 1, before penalties, bias and truncation) at that id;
  // a confidence signal independent of the sampler settings. -1 otherwise or without a token.
  float probability = -1.0f;
};

// A context shift: drop positions [n_keep, n_keep + n_discard) of the sequence.
struct ShiftPlan {
  int32_t n_keep = 0;
  int32_t n_discard = 0;
};

class SequenceGenerator {
 public:
  // Validates and keeps `prompt` (to be decoded at positions pos0, pos0 + 1, ... of a sequence
  // holding pos0 positions), truncating it when params.truncate_prompt allows (answer_room()).
  // Throws Error(kInvalidArgument) for an empty prompt, an id outside the vocabulary, stop strings
  // without a tokenizer, a sampler of another vocabulary, or a grammar compiled for another
  // vocabulary (or without a tokenizer); Error(kContextFull) when the prompt
  // does not fit n_ctx - pos0 positions and may not be truncated. The prompt tokens enter the
  // sampler's penalty window here (params.penalize_prompt). `sampler` and `tokenizer` (may be
  // null: ids only) must outlive the generator.
  SequenceGenerator(Sampler& sampler, const Tokenizer* tokenizer, int32_t n_vocab, int32_t n_ctx, int32_t pos0,
                    const std::vector<int32_t>& prompt, const GenerationParams& params);
  ~SequenceGenerator();
  SequenceGenerator(const SequenceGenerator&) = delete;
  SequenceGenerator& operator=(const SequenceGenerator&) = delete;

  // ---- prefill
  // The prompt (after truncation) and the part of it not yet decoded.
  const std::vector<int32_t>& prompt() const { return prompt_; }
  int32_t prompt_remaining() const { return static_cast<int32_t>(prompt_.size()) - n_prefilled_; }
  const int32_t* pending_prompt() const { return prompt_.data() + n_prefilled_; }
  int32_t prefill_pos() const { return pos0_ + n_prefilled_; }  // position of pending_prompt()[0]
  bool prefill_done() const { return n_prefilled_ == static_cast<int32_t>(prompt_.size()); }
  // `n` more prompt tokens are in the KV cache. When that completes the prompt and max_tokens is 0
  // the generation is finished (length).
  void prefill_advanced(int32_t n);

  // ---- decode
  // Samples from the logits (n_vocab floats) of the last decoded position and applies every
  // finish rule: end-of-generation token (stop), stop string (stop), max_tokens (length), no
  // position left for the sampled token (length). Precondition: prefill_done() && !finished().
  StepOutput step(const float* logits);
  // The token sampled by the last step and the position to decode it at (valid after a step that
  // did not finish).
  int32_t next_token() const { return last_token_; }
  int32_t next_pos() const {
    return pos0_ + static_cast<int32_t>(prompt_.size() + result_.tokens.size()) - 1 - shifted_;
  }

  // ---- context shift (params.context_shift)
  // True when next_token() has no position left: the driver shifts the sequence first.
  bool needs_shift() const { return params_.context_shift && !finished_ && n_ctx_ > 0 && next_pos() >= n_ctx_; }
  // What to drop: the older half of the positions after n_keep (as llama.cpp's context shift).
  ShiftPlan shift_plan() const;
  // The driver dropped plan.n_discard positions: next_pos() moves back by as many.
  void shifted(const ShiftPlan& plan);

  // Ends the generation for a reason from outside. kLength and kTimeout release the text the
  // filters hold back (it is real output); kCancelled and kError do not. `error` is kept for
  // kError. A no-op returning an empty output when already finished.
  StepOutput finish(FinishReason reason, const std::string& error = {});

  bool finished() const { return finished_; }
  // With GenerationParams::grammar: where the output stands in the grammar (speculative decoding
  // checks drafts with allows() / accept_token() / rollback()); null otherwise.
  grammar::GrammarMatcher* grammar_matcher() { return matcher_.get(); }
  const GenerationResult& result() const { return result_; }
  GenerationResult take_result() { return std::move(result_); }

 private:
  std::string release_tail();
  StepOutput finished_output(FinishReason reason, std::string tail);

  Sampler& sampler_;
  const Tokenizer* tokenizer_;
  GenerationParams params_;
  int32_t n_ctx_;
  int32_t pos0_;
  std::vector<int32_t> prompt_;
  int32_t n_prefilled_ = 0;
  int32_t n_keep_ = 0;    // positions a shift keeps (params.n_keep resolved)
  int32_t shifted_ = 0;   // positions dropped by shifts so far
  StopStringFilter stops_;
  std::optional<StreamingDecoder> detok_;
  std::unique_ptr<grammar::GrammarMatcher> matcher_;
  int32_t last_token_ = -1;
  bool finished_ = false;
  GenerationResult result_;
  // Timings: construction is the start (the caller adds what came before, e.g. queue wait).
  std::chrono::steady_clock::time_point t_start_;
  std::chrono::steady_clock::time_point t_first_;
};

}  // namespace edgellm
