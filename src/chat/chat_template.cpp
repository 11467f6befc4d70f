#include "chat/chat_template.h"

#include <fstream>
#include <sstream>
#include <sys/stat.h>

#include "chat/builtin_chat_templates.h"
#include "core/error.h"

namespace edgellm {

namespace {

// Largest template file load_chat_template_arg reads; real templates are a few KB (the longest
// tool-calling ones about 20 KB) and tokenizer_config.json files a few MB.
constexpr size_t kMaxTemplateFileBytes = size_t{64} << 20;

std::string joined_builtin_names() {
  std::string names;
  for (const auto& n : builtin_chat_template_names()) names += (names.empty() ? "" : ", ") + n;
  return names;
}

// bos_token / eos_token in tokenizer_config.json: a string, an AddedToken {content: ...}, or null.
std::string special_token_text(const Json& config, std::string_view key) {
  const Json* v = config.find(key);
  if (!v || v->is_null()) return "";
  if (v->is_string()) return v->as_string();
  if (v->is_object()) {
    if (const Json* c = v->find("content"); c && c->is_string()) return c->as_string();
  }
  throw Error(ErrorCode::kInvalidFile, "tokenizer config: '" + std::string(key) + "' is neither a string nor {content}");
}

std::string template_from_config(const Json& config) {
  const Json* t = config.find("chat_template");
  if (!t || t->is_null()) throw Error(ErrorCode::kInvalidFile, "tokenizer config has no chat_template");
  if (t->is_string()) return t->as_string();
  if (t->is_array()) {
    for (const auto& entry : t->as_array()) {
      const Json* name = entry.find("name");
      const Json* src = entry.find("template");
      if (name && name->is_string() && name->as_string() == "default" && src && src->is_string()) {
        return src->as_string();
      }
    }
    throw Error(ErrorCode::kInvalidFile, "tokenizer config: chat_template list has no 'default' entry");
  }
  throw Error(ErrorCode::kInvalidFile, "tokenizer config: chat_template is neither a string nor a list");
}

}  // namespace

ChatTemplate ChatTemplate::from_source(std::string jinja_source, std::string bos_token, std::string eos_token) {
  ChatTemplate t;
  t.template_ = jinja::Template::parse(jinja_source);
  t.source_ = std::move(jinja_source);
  t.bos_ = std::move(bos_token);
  t.eos_ = std::move(eos_token);
  return t;
}

ChatTemplate ChatTemplate::builtin(std::string_view name) {
  const BuiltinChatTemplate* b = find_builtin_chat_template(name);
  if (!b) {
    throw Error(ErrorCode::kInvalidArgument,
                "unknown built-in chat template '" + std::string(name) + "' (known: " + joined_builtin_names() + ")");
  }
  return from_source(std::string(b->source), std::string(b->bos_token), std::string(b->eos_token));
}

ChatTemplate ChatTemplate::from_tokenizer_config(const Json& config) {
  require(config.is_object(), ErrorCode::kInvalidFile, "tokenizer config is not a JSON object");
  return from_source(template_from_config(config), special_token_text(config, "bos_token"),
                     special_token_text(config, "eos_token"));
}

std::string ChatTemplate::render(const Json& messages, bool add_generation_prompt, const Json& extra_context) const {
  require(messages.is_array(), ErrorCode::kInvalidArgument, "chat messages must be a JSON array");
  for (size_t i = 0; i < messages.size(); ++i) {
    require(messages.at(i).is_object(), ErrorCode::kInvalidArgument,
            "chat message " + std::to_string(i) + " is not a JSON object");
  }
  require(extra_context.is_object(), ErrorCode::kInvalidArgument, "chat template extra context must be a JSON object");
  // The variables transformers passes: messages, tools, documents, add_generation_prompt and the
  // special tokens; extra keyword arguments come last and win.
  Json ctx = Json::object();
  ctx.set("messages", messages);
  ctx.set("tools", Json());
  ctx.set("documents", Json());
  ctx.set("add_generation_prompt", add_generation_prompt);
  ctx.set("bos_token", bos_);
  ctx.set("eos_token", eos_);
  for (const auto& kv : extra_context.as_object()) ctx.set(kv.first, kv.second);
  return template_.render(ctx, options_);
}

std::vector<std::string> builtin_chat_template_names() {
  size_t n = 0;
  const BuiltinChatTemplate* all = builtin_chat_templates(&n);
  std::vector<std::string> names;
  for (size_t i = 0; i < n; ++i) names.emplace_back(all[i].name);
  return names;
}

std::optional<std::string> find_builtin_source(std::string_view name) {
  const BuiltinChatTemplate* b = find_builtin_chat_template(name);
  if (!b) return std::nullopt;
  return std::string(b->source);
}

std::string detect_builtin_name(std::string_view src) {
  auto has = [&](std::string_view s) { return src.find(s) != std::string_view::npos; };
  if (has("<|im_start|>")) return has("You are a helpful assistant.") ? "qwen2" : "chatml";
  if (has("<|start_header_id|>")) return "llama3";
  if (has("<start_of_turn>")) return "gemma";
  if (has("[INST]")) return has("<<SYS>>") ? "llama2" : "mistral";
  if (has("<|user|>")) return has("<|end|>") ? "phi3" : "zephyr";
  if (has("### Instruction:")) return "deepseek-coder";
  if (has("'User: '") && has("Assistant:")) return "deepseek";
  return "";
}

std::string load_chat_template_arg(const std::string& name_or_file) {
  if (auto src = find_builtin_source(name_or_file)) return *src;
  struct stat st {};
  if (name_or_file.empty() || stat(name_or_file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    throw Error(ErrorCode::kInvalidArgument, "chat template '" + name_or_file +
                                                 "' is neither a built-in (" + joined_builtin_names() +
                                                 ") nor a readable file");
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxTemplateFileBytes) {
    throw Error(ErrorCode::kInvalidArgument, "chat template file '" + name_or_file + "' is too large");
  }
  std::ifstream in(name_or_file, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIo, "cannot open chat template file '" + name_or_file + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  // A tokenizer_config.json (or any JSON object with chat_template) is accepted as well.
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {
    Json config;
    try {
      config = Json::parse(text);
    } catch (const Error&) {
      // Not JSON: a Jinja template may start with '{' ({{ bos_token }}...); use it as is.
    }
    if (config.is_object() && config.find("chat_template")) return template_from_config(config);
  }
  return text;
}

}  // namespace edgellm
