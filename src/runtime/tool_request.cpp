#include "runtime/tool_request.h"

#include <string>
#include <utility>

#include "chat/chat_template.h"
#include "core/error.h"

namespace edgellm {

void check_tool_choice(const ToolRequest& tools) {
  const bool have_tools = tools.tools.is_array() && tools.tools.size() > 0;
  const ToolChoiceKind kind = tools.choice.kind;
  require(have_tools || (kind != ToolChoiceKind::kRequired && kind != ToolChoiceKind::kFunction),
          ErrorCode::kInvalidArgument, "tool_choice: asks for a tool call, but the request has no tools");
  if (kind != ToolChoiceKind::kFunction) return;
  for (const Json& t : tools.tools.as_array()) {
    if (t.at("function").at("name").as_string() == tools.choice.function) return;
  }
  throw Error(ErrorCode::kInvalidArgument,
              "tool_choice: names the function \"" + tools.choice.function + "\", which is not among the tools");
}

ToolCallFormat prepare_tool_request(const ChatTemplate& chat_template, const ToolRequest& tools, ServiceRequest& r) {
  require(r.messages.is_array(), ErrorCode::kInvalidArgument,
          "tools: tool calls are a chat feature: give the request as messages");
  require(r.grammar_gbnf.empty() && r.json_schema.empty() && !r.json_object, ErrorCode::kInvalidArgument,
          "tools: only one output constraint per request, and a grammar / json_schema / json_object is given too "
          "(the tools' grammar constrains the reply)");
  const ToolCallFormat format = detect_tool_call_format(chat_template.source());
  ToolCallGrammarOptions o;
  o.format = format;
  o.choice = tools.choice;
  o.parallel = tools.parallel;
  r.grammar_gbnf = tool_call_gbnf(tools.tools, o);  // its errors name the tool or the choice
  if (format != ToolCallFormat::kGeneric) {
    r.tools = tools.tools;  // the template writes the tools section its model was trained on
    return format;
  }
  // A template that knows no tools: the instruction goes into the system message (the first
  // one, or a new one before the conversation).
  const std::string teach = generic_tool_system_prompt(tools.tools, tools.choice);
  Json::Array& msgs = r.messages.as_array();
  if (!msgs.empty() && msgs.front().is_object() && msgs.front().find("role") != nullptr &&
      msgs.front().at("role").as_string() == "system") {
    const std::string content = msgs.front().at("content").as_string();
    msgs.front().set("content", content + "\n\n" + teach);
  } else {
    Json sys = Json::object();
    sys.set("role", "system");
    sys.set("content", teach);
    msgs.insert(msgs.begin(), std::move(sys));
  }
  return format;
}

}  // namespace edgellm
