// What a caller hands the InferenceService, and what it gets back: the C++ shapes behind the C
// ABI's edgellm_request_params / edgellm_token_event / edgellm_result.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/json.h"
#include "engine/sampler.h"
#include "generation/generate.h"

namespace edgellm {

using RequestId = uint64_t;  // 0 is never a valid id

// Interactive requests are admitted before background ones; FIFO within a priority.
enum class Priority { kInteractive = 0, kBackground = 1 };

struct TokenEvent {
  RequestId id = 0;
  int32_t token = -1;     // the sampled id; -1 for text released at the end (held-back bytes)
  std::string_view text;  // text that became final with it (may be empty); valid during the call
  int32_t index = 0;      // 0-based count of events before this one
  float probability = -1.0f;  // ServiceRequest::generation.token_probability: the model's probability of
                              // `token` (StepOutput::probability); -1 otherwise
  double decode_ms = 0;       // first sampled token -> this event's (RequestStats::decode_ms so far)
};

// Per-request numbers (never the request's text). Times in milliseconds from submit().
struct RequestStats {
  double queue_ms = 0;        // submit -> admitted (tokenized, KV reserved, sequence assigned)
  double ttft_ms = 0;         // submit -> first token sampled (0 when none was)
  double prefill_ms = 0;      // admitted -> prompt prefilled
  double decode_ms = 0;       // first -> last sampled token
  double total_ms = 0;        // submit -> final callback
  int32_t prompt_tokens = 0;
  int32_t cached_tokens = 0;      // of prompt_tokens, taken from the KV prefix cache (not prefilled)
  int32_t completion_tokens = 0;  // sampled tokens (an end-of-generation token not counted)
  double prefill_tokens_per_second = 0;  // (prompt_tokens - cached_tokens) / prefill time
  double decode_tokens_per_second = 0;  // (completion_tokens - 1) / decode time
  int32_t kv_blocks = 0;      // KV blocks the request held when it ended
  int32_t sanitized_chars = 0;  // characters of the input the kStrip input policy replaced or removed
  size_t peak_rss_bytes = 0;  // process VmHWM when it ended
  // Speculative decoding (ServiceRequest::generation.speculation, docs/speculative-decoding.md "In the
  // service"): the decode phase's counters (forwards, tokens sampled from them, drafted and
  // accepted tokens; tokens_per_forward() is 1 without speculation) and, when the request asked
  // for speculation and the service turned it off, why ("" otherwise).
  SpeculationStats speculation;
  std::string speculation_off_reason;
};

// How the Runtime's router treats a request (runtime/router.h, docs/router.md). The
// InferenceService itself ignores it.
enum class RouteMode {
  kOff,    // no router: the local model answers, tokens stream as they come
  kAuto,   // the local answer's confidence decides (local / low-confidence / cloud); the chosen
           // answer arrives as one text event at the end
  kLocal,  // the local model answers and streams; the cloud only when the local run fails
           // (out of memory, degraded, context full) and the router allows it
  kCloud,  // the cloud answers (a retry of a low-confidence answer); the local model when the
           // cloud cannot
};

// What the router did with a request (RequestResult::route); empty route when not routed.
struct RouteInfo {
  std::string route;   // "", "local", "local-low-confidence" or "cloud"
  std::string reason;  // why, in words ("low confidence; answered by the cloud")
  double score = -1;   // the local answer's confidence (router_policy.h); -1 without one
  double mean_p = -1;
  double min_p = -1;
  std::string tier;    // the cloud tier that answered ("small", "large"), "" when local
  double latency_ms = 0;         // submit -> the routed answer
  bool retry_in_cloud = false;   // low confidence: the same request with RouteMode::kCloud may help
};

struct RequestResult {
  RequestId id = 0;
  FinishReason finish_reason = FinishReason::kError;
  ErrorCode error_code = ErrorCode::kInternal;  // meaningful when finish_reason == kError
  std::string error;        // message when finish_reason == kError
  std::string text;         // every byte the token events delivered, in order
  std::string stop_string;  // the stop string that ended it, if any
  RequestStats stats;
  std::string session;      // with ServiceRequest::session_out: the session bytes ("" on error)
  std::string model_version;  // set by ModelHost: the model version that served the request
                              // ("cloud:<model>" when the router's cloud answered)
  RouteInfo route;            // set by the Runtime's router
  // Set by the Runtime: ServiceRequest::session_id's KV was kept under that id;
  // ServiceRequest::session_save_path was written (ok) or why not (code, message).
  bool session_stored = false;
  bool session_save_failed = false;
  ErrorCode session_save_code = ErrorCode::kIo;
  std::string session_save_error;
};

// GenerationParams as a ServiceRequest starts with: generate()'s, but at most 256 tokens.
inline GenerationParams service_generation_defaults() {
  GenerationParams g;
  g.max_tokens = 256;
  return g;
}

struct ServiceRequest {
  // The input: exactly one of prompt (raw text), messages (a JSON array of {role, content} with
  // roles system / user / assistant / tool, rendered with the model's chat template) or tokens.
  std::string prompt;
  Json messages;  // null when unused
  // With messages: the chat template's `tools` variable (OpenAI's "tools" array, as transformers'
  // apply_chat_template(tools=...) gets it); null: none (templates render no tool section).
  Json tools;
  std::vector<int32_t> tokens;
  bool add_special = true;     // raw prompt: BOS (and EOS) as the vocabulary asks
  bool parse_special = false;  // raw prompt: "<|im_start|>" in the text becomes the control token

  SamplerParams sampling;
  // How the sequence is generated, as generate() takes it (generation/generate.h): max_tokens
  // (< 0: until a stop or the context is full; 0: prefill only), stop strings, ignore_eog,
  // token_probability (fill TokenEvent::probability: a softmax per token), context_shift / n_keep
  // (endless streams, docs/context-shift.md), penalize_prompt, grammar (compiled for this model's
  // vocabulary, grammar::GrammarCompiler; checked at submit; null: unconstrained) and speculation.
  // The service's defaults differ from generate()'s in max_tokens only (256). It runs every field
  // as generate() does, with three exceptions checked at submit (kInvalidArgument): seq_id must be
  // 0 (the service picks the sequence), truncate_prompt must be false (a prompt that does not fit
  // is refused: kContextFull), and speculation.mode kDraft is refused (the service owns no draft
  // model; draft_model is ignored). With a grammar, json_schema, json_object or tools the service
  // turns speculation off for the request and says so in RequestStats::speculation_off_reason
  // (docs/speculative-decoding.md "In the service").
  GenerationParams generation = service_generation_defaults();
  // Constrained output given as text, which is what the faces carry (C ABI, NAPI, HTTP): compiled
  // at submit into generation.grammar with the vocabulary of the model version that serves the
  // request (service/request_grammar.h; an LRU keeps compiled grammars, so a repeated schema costs
  // a lookup). At most one of the three, and not with generation.grammar; errors are
  // kInvalidArgument naming the grammar's line and column or the schema's keyword. grammar_gbnf:
  // llama.cpp's GBNF, rule "root" first matched. json_schema: a JSON Schema as JSON text
  // (docs/structured-output.md lists what is supported). json_object: any JSON object (OpenAI's
  // response_format {"type": "json_object"}).
  std::string grammar_gbnf;
  std::string json_schema;
  bool json_object = false;
  int64_t deadline_ms = 15000;  // from submit(), queue wait included; <= 0: none
  Priority priority = Priority::kInteractive;

  // Sessions (docs/sessions.md). session_in: session bytes to continue from (a previous
  // RequestResult::session, a file written by Context/ChatSession): the saved positions that
  // start this request's prompt are restored instead of prefilled (at most prompt - 1), so a
  // conversation moves between services, processes and devices running the same model file and
  // KV type. Checked at submit: Error kInvalidFile (truncated, corrupted) or kInvalidArgument
  // (another model, KV type or shape). session_out: RequestResult::session receives this
  // request's KV (prompt + answer) as session bytes when it ends without an error.
  std::string session_in;
  bool session_out = false;
  // Runtime (runtime/runtime.h), not the service. session_id: continue from the session the
  // runtime's session store keeps under this id (none: a new one) and keep this request's KV
  // there when it ends; ids are 1-64 characters of [A-Za-z0-9_.-]. session_load_path: a
  // session file to continue from, read and checked at submit. session_save_path: where this
  // request's KV is written when it ends without an error (FILE.tmp, then renamed;
  // RequestResult::session_save_* say whether it was).
  std::string session_id;
  std::string session_load_path;
  std::string session_save_path;
  RouteMode route = RouteMode::kOff;  // the Runtime's router (runtime/router.h)

  // Both run on the scheduler thread, never under a lock of the service; they must not block
  // for long (they hold up every running request). on_token returning false cancels the
  // request. on_finish runs exactly once per accepted request, after its last on_token.
  // on_finish gets the result by non-const reference so the layers in between (model host,
  // degradation, runtime) fill in their fields without copying it; take it as const& or move
  // out of it.
  std::function<bool(const TokenEvent&)> on_token;
  std::function<void(RequestResult&)> on_finish;
};

}  // namespace edgellm
