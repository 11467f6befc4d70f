// OpenAI request bodies -> ServiceRequest. Every field is checked for type and range; a bad one
// throws ApiError 400 whose message and `param` name the field ("temperature: expected a number
// in [0, 2]"). Unknown fields are ignored (clients send many); fields EdgeLLM cannot honour
// (n > 1, logprobs, best_of, echo, suffix, tools) are refused rather than silently dropped.
//
// llama-server extensions accepted too: top_k, min_p, repeat_penalty, ignore_eos. EdgeLLM's:
// x_edgellm_route (router.h) and x_edgellm_session (an id of SessionStore::valid_id's form).
//
// Defaults are the engine's (as llama-server's): temperature 0.8, top_k 40, top_p 0.95, min_p
// 0.05, a random seed; max_tokens: until a stop or the context is full (the deadline still
// applies).
#pragma once

#include <string>

#include "core/json.h"
#include "service/request.h"

namespace edgellm::server {

struct ParsedRequest {
  ServiceRequest request;    // input + sampling + stop + max_tokens (callbacks not set)
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  std::string model;           // as the client named it (echoed back), may be empty
  bool seed_given = false;
  std::string route = "auto";  // "x_edgellm_route": auto | local | cloud (router.h)
  std::string session_id;      // "x_edgellm_session": continue from / save to this server session
};

// POST /v1/chat/completions: messages [{role, content}] (content a string or an array of
// {"type": "text", "text": ...} parts).
ParsedRequest parse_chat_request(const Json& body);
// The "messages" field (nullptr: absent) checked and normalized to [{role, content: string}]
// ("developer" becomes "system", text parts are joined). /apply-template and `edgellm template`
// use it too.
Json parse_messages(const Json* messages);
// POST /v1/completions: prompt (a string, a one-string array or an array of token ids).
ParsedRequest parse_completion_request(const Json& body);

// Parses a request body: valid UTF-8, JSON, an object, at most `max_depth` levels of nesting.
// Throws ApiError 400 otherwise.
Json parse_body(const std::string& body, int max_depth = 64);

}  // namespace edgellm::server
