// The structured-output fields of an OpenAI request body (docs/server.md "Structured output" and
// "Tool calls"), checked and turned into the ServiceRequest's constraint and the chat's tools.
//
//   response_format  {"type": "text"} | {"type": "json_object"} (any JSON object) |
//                    {"type": "json_schema", "json_schema": {"name", "schema", "strict"?, "description"?}}
//                    (OpenAI); {"type": "json_object", "schema": {...}} as llama-server
//   grammar          a GBNF string (llama-server); "" means none, as there
//   json_schema      a JSON Schema at the top level (llama-server)
//   tools            [{"type": "function", "function": {"name", "description"?, "parameters"?}}]
//   tool_choice      "none" | "auto" | "required" | {"type": "function", "function": {"name"}}
//   parallel_tool_calls  true (default) | false
//
// At most one constraint per request: response_format (json_object / json_schema), grammar,
// json_schema, or tools with a tool_choice other than "none" (whose grammar makes every call
// well-formed). Two are a 400 naming both. The schema and grammar texts themselves are compiled
// at submit (service/request_grammar.h): an unsupported keyword or a GBNF syntax error is a 400
// from there, naming the keyword or the line and column.
//
// Pure functions; throw ApiError 400 naming the field.
#pragma once

#include <string>

#include "core/json.h"
#include "runtime/tool_request.h"
#include "service/request.h"

namespace edgellm::server {

// response_format, grammar and json_schema -> r.json_object / r.json_schema / r.grammar_gbnf.
// `tools_active`: a tool grammar will be the constraint (refused together with another one).
// Returns the body field that holds the constraint ("response_format.json_schema.schema",
// "grammar", ...; "" for none): the `param` of a 400 when it does not compile at submit.
std::string parse_output_constraint(const Json& body, bool tools_active, ServiceRequest& r);

// tools, tool_choice, parallel_tool_calls (chat only; runtime/tool_request.h checks the choice).
ToolRequest parse_tool_request(const Json& body);

// One message's "tool_calls" (an assistant turn that called tools), checked:
// [{"id"?, "type"?: "function", "function": {"name", "arguments": JSON text or an object}}].
Json parse_message_tool_calls(const Json& calls, const std::string& where);

// runtime/tool_request.h's prepare_tool_request with its errors as 400s on "tools".
ToolCallFormat prepare_tool_request_400(const ChatTemplate& chat_template, const ToolRequest& tools, ServiceRequest& r);

}  // namespace edgellm::server
