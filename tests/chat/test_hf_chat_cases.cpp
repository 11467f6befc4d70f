// Golden test: every case in shared/testdata/tokenizers/{qwen3,llama3}/chat-cases.jsonl was
// rendered by Hugging Face transformers (jinja2, trim_blocks + lstrip_blocks) from the real
// chat_template in the matching tokenizer_config.json; we must reproduce it byte for byte.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "chat/chat_template.h"
#include "core/json.h"
#include "support/test_env.h"

namespace edgellm {
namespace {

void check_family(const std::string& family) {
  const std::string dir = test::shared_testdata("tokenizers/" + family);
  ASSERT_TRUE(test::file_exists(dir + "/tokenizer_config.json")) << dir;
  const Json config = Json::parse(test::read_file(dir + "/tokenizer_config.json"));
  const ChatTemplate tmpl = ChatTemplate::from_tokenizer_config(config);
  std::istringstream lines(test::read_file(dir + "/chat-cases.jsonl"));
  std::string line;
  int cases = 0;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    const Json c = Json::parse(line);
    const std::string got = tmpl.render(c.at("messages"), c.at("add_generation_prompt").as_bool());
    EXPECT_EQ(got, c.at("rendered").as_string()) << family << " case " << cases << ": " << line;
    ++cases;
  }
  EXPECT_GT(cases, 0) << "no cases in " << dir;
}

TEST(HfChatCases, Qwen3MatchesTransformers) { check_family("qwen3"); }
TEST(HfChatCases, Llama3MatchesTransformers) { check_family("llama3"); }

TEST(HfChatCases, SpecialTokensComeFromTheConfig) {
  const Json config = Json::parse(test::read_file(test::shared_testdata("tokenizers/llama3/tokenizer_config.json")));
  const ChatTemplate tmpl = ChatTemplate::from_tokenizer_config(config);
  EXPECT_EQ(tmpl.bos_token(), "<|begin_of_text|>");
  const std::string got = tmpl.render(Json::parse(R"([{"role":"user","content":"  hi  "}])"), true);
  // Llama 3 trims the content and puts BOS before the first header only.
  EXPECT_EQ(got,
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

}  // namespace
}  // namespace edgellm
