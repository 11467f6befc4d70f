// The error every endpoint answers with, in OpenAI's shape:
//   HTTP <status>  {"error": {"message": "...", "type": "...", "param": "<field>" | null, "code": "..."}}
// Thrown by request parsing (param names the offending field) and by the handlers; the server
// turns it into the response (http_server.cpp).
#pragma once

#include <stdexcept>
#include <string>

#include "core/json.h"

namespace edgellm::server {

// A request body's field as OpenAI reads it: absent and null both mean "not given" (nullptr).
inline const Json* given_field(const Json& body, const char* name) {
  const Json* v = body.find(name);
  return v != nullptr && !v->is_null() ? v : nullptr;
}

class ApiError : public std::runtime_error {
 public:
  // type: "invalid_request_error" (4xx from the request), "rate_limit_error" (429),
  // "authentication_error" (401), "server_error" (5xx).
  ApiError(int status, std::string type, std::string code, std::string message, std::string param = {})
      : std::runtime_error(std::move(message)),
        status_(status), type_(std::move(type)), code_(std::move(code)), param_(std::move(param)) {}

  // A 400 for a field of the request body: "<field>: <what>".
  static ApiError bad_field(const std::string& field, const std::string& what) {
    return ApiError(400, "invalid_request_error", "invalid_value", field + ": " + what, field);
  }

  int status() const { return status_; }
  const std::string& type() const { return type_; }
  const std::string& code() const { return code_; }
  const std::string& param() const { return param_; }

  Json to_json() const {
    Json e = Json::object();
    e.set("message", std::string(what()));
    e.set("type", type_);
    e.set("param", param_.empty() ? Json() : Json(param_));
    e.set("code", code_);
    Json body = Json::object();
    body.set("error", std::move(e));
    return body;
  }

 private:
  int status_;
  std::string type_;
  std::string code_;
  std::string param_;
};

}  // namespace edgellm::server
