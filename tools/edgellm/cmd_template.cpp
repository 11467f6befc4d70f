// `edgellm template`: renders a conversation with a model's chat template, without loading the
// weights or generating (the CLI twin of the server's POST /apply-template).
//   edgellm template -m MODEL --messages FILE [--chat-template NAME|FILE] [--no-generation-prompt]
// FILE holds a JSON array of {role, content} or an object {"messages": [...]}; "-" reads stdin.
#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "chat/chat_prompt.h"
#include "cli_args.h"
#include "command.h"
#include "generation_options.h"
#include "core/error.h"
#include "core/json.h"
#include "generation/chat_session.h"
#include "gguf/gguf_reader.h"
#include "server/api_error.h"
#include "server/openai_request.h"
#include "tokenizer/tokenizer.h"

namespace edgellm::cli {
namespace {

int cmd_template(const std::vector<std::string>& args) {
  ModelOptions model_opt;
  std::string messages_file;
  std::string chat_template;
  bool no_generation_prompt = false;
  ArgParser ap("template", "-m MODEL --messages FILE [options]");
  add_model_options(ap, &model_opt, "whose template (and BOS/EOS text) to use");
  ap.add_string("--messages", &messages_file, "FILE", "JSON array of {role, content} (or {\"messages\": [...]}); - = stdin");
  ap.add_string("--chat-template", &chat_template, "NAME|FILE", "another template instead of the model's own");
  ap.add_flag("--no-generation-prompt", &no_generation_prompt, "do not open an assistant turn at the end");
  if (!ap.parse(args)) return 0;
  if (model_opt.model.empty()) throw Error(ErrorCode::kInvalidArgument, "no model given (-m MODEL)");
  if (messages_file.empty()) throw Error(ErrorCode::kInvalidArgument, "--messages FILE is required");
  const std::string text = messages_file == "-" ? std::string(std::istreambuf_iterator<char>(std::cin), {})
                                                : read_text_file(messages_file, "messages file");
  Json doc;
  try {
    doc = Json::parse(text, 64);
  } catch (const Error& e) {
    throw Error(ErrorCode::kInvalidArgument, std::string("--messages: not valid JSON: ") + e.what());
  }
  const Json* messages = doc.is_object() ? doc.find("messages") : &doc;
  Json normalized;
  try {
    normalized = server::parse_messages(messages);
  } catch (const server::ApiError& e) {
    throw Error(ErrorCode::kInvalidArgument, std::string("--messages: ") + e.what());
  }
  const auto file = gguf::GgufFile::open(resolve_model_path(model_opt));
  const auto tokenizer = Tokenizer::from_gguf(*file);
  std::string description, warning;
  const ChatTemplate tmpl = select_chat_template(*file, *tokenizer, chat_template, &description, &warning);
  if (!warning.empty()) std::fprintf(stderr, "edgellm template: %s\n", warning.c_str());
  const std::string rendered = tmpl.render(normalized, !no_generation_prompt);
  std::fwrite(rendered.data(), 1, rendered.size(), stdout);
  return 0;
}

const CommandRegistration kTemplateRegistration("template", "render a conversation with the model's chat template",
                                        cmd_template);

}  // namespace
}  // namespace edgellm::cli
