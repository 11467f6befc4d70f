// Tool calling for a chat request, the half every face shares (docs/structured-output.md "Tool
// calls"): the request's tools and tool_choice checked, the request made ready for the model that
// serves it (call grammar, tools rendered by the template or taught by a system prompt), and how a
// reply with calls ends. The faces read their own wire shapes (the server's OpenAI JSON, the C
// ABI's fields) into a ToolRequest and parse the reply with chat/tool_calls.h's ToolCallParser.
//
// Errors are Error(kInvalidArgument) whose message starts with the field it is about ("tools: ",
// "tool_choice: "); the server turns them into 400s on that field, the C ABI into INVALID_ARGUMENT.
#pragma once

#include "chat/tool_calls.h"
#include "core/json.h"
#include "service/request.h"

namespace edgellm {

class ChatTemplate;

struct ToolRequest {
  Json tools;         // OpenAI's "tools" array (checked by check_tools); null when absent
  ToolChoice choice;  // "auto" when absent
  bool parallel = true;  // OpenAI's parallel_tool_calls

  // Whether the reply is constrained to (possible) calls: tools given and the choice is not "none".
  bool active() const { return tools.is_array() && tools.size() > 0 && choice.kind != ToolChoiceKind::kNone; }
};

// The tools and the choice together: a choice that asks for a call ("required", a named function)
// needs tools, and a named function must be one of them. Throws Error(kInvalidArgument)
// "tool_choice: ..." (the tools themselves are checked by check_tools, "tools: ...").
void check_tool_choice(const ToolRequest& tools);

// A chat request (r.messages) with active tools made ready for the model that serves it: the call
// format its template uses, the call grammar as r.grammar_gbnf, and the tools either in the
// template's context (r.tools: templates that render tools) or, for the generic format, as a
// system prompt that teaches the JSON call shape. Returns the format the reply is parsed with.
// Throws Error(kInvalidArgument) "tools: ..." when the request is not a chat, carries another
// output constraint (grammar, json_schema, json_object), or a tool's parameters schema cannot be
// a grammar.
ToolCallFormat prepare_tool_request(const ChatTemplate& chat_template, const ToolRequest& tools, ServiceRequest& r);

// A reply with calls that ended by itself ends in tool calls (OpenAI's finish_reason
// "tool_calls"); one cut short (max_tokens, a deadline, a cancel) keeps its reason: a call cut
// short is not a call to run.
inline bool ends_in_tool_calls(bool has_calls, FinishReason reason) {
  return has_calls && reason == FinishReason::kStop;
}

}  // namespace edgellm
