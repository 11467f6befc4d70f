#include "server/openai_request.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>

#include "core/error.h"
#include "core/utf8.h"
#include "server/api_error.h"
#include "server/structured_request.h"

namespace edgellm::server {
namespace {

int64_t integer_in(const Json& body, const char* name, int64_t lo, int64_t hi) {
  const Json& v = *body.find(name);
  if (!v.is_number() || v.as_number() != std::floor(v.as_number()) || v.as_number() < static_cast<double>(lo) ||
      v.as_number() > static_cast<double>(hi)) {
    throw ApiError::bad_field(name, "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return static_cast<int64_t>(v.as_number());
}

int64_t deadline_field_ms(const Json& body) {
  return integer_in(body, "x_edgellm_deadline_ms", 1, INT64_MAX / 2);
}

// A field the Runtime range-checks (service/request_limits.h, check_request): only its JSON type
// is checked here, so the refusal of a value out of range has the one wording every face shares
// ("temperature must be in [0, 100], got 101"), with OpenAI's status (400).
double any_number(const Json& body, const char* name) {
  const Json& v = *body.find(name);
  if (!v.is_number()) throw ApiError::bad_field(name, "expected a number");
  return v.as_number();
}

// An integer the Runtime range-checks; here only that it is one, within int32.
int32_t any_int32(const Json& v, const std::string& name) {
  if (!v.is_number() || v.as_number() != std::floor(v.as_number()) || v.as_number() < INT32_MIN ||
      v.as_number() > INT32_MAX) {
    throw ApiError::bad_field(name, "expected an integer");
  }
  return static_cast<int32_t>(v.as_number());
}

bool boolean(const Json& body, const char* name) {
  const Json& v = *body.find(name);
  if (!v.is_bool()) throw ApiError::bad_field(name, "expected true or false");
  return v.as_bool();
}

void refuse(const Json& body, const char* name, const std::string& why) {
  if (given_field(body, name) != nullptr) throw ApiError::bad_field(name, why);
}

// Speculative decoding: llama-server's per-request draft sizes (its mode is the server's: a
// draft model given at start); the mode per request is this server's extension.
void parse_speculation(const Json& body, ParsedRequest& out) {
  if (const Json* sm = given_field(body, "x_edgellm_speculation")) {
    if (!sm->is_string() || (sm->as_string() != "off" && sm->as_string() != "ngram" && sm->as_string() != "draft")) {
      throw ApiError::bad_field("x_edgellm_speculation", "expected \"off\", \"ngram\" or \"draft\"");
    }
    out.speculation = sm->as_string();
  }
  if (given_field(body, "speculative.n_max")) {
    out.spec_n_max = static_cast<int32_t>(integer_in(body, "speculative.n_max", 0, SpeculationParams::kMaxDraft));
  }
  if (given_field(body, "speculative.n_min")) {
    out.spec_n_min = static_cast<int32_t>(integer_in(body, "speculative.n_min", 0, SpeculationParams::kMaxDraft));
  }
}

// The queue's order (ServiceRequest::priority, as the C ABI's and NAPI's): interactive requests
// are admitted before background ones, FIFO within one. The names, or the C ABI's numbers
// (0, 1): a number is passed on as it is, so one out of range is refused in the Runtime's
// words (request_limits.h) with every face's status.
void parse_priority(const Json& body, Priority& priority) {
  const Json* pr = given_field(body, "priority");
  if (pr == nullptr) return;
  if (pr->is_string()) {
    if (pr->as_string() == "interactive") {
      priority = Priority::kInteractive;
    } else if (pr->as_string() == "background") {
      priority = Priority::kBackground;
    } else {
      throw ApiError::bad_field("priority", "expected \"interactive\" or \"background\" (or 0, 1)");
    }
  } else if (pr->is_number()) {
    priority = static_cast<Priority>(any_int32(*pr, "priority"));
  } else {
    throw ApiError::bad_field("priority", "expected \"interactive\" or \"background\" (or 0, 1)");
  }
}

// The exchange's own fields: model, n, stream, x_edgellm_session, stream_options.
void parse_exchange_fields(const Json& body, ParsedRequest& out) {
  if (const Json* m = given_field(body, "model")) {
    if (!m->is_string()) throw ApiError::bad_field("model", "expected a string");
    out.model = m->as_string();
  }
  if (given_field(body, "n") && integer_in(body, "n", 1, 1000) != 1) {
    throw ApiError::bad_field("n", "only n = 1 is supported (send several requests for several choices)");
  }
  if (given_field(body, "stream")) out.stream = boolean(body, "stream");
  // The id's form is the Runtime's to check (session_id: 1 to 64 of A-Z a-z 0-9 _ - .).
  if (const Json* sid = given_field(body, "x_edgellm_session")) {
    if (!sid->is_string()) throw ApiError::bad_field("x_edgellm_session", "expected a string");
    out.session_id = sid->as_string();
  }
  if (const Json* so = given_field(body, "stream_options")) {
    if (!so->is_object()) throw ApiError::bad_field("stream_options", "expected an object");
    if (given_field(*so, "include_usage")) {
      if (!so->find("include_usage")->is_bool()) {
        throw ApiError::bad_field("stream_options.include_usage", "expected true or false");
      }
      out.include_usage = so->find("include_usage")->as_bool();
    }
  }
}

// How the answer is generated: max_tokens, the sampling values, ignore_eos, context shift,
// speculation, priority and the per-request deadline.
void parse_generation_fields(const Json& body, ParsedRequest& out) {
  ServiceRequest& r = out.request;
  SamplerParams& s = r.sampling;
  r.generation.max_tokens = -1;
  // max_completion_tokens is the newer name; when both are given it wins, as in OpenAI. 0 runs
  // the prompt only (its KV, e.g. for a session), as in the C ABI.
  for (const char* name : {"max_tokens", "max_completion_tokens"}) {
    if (given_field(body, name)) r.generation.max_tokens = static_cast<int32_t>(integer_in(body, name, 0, 1 << 20));
  }
  // The sampling ranges are the Runtime's (check_sampling): the type is checked here, the value
  // there, so every face refuses it in the same words. OpenAI's own bounds are narrower in two
  // places (temperature <= 2, at most 4 stop strings); this server takes the Runtime's.
  if (given_field(body, "temperature")) s.temperature = static_cast<float>(any_number(body, "temperature"));
  if (given_field(body, "top_p")) s.top_p = static_cast<float>(any_number(body, "top_p"));
  if (given_field(body, "top_k")) s.top_k = any_int32(*body.find("top_k"), "top_k");
  if (given_field(body, "min_p")) s.min_p = static_cast<float>(any_number(body, "min_p"));
  if (given_field(body, "frequency_penalty"))
    s.frequency_penalty = static_cast<float>(any_number(body, "frequency_penalty"));
  if (given_field(body, "presence_penalty"))
    s.presence_penalty = static_cast<float>(any_number(body, "presence_penalty"));
  if (given_field(body, "repeat_penalty")) s.repeat_penalty = static_cast<float>(any_number(body, "repeat_penalty"));
  // llama-server's name for the penalties' window (SamplerParams::penalty_last_n; NAPI's
  // penaltyLastN): 0 no penalties, -1 every token. Its range is the Runtime's.
  if (given_field(body, "repeat_last_n")) s.penalty_last_n = any_int32(*body.find("repeat_last_n"), "repeat_last_n");
  // llama-server's extension: never sample end-of-generation tokens (benchmarks, tests).
  if (given_field(body, "ignore_eos")) r.generation.ignore_eog = boolean(body, "ignore_eos");
  // Endless streams (docs/context-shift.md): llama-server's n_keep, and context_shift per request
  // (llama-server has it as a server flag). n_keep's range is the Runtime's.
  if (given_field(body, "context_shift")) r.generation.context_shift = boolean(body, "context_shift");
  if (given_field(body, "n_keep")) r.generation.n_keep = any_int32(*body.find("n_keep"), "n_keep");
  parse_speculation(body, out);
  parse_priority(body, r.priority);
  // A deadline shorter than the server's --timeout (ServiceRequest::deadline_ms, queue wait
  // included); generate() checks it against --timeout, which it may not exceed.
  if (given_field(body, "x_edgellm_deadline_ms")) out.deadline_ms = deadline_field_ms(body);
}

// The seed, stop strings, logit_bias and the fields refused outright.
void parse_seed_stop_bias(const Json& body, ParsedRequest& out) {
  ServiceRequest& r = out.request;
  SamplerParams& s = r.sampling;
  if (given_field(body, "seed")) {
    s.seed = static_cast<uint64_t>(integer_in(body, "seed", INT64_MIN / 2, INT64_MAX / 2));
    out.seed_given = true;
  } else {
    s.seed = (static_cast<uint64_t>(std::random_device{}()) << 32) | std::random_device{}();
  }
  // Stop strings: their count and lengths are the Runtime's to check (at most 16, 1 to 256 bytes).
  if (const Json* stop = given_field(body, "stop")) {
    if (stop->is_string()) {
      r.generation.stop.push_back(stop->as_string());
    } else if (stop->is_array()) {
      for (size_t i = 0; i < stop->size(); ++i) {
        if (!stop->at(i).is_string()) throw ApiError::bad_field("stop[" + std::to_string(i) + "]", "expected a string");
        r.generation.stop.push_back(stop->at(i).as_string());
      }
    } else {
      throw ApiError::bad_field("stop", "expected a string or an array of strings");
    }
  }
  if (const Json* bias = given_field(body, "logit_bias")) {
    if (!bias->is_object()) throw ApiError::bad_field("logit_bias", "expected an object {token id: bias}");
    for (const auto& [key, value] : bias->as_object()) {
      const std::string name = "logit_bias." + key;
      char* end = nullptr;
      const long id = std::strtol(key.c_str(), &end, 10);
      // The id's vocabulary and the bias's range are the Runtime's to check.
      if (key.empty() || *end != '\0' || id < INT32_MIN || id > INT32_MAX) {
        throw ApiError::bad_field(name, "key is not a token id");
      }
      if (!value.is_number()) throw ApiError::bad_field(name, "expected a number");
      s.logit_bias.emplace_back(static_cast<int32_t>(id), static_cast<float>(value.as_number()));
    }
  }
  // Chat sends logprobs: false by default in some clients; only a request for them is refused.
  if (const Json* lp = given_field(body, "logprobs"); lp != nullptr && !(lp->is_bool() && !lp->as_bool())) {
    throw ApiError::bad_field("logprobs", "not supported");
  }
  refuse(body, "top_logprobs", "not supported");
  refuse(body, "functions", "the legacy function-call fields are not supported: send \"tools\"");
  refuse(body, "function_call", "the legacy function-call fields are not supported: send \"tool_choice\"");
}

// Everything the two endpoints share, in this order (the first bad field is the one refused).
void parse_common(const Json& body, ParsedRequest& out) {
  parse_exchange_fields(body, out);
  parse_generation_fields(body, out);
  parse_seed_stop_bias(body, out);
}

std::string content_text(const Json& content, const std::string& where) {
  if (content.is_string()) return content.as_string();
  if (!content.is_array()) throw ApiError::bad_field(where, "expected a string or an array of text parts");
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const std::string part_name = where + "[" + std::to_string(i) + "]";
    const Json& part = content.at(i);
    const Json* type = part.is_object() ? part.find("type") : nullptr;
    if (type == nullptr || !type->is_string() || type->as_string() != "text") {
      throw ApiError::bad_field(part_name + ".type", "only \"text\" parts are supported");
    }
    const Json* t = part.find("text");
    if (t == nullptr || !t->is_string()) throw ApiError::bad_field(part_name + ".text", "expected a string");
    text += t->as_string();
  }
  return text;
}

}  // namespace

Json parse_body(const std::string& body, int max_depth) {
  const size_t bad = utf8::first_invalid(body);
  if (bad != body.size()) {
    throw ApiError(400, "invalid_request_error", "invalid_utf8",
                   "request body: not valid UTF-8 at byte " + std::to_string(bad));
  }
  Json j;
  try {
    j = Json::parse(body, max_depth);
  } catch (const Error& e) {
    throw ApiError(400, "invalid_request_error", "invalid_json", std::string("request body: not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw ApiError(400, "invalid_request_error", "invalid_json", "request body: expected a JSON object");
  return j;
}

Json parse_messages(const Json* messages) {
  if (messages == nullptr || messages->is_null()) throw ApiError::bad_field("messages", "required");
  if (!messages->is_array() || messages->size() == 0) {
    throw ApiError::bad_field("messages", "expected a non-empty array of {role, content}");
  }
  Json normalized = Json::array();
  for (size_t i = 0; i < messages->size(); ++i) {
    const std::string where = "messages[" + std::to_string(i) + "]";
    const Json& m = messages->at(i);
    if (!m.is_object()) throw ApiError::bad_field(where, "expected an object {role, content}");
    const Json* role = m.find("role");
    if (role == nullptr || !role->is_string()) throw ApiError::bad_field(where + ".role", "expected a string");
    std::string r = role->as_string();
    if (r == "developer") r = "system";  // OpenAI's newer name for the system role
    // Any other role is the Runtime's to refuse ("messages[0]: unknown role ...").

    const Json* content = m.find("content");
    const Json* calls = m.find("tool_calls");
    const bool has_calls = r == "assistant" && calls != nullptr && !calls->is_null();
    // An assistant turn that called tools may have no content (OpenAI sends null).
    if ((content == nullptr || content->is_null()) && !has_calls) throw ApiError::bad_field(where + ".content", "required");
    Json msg = Json::object();
    msg.set("role", r);
    msg.set("content", content == nullptr || content->is_null() ? std::string() : content_text(*content, where + ".content"));
    if (has_calls) msg.set("tool_calls", parse_message_tool_calls(*calls, where + ".tool_calls"));
    if (r == "tool") {
      // The result of a call: which call it answers. Its presence and that an earlier call has
      // it are the Runtime's to check (check_tool_turns), in every face's words.
      const Json* call_id = m.find("tool_call_id");
      if (call_id != nullptr && !call_id->is_null()) {
        if (!call_id->is_string()) throw ApiError::bad_field(where + ".tool_call_id", "expected a string");
        msg.set("tool_call_id", call_id->as_string());
      }
      if (const Json* name = m.find("name"); name != nullptr && name->is_string()) msg.set("name", name->as_string());
    }
    normalized.push_back(std::move(msg));
  }
  return normalized;
}

ParsedRequest parse_chat_request(const Json& body) {
  ParsedRequest out;
  parse_common(body, out);
  // A chat is rendered by the template, never tokenized as raw text: the raw-prompt switches
  // would do nothing here.
  refuse(body, "add_special", "applies to a raw prompt: send it to /v1/completions");
  refuse(body, "parse_special", "applies to a raw prompt: send it to /v1/completions");
  out.tools = parse_tool_request(body);
  out.constraint_field = parse_output_constraint(body, out.tools.active(), out.request);
  // The templates want a call's arguments as an object (OpenAI sends a JSON string).
  out.request.messages = normalize_chat_messages(parse_messages(body.find("messages")));
  for (const Json& m : out.request.messages.as_array()) {
    out.has_tool_turns = out.has_tool_turns || m.at("role").as_string() == "tool" || m.find("tool_calls") != nullptr;
  }
  if (const Json* route = given_field(body, "x_edgellm_route")) {
    if (!route->is_string() ||
        (route->as_string() != "auto" && route->as_string() != "local" && route->as_string() != "cloud")) {
      throw ApiError::bad_field("x_edgellm_route", "expected \"auto\", \"local\" or \"cloud\"");
    }
    out.route = route->as_string();
  }
  if (out.local_only() && out.route == "cloud") {
    throw ApiError::bad_field("x_edgellm_route", "\"cloud\" cannot honour an output constraint or tools (the local "
                                                 "model generates them): send \"auto\" or \"local\"");
  }
  return out;
}

ParsedRequest parse_completion_request(const Json& body) {
  ParsedRequest out;
  parse_common(body, out);
  refuse(body, "suffix", "not supported");
  refuse(body, "tools", "tool calls are a chat feature: send them to /v1/chat/completions");
  refuse(body, "tool_choice", "tool calls are a chat feature: send them to /v1/chat/completions");
  out.constraint_field = parse_output_constraint(body, false, out.request);
  // The raw prompt's tokenization (ServiceRequest::add_special / parse_special, the C ABI's and
  // NAPI's): BOS as the model asks (default true); "<|im_start|>" in the text as the control
  // token (default false: a prompt's text is text).
  if (given_field(body, "add_special")) out.request.add_special = boolean(body, "add_special");
  if (given_field(body, "parse_special")) out.request.parse_special = boolean(body, "parse_special");
  if (given_field(body, "echo") && boolean(body, "echo")) throw ApiError::bad_field("echo", "not supported");
  if (given_field(body, "best_of") && integer_in(body, "best_of", 1, 1000) != 1) {
    throw ApiError::bad_field("best_of", "only best_of = 1 is supported");
  }
  // A missing or empty prompt is the Runtime's to refuse ("no input: ..."), as every face's.
  const Json* prompt = given_field(body, "prompt");
  if (prompt == nullptr) return out;
  if (prompt->is_string()) {
    out.request.prompt = prompt->as_string();
  } else if (prompt->is_array() && prompt->size() == 1 && prompt->at(0).is_string()) {
    out.request.prompt = prompt->at(0).as_string();
  } else if (prompt->is_array() && prompt->size() > 0 && prompt->at(0).is_number()) {
    // Token ids: the vocabulary is the Runtime's to check ("tokens[1] = 99999 is outside ...").
    for (size_t i = 0; i < prompt->size(); ++i) {
      out.request.tokens.push_back(any_int32(prompt->at(i), "prompt[" + std::to_string(i) + "]"));
    }
  } else if (!(prompt->is_array() && prompt->size() == 0)) {
    throw ApiError::bad_field("prompt", "expected a string, an array of one string or an array of token ids");
  }
  return out;
}

int64_t request_deadline_ms(const Json& body, int64_t server_ms) {
  if (!given_field(body, "x_edgellm_deadline_ms")) return server_ms;
  const int64_t asked = deadline_field_ms(body);
  if (asked > server_ms) {
    throw ApiError::bad_field("x_edgellm_deadline_ms",
                              "at most this server's --timeout (" + std::to_string(server_ms) + " ms)");
  }
  return asked;
}

}  // namespace edgellm::server
