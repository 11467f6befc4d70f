#include "server/tool_call_response.h"

#include <string>
#include <utility>

#include "runtime/tool_request.h"

namespace edgellm::server {
namespace {

// The member `key` of an object (which the builders always set).
Json& member(Json& object, const std::string& key) {
  for (auto& [k, v] : object.as_object()) {
    if (k == key) return v;
  }
  return object.set(key, Json());
}

Json& first_choice(Json& body) {
  return member(body, "choices").as_array().at(0);
}

Json call_json(const std::string& id, const std::string& name, const std::string& arguments) {
  Json fn = Json::object();
  fn.set("name", name);
  fn.set("arguments", arguments);
  Json c = Json::object();
  c.set("id", id);
  c.set("type", "function");
  c.set("function", std::move(fn));
  return c;
}

}  // namespace

const char* tool_finish_reason(bool has_calls, FinishReason reason) {
  return ends_in_tool_calls(has_calls, reason) ? "tool_calls" : openai_finish_reason(reason);
}

Json tool_calls_chunk(const ResponseHead& head, const std::vector<ToolCallDelta>& calls, int32_t tokens,
                      double decode_ms, bool include_usage) {
  Json j = text_chunk(head, "", tokens, decode_ms, include_usage);
  Json deltas = Json::array();
  for (const ToolCallDelta& d : calls) {
    Json one = Json::object();
    one.set("index", d.index);
    Json fn = Json::object();
    if (!d.id.empty()) {
      // A call's first delta: its id, type and name (arguments follow).
      one.set("id", d.id);
      one.set("type", "function");
      fn.set("name", d.name);
    }
    fn.set("arguments", d.arguments);
    one.set("function", std::move(fn));
    deltas.push_back(std::move(one));
  }
  Json delta = Json::object();
  delta.set("tool_calls", std::move(deltas));
  first_choice(j).set("delta", std::move(delta));
  return j;
}

Json with_tool_calls(Json body, const std::string& content, const std::vector<ToolCall>& calls, FinishReason reason) {
  Json& choice = first_choice(body);
  Json& message = member(choice, "message");
  // OpenAI: content null when the reply is calls only.
  message.set("content", content.empty() && !calls.empty() ? Json() : Json(content));
  if (!calls.empty()) {
    Json list = Json::array();
    for (const ToolCall& c : calls) list.push_back(call_json(c.id, c.name, c.arguments));
    message.set("tool_calls", std::move(list));
  }
  choice.set("finish_reason", tool_finish_reason(!calls.empty(), reason));
  return body;
}

void set_finish_reason(Json& body, const char* reason) {
  first_choice(body).set("finish_reason", reason);
}

}  // namespace edgellm::server
