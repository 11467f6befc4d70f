// Every limit a request is held to, and the words its refusal uses, in one place. The
// InferenceService applies check_request at submit, so a request gets the same checks and the
// same message whichever face it came through (C ABI, NAPI, `edgellm serve`); the faces only
// translate their wire format (types, field names) into a ServiceRequest and add no range of
// their own. docs/c-api.md lists the limits.
//
// Input policy for user text (the prompt, message contents): invalid UTF-8 and control
// characters (C0 except TAB / LF / CR, DEL, C1 U+0080..U+009F) are either refused (kRefuse, the
// default: INVALID_ARGUMENT naming the field and byte) or stripped (kStrip: invalid sequences
// become U+FFFD, control characters are removed; RequestStats::sanitized_chars counts them).
// Stop strings and roles are always checked strictly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/sampler.h"
#include "generation/classify.h"
#include "service/embedding_request.h"
#include "service/request.h"

namespace edgellm {

enum class InputPolicy { kRefuse, kStrip };
const char* input_policy_name(InputPolicy p);                 // "refuse", "strip"
InputPolicy input_policy_from_name(const std::string& name);  // throws kInvalidArgument

namespace limits {
inline constexpr size_t kMaxStopStrings = 16;
inline constexpr size_t kMaxStopBytes = 256;
inline constexpr size_t kMaxMessages = 4096;
inline constexpr size_t kMaxInputTokens = size_t{1} << 24;
inline constexpr size_t kMaxLogitBias = 4096;
inline constexpr double kMaxTemperature = 100;
inline constexpr double kMaxRepeatPenalty = 100;
inline constexpr double kMaxAbsFrequencyPenalty = 2;
inline constexpr double kMaxAbsLogitBias = 100;
inline constexpr size_t kMaxEmbeddingInputs = 2048;  // texts, token arrays or documents (OpenAI's bound)
inline constexpr size_t kMaxGrammarBytes = size_t{1} << 20;  // grammar_gbnf, json_schema (1 MiB)
// classify: labels per request (each forks the prompt's KV: n_seq_max = labels + 1) and bytes
// per label (a label is an answer, not a document).
inline constexpr size_t kMaxClassifyLabels = 64;
inline constexpr size_t kMaxLabelBytes = 256;
}  // namespace limits

// Checks (and under kStrip cleans) a request for a model of n_vocab tokens: exactly one input,
// text, roles, token ids, stop strings, sampling values, max_tokens, n_keep, priority. Throws
// Error(kInvalidArgument) with the one wording for each limit. Returns the characters kStrip
// changed (0 under kRefuse).
size_t check_request(ServiceRequest& request, int32_t n_vocab, InputPolicy policy);

// The same for an embedding or rerank request: one kind of input, present, at most
// kMaxEmbeddingInputs of them, each non-empty; texts, the query and documents under the input
// policy; token ids in the vocabulary; pooling (not rank: rerank is its own task) and
// normalize values; priority. Returns the characters kStrip changed.
size_t check_embedding_request(EmbeddingRequest& request, int32_t n_vocab, InputPolicy policy);

// The same for a classify request: text non-empty under the input policy; 1..kMaxClassifyLabels
// labels, each non-empty, at most kMaxLabelBytes, distinct, and always strictly checked (valid
// UTF-8, no control character: a label is returned as given, so it is never stripped); the
// instruction under the input policy. Returns the characters kStrip changed.
size_t check_classify_request(ClassifyRequest& request, InputPolicy policy);

// A chat message's role: system, user, assistant or tool; `where` names the message
// ("messages[0]"). check_request applies it; edgellm_apply_template too.
void check_role(const std::string& role, const std::string& where);

// The tool turns of a conversation (messages as chat/tool_calls.h's normalize_chat_messages
// leaves them: every face's shape): an assistant turn's "tool_calls" is an array of
// {id, type: "function", function: {name, arguments}} with a non-empty string id and name and the
// arguments a JSON object (text that did not parse as one stays a string and is refused here);
// a "tool" turn carries "tool_call_id", the id of a call an earlier assistant turn made. Throws
// Error(kInvalidArgument) naming the message ("messages[2].tool_call_id: ..."). check_request
// applies it; edgellm_apply_template too, so a template never renders a result without its call.
void check_tool_turns(const Json& messages);

// The sampling part alone (the CLI's generation options use it too).
void check_sampling(const SamplerParams& s, int32_t n_vocab);

// The counts alone, in the same words: for a face that checks a caller's count before it copies
// the array (the C ABI: a wild count must neither read memory nor allocate). The checks above
// apply them too, so the words are one. `what` names the face's field ("input", "texts").
void check_stop_count(size_t n);
void check_logit_bias_count(size_t n);
void check_token_count(size_t n);
void check_embedding_input_count(const std::string& what, size_t n);
void check_label_count(size_t n);

}  // namespace edgellm
