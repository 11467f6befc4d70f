#include "server/api_response.h"

#include <cctype>
#include <utility>

#include "core/utf8.h"
#include "server/openai_request.h"
#include "server/request_policy.h"

namespace edgellm::server {

std::string valid_utf8(std::string text) {
  size_t bad = utf8::first_invalid(text);
  if (bad == text.size()) return text;
  std::string out(text, 0, bad);
  out.reserve(text.size() + 16);
  for (size_t i = bad; i < text.size();) {
    const utf8::Decoded d = utf8::decode(text, i);
    if (d.ok()) {
      out.append(text, i, d.length);
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD for the maximal subpart
    }
    i += d.length;
  }
  return out;
}

std::string wire_json(const Json& j) { return valid_utf8(j.dump()); }

HttpResponse json_response(int status, const Json& body) {
  HttpResponse r;
  r.status = status;
  r.content_type = "application/json";
  r.body = wire_json(body);
  return r;
}

HttpResponse error_response(const ApiError& e, int retry_after_s) {
  HttpResponse r = json_response(e.status(), e.to_json());
  if (e.status() == 429 || e.status() == 503) r.headers.emplace_back("Retry-After", std::to_string(retry_after_s));
  return r;
}

namespace {

// The body field a Runtime refusal names (service/request_limits.h words each one "<field>
// must be ...", "<field>: ...", "<field>[i] = ...", "<field> holds ...", "<field> is ..."),
// in the OpenAI body's spelling; "" when the message names none ("no input: ...").
std::string refused_field(const std::string& message) {
  size_t end = 0;
  while (end < message.size() && (std::isalnum(static_cast<unsigned char>(message[end])) != 0 ||
                                  message[end] == '_' || message[end] == '.' || message[end] == '[' ||
                                  message[end] == ']')) {
    ++end;
  }
  if (end == 0 || end == message.size() || (message[end] != ':' && message[end] != ' ')) return {};
  std::string name = message.substr(0, end);
  const bool field_like = name.find_first_of("_[.") != std::string::npos || name == "temperature" ||
                          name == "stop" || name == "messages" || name == "prompt" || name == "tokens" ||
                          name == "grammar";
  if (!field_like) return {};
  // The Runtime's names that differ from the body's.
  if (name.rfind("tokens", 0) == 0) return "prompt" + name.substr(6);
  if (name == "session_id") return "x_edgellm_session";
  return name;
}

}  // namespace

ApiError api_error_from(const Error& e) {
  switch (e.code()) {
    case ErrorCode::kBusy:
      return ApiError(429, "rate_limit_error", "server_busy", std::string("server busy: ") + e.what());
    case ErrorCode::kInvalidArgument:
      return ApiError(400, "invalid_request_error", "invalid_value", e.what(), refused_field(e.what()));
    case ErrorCode::kContextFull:
      return ApiError(400, "invalid_request_error", "context_length_exceeded", e.what());
    case ErrorCode::kCancelled:
      return ApiError(503, "server_error", "shutting_down", e.what());
    case ErrorCode::kDegraded:
      return ApiError(503, "server_error", "degraded", e.what());
    default:
      return ApiError(500, "server_error", error_code_name(e.code()), e.what());
  }
}

Json parse_json_request(const HttpRequest& request, int max_depth) {
  try {
    return parse_body(request.body, max_depth);
  } catch (const ApiError&) {
    const std::string_view type = request.head.header("Content-Type");
    if (!type.empty() && !is_json_content_type(type)) {
      throw ApiError(415, "invalid_request_error", "unsupported_media_type",
                     "the body is not JSON and its Content-Type is '" + valid_utf8(std::string(type)) +
                         "': send a JSON object (Content-Type: application/json)");
    }
    throw;
  }
}

}  // namespace edgellm::server
