// The generation loop of one sequence on the calling thread: prefill the prompt in n_batch
// chunks, then sample and decode one token at a time, streaming text through a callback, until a
// stop condition. A thin driver over SequenceGenerator (sequence_generator.h), which holds the
// per-sequence state and the finish rules; the service's scheduler drives the same state machine
// for many sequences in one batch.
//
//   prompt ids -> Context::decode (chunks) -> logits -> Sampler -> id -> StreamingDecoder (whole
//   UTF-8 only) -> StopStringFilter (holds back a possible stop-string start) -> on_token
//
// Finish reasons: stop (end-of-generation token or a stop string), length (max_tokens reached or
// the context is full), cancelled (the flag was set or on_token returned false), timeout (the
// service's deadline passed; generate() itself has none), error (the forward pass or a callback
// failed after generation started; the partial output is kept).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace edgellm {

class Context;
class Drafter;
class Model;
class Sampler;
class Tokenizer;
namespace grammar {
class CompiledGrammar;
}

enum class FinishReason { kStop, kLength, kCancelled, kTimeout, kError };

// Speculative decoding (docs/speculative-decoding.md): after each sampled token a drafter guesses
// up to draft_max tokens that follow; one forward pass over the token and its guesses gives the
// logits of every position, the sampler runs on them in order exactly as in plain decoding, and
// guesses stop counting at the first one it did not pick (their KV is truncated away). The output
// is the output of plain decoding, token for token, greedy or sampled at the same seed.
// kNgram drafts by prompt lookup (ngram_drafter.h), kDraft with a draft model
// (draft_model_drafter.h: SpeculationParams::draft_model, greedy drafts).
enum class SpeculationMode { kOff, kNgram, kDraft };

// "off", "ngram", "draft" (llama.cpp's --spec names); parse is the inverse, throwing kInvalidArgument.
const char* speculation_mode_name(SpeculationMode mode);
SpeculationMode speculation_mode_from_name(const std::string& name);

struct SpeculationParams {
  SpeculationMode mode = SpeculationMode::kOff;
  int32_t draft_max = 8;       // k: tokens drafted per verify forward, 1..kMaxDraft (--draft-max); fewer
                               // near max_tokens, n_ctx, n_batch - 1 or a nearly full KV pool
  int32_t draft_min = 0;       // fewer drafts than this are not verified (llama-server's speculative.n_min)
  int32_t ngram_min = 2;       // kNgram: suffix lengths looked up (ngram_drafter.h)
  int32_t ngram_max = 4;
  int32_t ngram_history = 4096;  // kNgram: tokens kept for lookup (bounds its memory)
  // kDraft: the loaded draft model (same vocabulary as the target, checked: kInvalidArgument
  // otherwise); generate() gives it its own context of the target's n_ctx for the call. Not
  // owned; must outlive the call.
  const Model* draft_model = nullptr;
  // Back off when drafts are rejected (generation/draft_schedule.h: the draft length follows the
  // acceptance, down to pauses); false: always up to draft_max (benchmarks of a fixed k).
  bool adaptive = true;
  static constexpr int32_t kMaxDraft = 8;
};

// Counters of one generation's decode phase (forwards after the prefill).
struct SpeculationStats {
  int32_t drafted = 0;          // draft tokens put into verify forwards
  int32_t accepted = 0;         // of them, the ones the sampler picked (their forward's work kept)
  int32_t forwards = 0;         // decode-phase forward passes (verify or one-token)
  int32_t verify_forwards = 0;  // of them, the ones that carried drafts
  int32_t forward_tokens = 0;   // tokens sampled from decode-phase forwards' logits

  double acceptance_rate() const { return drafted > 0 ? static_cast<double>(accepted) / drafted : 0.0; }
  // 1 without speculation; up to draft_max + 1.
  double tokens_per_forward() const { return forwards > 0 ? static_cast<double>(forward_tokens) / forwards : 0.0; }
};

// The drafter generate() uses for sp.mode (null when off): an NgramDrafter with sp's n-gram
// sizes, or a DraftModelDrafter on sp.draft_model beside `ctx`. For a caller that keeps a drafter
// across calls (GenerationCallbacks::drafter: a chat feeds it the whole conversation). Throws
// Error(kInvalidArgument) for kDraft without a draft model or with another vocabulary.
std::unique_ptr<Drafter> make_drafter(const SpeculationParams& sp, const Context& ctx);

// "stop", "length", "cancelled", "timeout", "error" (the names the JSON output and the C API use).
const char* finish_reason_name(FinishReason reason);

struct GenerationParams {
  int32_t seq_id = 0;                // sequence of the Context to extend (continues after its cached positions)
  int32_t max_tokens = -1;           // tokens to sample; < 0: until a stop or the context is full
  std::vector<std::string> stop;     // stop strings (need a tokenizer); never part of the output text
  bool ignore_eog = false;           // never sample end-of-generation tokens (llama.cpp's ignore_eos;
                                     // without a tokenizer no token is end-of-generation)
  bool truncate_prompt = false;      // drop the oldest prompt tokens (keeping a leading BOS) instead of failing
  bool penalize_prompt = true;       // prompt tokens enter the sampler's penalty window (llama.cpp does)
  bool token_probability = false;    // SequenceGenerator: fill StepOutput::probability (one softmax
                                     // over n_vocab per token; the server's router uses it)
  // Endless streams (docs/context-shift.md): when the sequence is full (n_ctx positions) and a
  // sampled token needs a position, drop the older half of the positions after the first n_keep
  // (Context::seq_shift) and go on, instead of finishing with "length".
  bool context_shift = false;
  // Positions at the start of the sequence a shift never drops: the attention sinks and the
  // system prompt. < 0: the whole prompt (with the positions the sequence held before it).
  // Must leave at least 2 positions of n_ctx for the window.
  int32_t n_keep = 4;
  // Constrained output (docs/structured-output.md): the text must follow this grammar (GBNF, a
  // JSON Schema, tool calls), compiled for the model's vocabulary (grammar::GrammarCompiler).
  // End-of-generation is allowed only where the grammar may end, and generation stops (reason
  // "stop") as soon as nothing else can follow. Shared, immutable: one compiled grammar serves
  // any number of concurrent requests. Null: unconstrained, at no cost.
  std::shared_ptr<const grammar::CompiledGrammar> grammar;
  // Speculative decoding (off by default). Works with every other option (stop strings, grammar,
  // penalties, sampling, context shift): it changes how many forward passes run, not the tokens.
  SpeculationParams speculation;
};

struct GenerationTimings {
  double load_seconds = 0;          // model + context creation; filled by the caller
  int32_t prompt_tokens = 0;        // tokens prefilled (after any truncation)
  double prefill_seconds = 0;       // wall time of the prompt's forward passes
  double ttft_seconds = 0;          // generate() start to the first sampled token (prefill + 1 sample)
  int32_t decode_tokens = 0;        // tokens sampled after the first one (= decode forward passes
                                    // without speculation; GenerationResult::speculation otherwise)
  double decode_seconds = 0;        // wall time from the first to the last sampled token
  double grammar_seconds = 0;       // GenerationParams::grammar: time spent checking tokens and building masks
  int32_t grammar_masks = 0;        // sampled tokens the grammar refused (a full mask was built for each)

  double prefill_tokens_per_second() const { return prefill_seconds > 0 ? prompt_tokens / prefill_seconds : 0.0; }
  double decode_tokens_per_second() const { return decode_seconds > 0 ? decode_tokens / decode_seconds : 0.0; }
};

struct GenerationResult {
  std::vector<int32_t> tokens;     // sampled ids in order; an end-of-generation token is not included
  std::string text;                // exactly what on_token delivered (no stop string, no EOG text)
  FinishReason finish_reason = FinishReason::kError;
  std::string stop_string;         // the stop string that ended generation, if any
  int32_t eog_token = -1;          // the end-of-generation token that ended generation, if any
  int32_t prompt_tokens_dropped = 0;  // oldest prompt tokens removed by truncate_prompt
  int32_t context_shifts = 0;      // context shifts done (GenerationParams::context_shift)
  std::string error;               // message when finish_reason == kError
  GenerationTimings timings;
  SpeculationStats speculation;    // filled by generate() (all forwards, speculating or not)
};

struct GenerationCallbacks {
  // Called once per sampled token (except an EOG token) with the text that became final with it;
  // the text may be empty (incomplete UTF-8 or a possible stop-string start is held back) or
  // contain earlier tokens' text. Text released when generation ends comes with id -1. Return
  // false to cancel (ignored for the token that ends the generation anyway: stop or length).
  std::function<bool(int32_t id, std::string_view text)> on_token;
  // Called with the raw model logits (n_vocab floats) of every position that is sampled, before
  // sampling (so also for the step that samples an EOG token).
  std::function<void(const float* logits, int32_t n_vocab)> on_logits;
  // Polled before every forward pass; set from any thread to cancel.
  const std::atomic<bool>* cancel = nullptr;
  // Speculative decoding with the caller's drafter (tests replay known outputs; a draft model
  // would come this way) instead of the one params.speculation.mode names; used with
  // params.speculation.draft_max, whatever the mode. Must outlive the call.
  Drafter* drafter = nullptr;
};

// Runs one generation on `ctx`. `tokenizer` may be null: then there is no text, no EOG detection
// and no stop strings (ids only). The sampler is used as is (its RNG state and penalty window
// carry over; call reset() for a fresh start).
// Throws Error(kInvalidArgument) for an empty prompt, a token id outside the vocabulary, stop
// strings without a tokenizer or a sampler whose vocabulary differs from the model's, and
// Error(kContextFull) when the prompt does not fit the context and truncate_prompt is false;
// also kInvalidArgument for speculation sizes out of range, kDraft without a draft model and a
// draft model whose vocabulary differs from the target's.
// Everything that fails after that is reported through finish_reason == kError instead.
GenerationResult generate(Context& ctx, Sampler& sampler, const Tokenizer* tokenizer,
                          const std::vector<int32_t>& prompt, const GenerationParams& params,
                          const GenerationCallbacks& callbacks = {});

}  // namespace edgellm
