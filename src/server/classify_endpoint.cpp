#include "server/classify_endpoint.h"

#include <string>
#include <utility>

#include "core/error.h"
#include "core/json.h"
#include "generation/classify.h"
#include "server/api_error.h"
#include "server/api_response.h"

namespace edgellm::server {
namespace {

const std::string& string_field(const Json& v, const std::string& where) {
  if (!v.is_string()) throw ApiError::bad_field(where, "expected a string");
  return v.as_string();
}

bool bool_field(const Json& body, const char* name, bool fallback) {
  const Json* b = body.find(name);
  if (b == nullptr || b->is_null()) return fallback;
  if (!b->is_bool()) throw ApiError::bad_field(name, "expected true or false");
  return b->as_bool();
}

// "messages": [system?, user] -> instruction, text.
void read_messages(const Json& messages, ClassifyRequest& r) {
  if (!messages.is_array() || messages.size() == 0) {
    throw ApiError::bad_field("messages", "expected an array: an optional system message, then one user message");
  }
  size_t i = 0;
  const auto role_of = [&](size_t k) -> std::string {
    const Json& m = messages.at(k);
    const std::string where = "messages[" + std::to_string(k) + "]";
    if (!m.is_object()) throw ApiError::bad_field(where, "expected {\"role\", \"content\"}");
    const Json* role = m.find("role");
    if (role == nullptr) throw ApiError::bad_field(where + ".role", "required");
    return string_field(*role, where + ".role");
  };
  const auto content_of = [&](size_t k) -> const std::string& {
    const std::string where = "messages[" + std::to_string(k) + "].content";
    const Json* c = messages.at(k).find("content");
    if (c == nullptr) throw ApiError::bad_field(where, "required");
    return string_field(*c, where);
  };
  if (role_of(0) == "system") {
    r.instruction = content_of(0);
    i = 1;
  }
  if (messages.size() != i + 1 || role_of(i) != "user") {
    throw ApiError::bad_field("messages",
                              "classify takes an optional system message (the instruction) and one user message "
                              "(the text), nothing else");
  }
  r.text = content_of(i);
}

ClassifyRequest read_request(const Json& body) {
  ClassifyRequest r;
  const Json* text = body.find("text");
  const Json* messages = body.find("messages");
  if (text != nullptr && messages != nullptr) {
    throw ApiError::bad_field("messages", "give either \"text\" or \"messages\", not both");
  }
  if (messages != nullptr) {
    if (const Json* in = body.find("instruction"); in != nullptr && !in->is_null()) {
      throw ApiError::bad_field("instruction", "with \"messages\" the instruction is the system message");
    }
    if (bool_field(body, "raw", false)) {
      throw ApiError::bad_field("raw", "\"messages\" go through the chat template: give \"text\" for a raw prompt");
    }
    read_messages(*messages, r);
  } else {
    if (text == nullptr) throw ApiError::bad_field("text", "required: a string (or \"messages\")");
    r.text = string_field(*text, "text");
    if (const Json* in = body.find("instruction"); in != nullptr && !in->is_null()) {
      r.instruction = string_field(*in, "instruction");
    }
    r.raw = bool_field(body, "raw", r.raw);
  }
  const Json* labels = body.find("labels");
  if (labels == nullptr || !labels->is_array()) throw ApiError::bad_field("labels", "required: an array of strings");
  r.labels.reserve(labels->size());
  for (size_t i = 0; i < labels->size(); ++i) {
    r.labels.push_back(string_field(labels->at(i), "labels[" + std::to_string(i) + "]"));
  }
  r.length_normalize = bool_field(body, "length_normalize", r.length_normalize);
  return r;
}

}  // namespace

HttpResponse classify(ServerContext& ctx, HttpRequest& request) {
  ClassifyRequest r;
  {
    const Json body = parse_json_request(request, ctx.options.max_json_depth);
    if (!body.is_object()) throw ApiError::bad_field("body", "expected a JSON object");
    r = read_request(body);
  }
  r.deadline_ms = ctx.options.deadline_ms;
  std::vector<std::string> labels = r.labels;
  const ClassifyResult res = ctx.service.classify(std::move(r));  // the Runtime's checks: Error -> 400
  switch (res.finish_reason) {
    case FinishReason::kStop: break;
    case FinishReason::kTimeout:
      throw ApiError(503, "server_error", "timeout", "the request's deadline passed before its result was there");
    case FinishReason::kCancelled: throw ApiError(503, "server_error", "shutting_down", "the server is stopping");
    default: throw ApiError(500, "server_error", "internal", "classify: unexpected finish");
  }
  Json scores = Json::array();
  int64_t label_tokens = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    Json e = Json::object();
    e.set("index", static_cast<int64_t>(i));
    e.set("label", labels[i]);
    e.set("probability", res.probabilities[i]);
    e.set("logprob", res.logprobs[i]);
    e.set("tokens", static_cast<int64_t>(res.label_tokens[i]));
    label_tokens += res.label_tokens[i];
    scores.push_back(std::move(e));
  }
  Json usage = Json::object();
  usage.set("prompt_tokens", static_cast<int64_t>(res.prompt_tokens));
  usage.set("label_tokens", label_tokens);
  usage.set("total_tokens", static_cast<int64_t>(res.prompt_tokens) + label_tokens);
  Json details = Json::object();  // OpenAI's shape, as the chat endpoints report it
  details.set("cached_tokens", static_cast<int64_t>(res.cached_tokens));
  usage.set("prompt_tokens_details", std::move(details));
  Json timings = Json::object();
  timings.set("total_ms", res.total_ms);
  Json out = Json::object();
  out.set("object", "classification");
  out.set("model", ctx.options.model_name);
  out.set("label", res.label);
  out.set("index", static_cast<int64_t>(res.index));
  out.set("labels", std::move(scores));
  out.set("usage", std::move(usage));
  out.set("timings", std::move(timings));
  return json_response(200, out);
}

}  // namespace edgellm::server
