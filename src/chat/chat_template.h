// Chat formatting: turns a list of {role, content, ...} messages into the prompt text a model was
// trained on, by rendering the model's Hugging Face chat template (Jinja) exactly as transformers'
// apply_chat_template does. Built-in templates cover models whose GGUF carries none.
//
//   auto t = ChatTemplate::builtin("chatml");
//   t.render(Json::parse(R"([{"role":"user","content":"Hi"}])"), /*add_generation_prompt=*/true);
//   // "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/jinja_template.h"
#include "core/json.h"

namespace edgellm {

class ChatTemplate {
 public:
  // Throws Error(kInvalidArgument) with line/column when the template does not parse.
  static ChatTemplate from_source(std::string jinja_source, std::string bos_token, std::string eos_token);
  // A built-in template by name (see builtin_chat_template_names()), with that model family's
  // usual BOS/EOS text. Throws Error(kInvalidArgument) naming the known templates otherwise.
  static ChatTemplate builtin(std::string_view name);
  // From a tokenizer_config.json: chat_template may be a string or a list of {name, template}
  // (the "default" entry is used); bos_token/eos_token may be strings or {content: ...} objects.
  static ChatTemplate from_tokenizer_config(const Json& config);

  // messages: JSON array of message objects. extra_context: more template variables (tools,
  // documents, enable_thinking, ...) that override the defaults. As in transformers, `tools` and
  // `documents` are none unless given. Throws Error(kInvalidArgument) on template errors,
  // including raise_exception() calls (e.g. "Conversation roles must alternate ...").
  std::string render(const Json& messages, bool add_generation_prompt,
                     const Json& extra_context = Json::object()) const;

  const std::string& source() const { return source_; }
  const std::string& bos_token() const { return bos_; }
  const std::string& eos_token() const { return eos_; }
  // Limits and the clock used by strftime_now() (tests pin the date).
  jinja::RenderOptions& options() { return options_; }

 private:
  jinja::Template template_;
  std::string source_;
  std::string bos_;
  std::string eos_;
  jinja::RenderOptions options_;
};

// Names accepted by ChatTemplate::builtin, in a stable order.
std::vector<std::string> builtin_chat_template_names();
// The Jinja source of a built-in template, or nullopt for an unknown name.
std::optional<std::string> find_builtin_source(std::string_view name);
// The built-in whose format a template source uses ("chatml", "llama3", ...), or "" when the
// source does not look like any of them. Useful to pick stop strings or a fallback.
std::string detect_builtin_name(std::string_view template_source);
// A CLI --chat-template argument: a built-in name, or a path to a file holding a Jinja template
// (or a tokenizer_config.json with a chat_template). Returns the template source. Throws
// Error(kInvalidArgument) naming the argument when it is neither.
std::string load_chat_template_arg(const std::string& name_or_file);

}  // namespace edgellm
