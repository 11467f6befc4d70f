#include "chat/chat_prompt.h"

#include <algorithm>
#include <optional>

#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "tokenizer/tokenizer.h"

namespace edgellm {
namespace {

// Text a template family closes an assistant turn with. When the vocabulary has it as an
// end-of-generation token, EOG detection ends the answer; otherwise (a base model under a
// fallback template writes "<|im_end|>" as plain characters) it must be a stop string.
std::vector<std::string> end_of_turn_texts(const ChatTemplate& t) {
  std::vector<std::string> out;
  const std::string family = detect_builtin_name(t.source());
  if (family == "chatml" || family == "qwen2") out.emplace_back("<|im_end|>");
  if (family == "llama3") out.emplace_back("<|eot_id|>");
  if (family == "gemma") out.emplace_back("<end_of_turn>");
  if (family == "phi3") out.emplace_back("<|end|>");
  if (!t.eos_token().empty()) out.push_back(t.eos_token());
  return out;
}

}  // namespace

std::vector<int32_t> chat_prompt_tokens(const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                                        const Json& messages, const Json& extra_context) {
  const std::string text = chat_template.render(messages, /*add_generation_prompt=*/true, extra_context);
  std::vector<int32_t> ids = tokenizer.encode(text, /*add_special=*/false, /*parse_special=*/true);
  // As llama.cpp: a template that writes bos_token itself already produced the BOS token (its
  // text parses as the control token); adding the vocabulary's BOS on top would double it.
  if (tokenizer.add_bos() && tokenizer.bos() >= 0 && (ids.empty() || ids.front() != tokenizer.bos())) {
    ids.insert(ids.begin(), tokenizer.bos());
  }
  require(!ids.empty(), ErrorCode::kInvalidArgument, "chat: the rendered conversation has no tokens");
  return ids;
}

std::vector<std::string> chat_stop_strings(const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                                           std::vector<std::string> stop) {
  for (const std::string& text : end_of_turn_texts(chat_template)) {
    const std::optional<int32_t> id = tokenizer.find_token(text);
    if (id && tokenizer.is_eog(*id)) continue;
    if (std::find(stop.begin(), stop.end(), text) == stop.end()) stop.push_back(text);
  }
  return stop;
}

std::string guess_builtin_template(const Tokenizer& tokenizer) {
  auto has = [&](std::string_view text) { return tokenizer.find_token(text).has_value(); };
  if (has("<|im_start|>")) return "chatml";
  if (has("<|start_header_id|>")) return "llama3";
  if (has("<start_of_turn>")) return "gemma";
  if (has("<|user|>") && has("<|end|>")) return "phi3";
  if (has("[INST]")) return "mistral";
  return "chatml";
}

ChatTemplate select_chat_template(const gguf::GgufFile& file, const Tokenizer& tokenizer,
                                  const std::string& override_arg, std::string* description,
                                  std::string* warning) {
  std::string source;
  std::string desc;
  std::string warn;
  if (!override_arg.empty()) {
    source = load_chat_template_arg(override_arg);
    desc = find_builtin_source(override_arg) ? "built-in '" + override_arg + "'" : "file '" + override_arg + "'";
  } else if (std::optional<std::string> own = file.get_string("tokenizer.chat_template"); own && !own->empty()) {
    source = std::move(*own);
    const std::string family = detect_builtin_name(source);
    desc = "the model's tokenizer.chat_template" + (family.empty() ? std::string() : " (" + family + " format)");
  } else {
    const std::string name = guess_builtin_template(tokenizer);
    source = *find_builtin_source(name);
    desc = "built-in '" + name + "'";
    warn = "the model has no chat template (tokenizer.chat_template); using the built-in '" + name +
           "' (choose another with --chat-template)";
  }
  const std::string bos = tokenizer.bos() >= 0 ? tokenizer.token_text(tokenizer.bos()) : std::string();
  const std::string eos = tokenizer.eos() >= 0 ? tokenizer.token_text(tokenizer.eos()) : std::string();
  ChatTemplate t = ChatTemplate::from_source(std::move(source), bos, eos);
  if (description != nullptr) *description = std::move(desc);
  if (warning != nullptr) *warning = std::move(warn);
  return t;
}

}  // namespace edgellm
