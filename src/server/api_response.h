// JSON in and out of the endpoints: request bodies parsed under the content-type rule, responses
// that are always valid JSON, and errors in OpenAI's shape (api_error.h). Pure functions.
#pragma once

#include <string>

#include "core/error.h"
#include "core/json.h"
#include "server/api_error.h"
#include "server/http_message.h"

namespace edgellm::server {

// The wire form of `j`: its dump, with any ill-formed UTF-8 (a model's byte-level token text,
// a piece of a character) replaced by U+FFFD, so a response is valid JSON whatever the strings
// held. Structural characters are ASCII, so replacing in the dump replaces inside strings only.
std::string wire_json(const Json& j);
// `text` with every ill-formed UTF-8 subpart replaced by U+FFFD (Unicode's maximal-subpart rule).
std::string valid_utf8(std::string text);

HttpResponse json_response(int status, const Json& body);
// The error's response; 429 and 503 carry Retry-After: retry_after_s.
HttpResponse error_response(const ApiError& e, int retry_after_s);

// The service's refusals as HTTP errors (kBusy 429, kInvalidArgument 400, kContextFull 400
// context_length_exceeded, kCancelled 503, kDegraded 503 degraded (the ladder refuses new
// requests under device pressure), anything else 500). The message is the Runtime's, word for
// word (the same every face gives); `param` is the body field it names, when it names one.
ApiError api_error_from(const Error& e);

// A JSON endpoint's body: a JSON object whatever the Content-Type says (`curl -d` sends
// application/x-www-form-urlencoded). A body that is not JSON is a 400 when the client said it
// was JSON (or said nothing), and a 415 when it declared another type.
Json parse_json_request(const HttpRequest& request, int max_depth);

}  // namespace edgellm::server
