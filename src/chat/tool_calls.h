// Tool calling, the library half (docs/structured-output.md "Tool calls"): how a model family
// writes calls, the grammar that makes every call well-formed with arguments that follow the
// tool's "parameters" schema, and the incremental parser that turns the generated text back into
// OpenAI-style content and tool calls (streamed as deltas).
//
// Formats:
//   kHermes     Qwen2.5 / Qwen3 / Hermes: text, then one or more
//                 <tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>
//   kLlama3Json Llama 3.1 / 3.2 / 3.3 custom tools: the reply is the call itself,
//                 {"name": "get_weather", "parameters": {"city": "Paris"}}
//               (several separated by ";" when parallel calls are allowed)
//   kGeneric    any other model: a system prompt (generic_tool_system_prompt) asks for one JSON
//               object, {"tool_calls": [{"name": ..., "arguments": {...}}, ...]} or
//               {"response": "text"}, and the grammar enforces it.
//
// tool_choice: "none" (no grammar; the caller renders no tools), "auto" (free text, or calls: the
// grammar constrains a call from its first character on; Hermes free text is any text without
// "<tool_call>"), "required" (one or more calls), a named function (exactly one call of it).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"

namespace edgellm {

enum class ToolCallFormat { kHermes, kLlama3Json, kGeneric };

// "hermes", "llama3-json", "generic".
const char* tool_call_format_name(ToolCallFormat format);
// The format a chat template's model uses: "<tool_call>" in the source -> kHermes; a Llama 3.x
// custom-tool instruction ("\"parameters\": dictionary of argument name") -> kLlama3Json;
// anything else (including templates without tool support) -> kGeneric.
ToolCallFormat detect_tool_call_format(std::string_view template_source);

enum class ToolChoiceKind { kNone, kAuto, kRequired, kFunction };
struct ToolChoice {
  ToolChoiceKind kind = ToolChoiceKind::kAuto;
  std::string function;  // kFunction
};
// OpenAI's tool_choice: "none" | "auto" | "required" | {"type": "function", "function": {"name": ...}}
// (null: auto). Throws Error(kInvalidArgument) naming what is wrong.
ToolChoice parse_tool_choice(const Json& value);

// Checks an OpenAI "tools" array ([{"type": "function", "function": {"name", "description"?,
// "parameters"?}}]): names unique and made of [A-Za-z0-9_-.], parameters an object schema.
// Throws Error(kInvalidArgument) naming the tool and the problem.
void check_tools(const Json& tools);

// OpenAI chat messages as the Hugging Face templates expect them: tool_calls[].function.arguments
// as an object (OpenAI sends a JSON string), content null -> "", content parts
// ([{"type": "text", "text": ...}]) joined into one string. Other fields are kept.
Json normalize_chat_messages(const Json& messages);

struct ToolCallGrammarOptions {
  ToolCallFormat format = ToolCallFormat::kHermes;
  ToolChoice choice;
  bool parallel = true;  // OpenAI's parallel_tool_calls: more than one call in a reply
};

// GBNF for a reply under `options` (checks the tools first). Empty for tool_choice "none" (and
// for "auto" with no tools): generate unconstrained. Throws Error(kInvalidArgument) for a named
// function that is not among the tools, or a parameters schema the converter refuses (naming
// the tool and the keyword).
std::string tool_call_gbnf(const Json& tools, const ToolCallGrammarOptions& options);

// The system prompt that teaches the generic format to a model (kGeneric).
std::string generic_tool_system_prompt(const Json& tools, const ToolChoice& choice);

struct ToolCall {
  std::string id;         // "call_" + 24 letters and digits, unique per parser
  std::string name;
  std::string arguments;  // the arguments object as JSON text
};

// One piece of a streamed tool call, in OpenAI's delta shape: the first delta of a call carries
// its id and name; later ones append to its arguments text.
struct ToolCallDelta {
  int index = 0;
  std::string id;
  std::string name;
  std::string arguments;
};

struct ToolCallEvents {
  std::string content;                // text of the reply that became final
  std::vector<ToolCallDelta> calls;   // tool-call deltas that became final
};

// Incremental parser of a model's reply. push() the generated text as it arrives (any split,
// even inside a UTF-8 character or a tag); it holds back what may still turn into a call.
// finish() at the end of generation releases the rest. A call that does not parse (a truncated
// reply) is released as content. Not thread-safe (one per generation).
class ToolCallParser {
 public:
  explicit ToolCallParser(ToolCallFormat format, uint64_t id_seed = 0);

  ToolCallEvents push(std::string_view text);
  ToolCallEvents finish();

  // The whole reply so far: content without the calls, and the complete calls.
  const std::string& content() const { return content_; }
  const std::vector<ToolCall>& tool_calls() const { return calls_; }

 private:
  ToolCallEvents scan(bool at_end);
  bool try_call_at(size_t pos, bool at_end, size_t* consumed, ToolCallEvents& out);
  void emit_content(std::string_view text, ToolCallEvents& out);
  std::string next_id();

  ToolCallFormat format_;
  uint64_t rng_;
  std::string buffer_;       // text not yet released
  std::string content_;
  std::vector<ToolCall> calls_;
  bool decided_ = false;     // kLlama3Json / kGeneric: whether the reply is calls or text is known
  bool json_reply_ = false;  // ... and it is JSON calls
  size_t streamed_args_ = 0; // of the call in progress: argument bytes already sent as deltas
  bool call_open_ = false;   // a call's id and name were sent, its arguments are streaming
  bool after_call_ = false;  // the last thing parsed was a call: separators before the next are not content
};

}  // namespace edgellm
