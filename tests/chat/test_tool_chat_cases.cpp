// Chat templates with tools, assistant tool calls and tool results, rendered by our Jinja engine
// byte for byte as Hugging Face transformers renders them (golden file
// tests/chat/testdata/tool-cases.jsonl, written by tests/chat/render_tool_cases.py with jinja2):
// Qwen2.5, Llama 3.1 and Llama 3.2 (tests/chat/templates/) and Qwen3 (the shared testdata's
// tokenizer_config.json). A template error (Llama 3.x refuses parallel calls) must be an error
// here too.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "chat/chat_template.h"
#include "core/error.h"
#include "core/json.h"
#include "support/test_env.h"

namespace edgellm {
namespace {

std::string template_source(const std::string& name) {
  if (name == "shared:qwen3") {
    const Json config = Json::parse(test::read_file(test::shared_testdata("tokenizers/qwen3/tokenizer_config.json")));
    return config.at("chat_template").as_string();
  }
  const std::string file = name == "qwen2.5" ? "qwen2.5-instruct.jinja" : name == "llama3.1" ? "llama-3.1-instruct.jinja"
                                                                                             : "llama-3.2-instruct.jinja";
  return test::read_file("tests/chat/templates/" + file);
}

TEST(ToolChatCases, EveryTemplateMatchesTransformers) {
  std::istringstream lines(test::read_file("tests/chat/testdata/tool-cases.jsonl"));
  std::string line;
  int cases = 0, errors = 0;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    const Json c = Json::parse(line);
    const std::string name = c.at("template").as_string();
    SCOPED_TRACE(name + " / " + c.at("conversation").as_string() + (c.at("tools").is_null() ? "" : " / tools"));
    ChatTemplate t = ChatTemplate::from_source(template_source(name), c.at("bos_token").as_string(),
                                               c.at("eos_token").as_string());
    t.options().fixed_time = 1721952000;  // 2024-07-26, as the reference renderer's strftime_now
    Json extra = Json::object();
    if (!c.at("tools").is_null()) extra.set("tools", c.at("tools"));
    if (const Json* err = c.find("error")) {
      try {
        t.render(c.at("messages"), c.at("add_generation_prompt").as_bool(), extra);
        ADD_FAILURE() << "rendered, but transformers raised: " << err->as_string();
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(err->as_string()), std::string::npos) << e.what();
      }
      ++errors;
    } else {
      EXPECT_EQ(t.render(c.at("messages"), c.at("add_generation_prompt").as_bool(), extra), c.at("rendered").as_string());
    }
    ++cases;
  }
  EXPECT_GE(cases, 30);
  EXPECT_GT(errors, 0);
}

}  // namespace
}  // namespace edgellm
