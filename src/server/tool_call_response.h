// Tool calls in OpenAI's chat response shapes (docs/server.md "Tool calls"): the reply the model
// generated under a tool grammar, parsed by chat/tool_calls.h's ToolCallParser, becomes
//
//   not streamed  choices[0].message = {"role": "assistant", "content": <text> | null,
//                   "tool_calls": [{"id": "call_...", "type": "function",
//                                   "function": {"name": ..., "arguments": "<JSON text>"}}]}
//                 finish_reason "tool_calls" when the reply has calls
//   streamed      chunks with delta {"tool_calls": [{"index": 0, "id", "type": "function",
//                   "function": {"name", "arguments": ""}}]} for a call's start, then
//                   delta {"tool_calls": [{"index": 0, "function": {"arguments": "<more>"}}]};
//                 content text as usual; the last chunk's finish_reason "tool_calls"
//
// Pure functions over the bodies openai_response.h builds.
#pragma once

#include <cstdint>
#include <vector>

#include "chat/tool_calls.h"
#include "core/json.h"
#include "server/openai_response.h"

namespace edgellm::server {

// A streamed chunk carrying tool-call deltas (x_edgellm.tokens / decode_ms as text_chunk's).
Json tool_calls_chunk(const ResponseHead& head, const std::vector<ToolCallDelta>& calls, int32_t tokens,
                      double decode_ms, bool include_usage);

// The whole-answer body (completion_body's) with the parsed reply: content and tool_calls; the
// finish_reason "tool_calls" when there are calls and the reply ended by itself ("length" stays:
// a call cut short by max_tokens is not a call to run).
Json with_tool_calls(Json body, const std::string& content, const std::vector<ToolCall>& calls, FinishReason reason);

// The finish_reason of choices[0] set to `reason` (the last streamed chunk of a reply with calls).
void set_finish_reason(Json& body, const char* reason);

// "tool_calls" when a reply with calls ended by itself, else openai_finish_reason's.
const char* tool_finish_reason(bool has_calls, FinishReason reason);

}  // namespace edgellm::server
