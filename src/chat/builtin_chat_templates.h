// The table of built-in chat templates: the Jinja sources published with each model family's
// tokenizer_config.json, and the BOS/EOS text those tokenizers use.
#pragma once

#include <string_view>

namespace edgellm {

struct BuiltinChatTemplate {
  std::string_view name;
  std::string_view source;
  std::string_view bos_token;
  std::string_view eos_token;
};

// All built-ins; the span ends with the last entry (no sentinel).
const BuiltinChatTemplate* builtin_chat_templates(size_t* count);
const BuiltinChatTemplate* find_builtin_chat_template(std::string_view name);

}  // namespace edgellm
