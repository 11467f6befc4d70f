// A conversation as the model's prompt: which chat template a model uses, the prompt ids of a
// conversation, and the end-of-turn texts that must act as stop strings. Shared by every
// generation path (the service, the CLI's chat, the server's helpers), so a conversation is
// rendered the same way whichever face it came from.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "core/json.h"

namespace edgellm {

namespace gguf {
class GgufFile;
}
class Tokenizer;

// The prompt ids of a conversation (a JSON array of {role, content}): rendered with
// add_generation_prompt, tokenized with special tokens parsed, BOS prepended when the vocabulary
// asks for it and the rendering does not already start with it. Throws Error(kInvalidArgument)
// when the template rejects the conversation or renders nothing.
std::vector<int32_t> chat_prompt_tokens(const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                                        const Json& messages, const Json& extra_context = Json::object());

// `stop` plus the text the template family closes an assistant turn with ("<|im_end|>", ...),
// for those the vocabulary does not already end generation on as a control token.
std::vector<std::string> chat_stop_strings(const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                                           std::vector<std::string> stop);

// The chat template for a model, in priority order: `override_arg` (a built-in name or a file, as
// load_chat_template_arg), the GGUF's tokenizer.chat_template, else a built-in guessed from the
// vocabulary's control tokens ("chatml" when nothing matches) and *warning is set to say so.
// BOS/EOS text comes from the vocabulary. *description names what was chosen.
ChatTemplate select_chat_template(const gguf::GgufFile& file, const Tokenizer& tokenizer,
                                  const std::string& override_arg, std::string* description,
                                  std::string* warning);

// The built-in whose control tokens the vocabulary has ("llama3" for <|start_header_id|>, ...),
// or "chatml".
std::string guess_builtin_template(const Tokenizer& tokenizer);

}  // namespace edgellm
