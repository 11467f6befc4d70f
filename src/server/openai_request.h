// OpenAI request bodies -> ServiceRequest. Every field is checked for type and range; a bad one
// throws ApiError 400 whose message and `param` name the field ("temperature: expected a number
// in [0, 2]"). Unknown fields are ignored (clients send many); fields EdgeLLM cannot honour
// (n > 1, logprobs, best_of, echo, suffix, the legacy functions) are refused rather than
// silently dropped. Structured output (response_format, grammar, json_schema) and tools:
// structured_request.h.
//
// llama-server extensions accepted too: top_k, min_p, repeat_penalty, repeat_last_n, ignore_eos,
// n_keep, context_shift; /v1/completions: add_special, parse_special. EdgeLLM's: priority
// ("interactive" | "background"), x_edgellm_route (runtime/router.h), x_edgellm_session (an id
// of SessionStore::valid_id's form), x_edgellm_deadline_ms (at most the server's --timeout).
//
// Defaults are the engine's (as llama-server's): temperature 0.8, top_k 40, top_p 0.95, min_p
// 0.05, a random seed; max_tokens: until a stop or the context is full (the deadline still
// applies).
#pragma once

#include <string>

#include "core/json.h"
#include "server/structured_request.h"
#include "service/request.h"

namespace edgellm::server {

struct ParsedRequest {
  ServiceRequest request;    // input + sampling + stop + max_tokens (callbacks not set)
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  std::string model;           // as the client named it (echoed back), may be empty
  bool seed_given = false;
  std::string route = "auto";  // "x_edgellm_route": auto | local | cloud (runtime/router.h)
  std::string session_id;      // "x_edgellm_session": continue from / save to this server session
  int64_t deadline_ms = 0;     // "x_edgellm_deadline_ms": 0 not given (the server's --timeout)
  // Speculative decoding (docs/server.md): "x_edgellm_speculation" off | ngram | draft ("": the
  // server's --spec), llama-server's "speculative.n_max" (k; 0: off for this request; -1: the
  // server's --draft-max) and "speculative.n_min" (fewer drafts are not verified; -1: 0).
  std::string speculation;
  int32_t spec_n_max = -1;
  int32_t spec_n_min = -1;
  ToolRequest tools;           // chat: tools, tool_choice, parallel_tool_calls
  std::string constraint_field;  // the body field of the output constraint ("" none; structured_request.h)

  // Constrained output (a grammar, a schema, a JSON object) or tools: the local model must
  // answer (the cloud of the router gets the chat only), so the router is not asked.
  // A conversation with tool calls or results stays local too (what the model called is the
  // local model's business; the cloud is sent plain chat).
  bool has_tool_turns = false;
  bool local_only() const {
    return tools.active() || has_tool_turns || !request.grammar_gbnf.empty() || !request.json_schema.empty() ||
           request.json_object;
  }
};

// POST /v1/chat/completions: messages [{role, content}] (content a string or an array of
// {"type": "text", "text": ...} parts; an assistant turn may carry tool_calls, a "tool" turn the
// result of one with its tool_call_id). request.messages are normalized for the chat templates
// (chat/tool_calls.h normalize_chat_messages: a call's arguments as an object).
ParsedRequest parse_chat_request(const Json& body);
// The "messages" field (nullptr: absent) checked and normalized to [{role, content: string}]
// ("developer" becomes "system", text parts are joined; tool_calls and tool_call_id kept, the
// arguments a JSON string as OpenAI sends them). /apply-template and `edgellm template`
// use it too.
Json parse_messages(const Json* messages);
// POST /v1/completions: prompt (a string, a one-string array or an array of token ids).
ParsedRequest parse_completion_request(const Json& body);

// The deadline a request gets: its "x_edgellm_deadline_ms" (an integer in [1, 2^62], at most
// `server_ms`, the server's --timeout, which bounds every request), else `server_ms`. Throws the
// ApiError 400 naming the field. Chat, completions and /v1/docqa/ask share it (and its words).
int64_t request_deadline_ms(const Json& body, int64_t server_ms);

// Parses a request body: valid UTF-8, JSON, an object, at most `max_depth` levels of nesting.
// Throws ApiError 400 otherwise.
Json parse_body(const std::string& body, int max_depth = 64);

}  // namespace edgellm::server
