// ChatTemplate: the built-in templates rendered to expected prompts worked out by hand from each
// template's text (and the jinja2 whitespace rules), Qwen3's real template with tools, tool calls,
// tool responses and <think> handling, and the helpers around templates.
#include <gtest/gtest.h>

#include <fstream>

#include "chat/chat_template.h"
#include "core/error.h"
#include "support/test_env.h"

namespace edgellm {
namespace {

// system + user + assistant + user, the conversation most expectations below use.
const char* kConversation = R"([
  {"role": "system", "content": "You are a helpful assistant"},
  {"role": "user", "content": "Hello"},
  {"role": "assistant", "content": "Hi there"},
  {"role": "user", "content": "Who are you"}])";
// The same without the system message.
const char* kNoSystem = R"([
  {"role": "user", "content": "Hello"},
  {"role": "assistant", "content": "Hi there"},
  {"role": "user", "content": "Who are you"}])";

std::string render_builtin(const char* name, const char* messages, bool add_generation_prompt) {
  return ChatTemplate::builtin(name).render(Json::parse(messages), add_generation_prompt);
}

TEST(ChatTemplateBuiltins, Chatml) {
  EXPECT_EQ(render_builtin("chatml", kConversation, true),
            "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n"
            "<|im_start|>user\nHello<|im_end|>\n"
            "<|im_start|>assistant\nHi there<|im_end|>\n"
            "<|im_start|>user\nWho are you<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(render_builtin("chatml", R"([{"role": "user", "content": "x"}])", false), "<|im_start|>user\nx<|im_end|>\n");
}

TEST(ChatTemplateBuiltins, Qwen2AddsDefaultSystemPrompt) {
  EXPECT_EQ(render_builtin("qwen2", kNoSystem, true),
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nHello<|im_end|>\n"
            "<|im_start|>assistant\nHi there<|im_end|>\n"
            "<|im_start|>user\nWho are you<|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(ChatTemplateBuiltins, Llama3) {
  EXPECT_EQ(render_builtin("llama3", kConversation, true),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHi there<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nWho are you<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplateBuiltins, Llama2FoldsSystemIntoFirstTurn) {
  EXPECT_EQ(render_builtin("llama2", kConversation, true),
            "<s>[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST] Hi there </s>"
            "<s>[INST] Who are you [/INST]");
}

TEST(ChatTemplateBuiltins, Mistral) {
  EXPECT_EQ(render_builtin("mistral", kNoSystem, true), "<s>[INST] Hello [/INST]Hi there</s>[INST] Who are you [/INST]");
  // A system message breaks the user/assistant alternation the template enforces.
  try {
    render_builtin("mistral", kConversation, true);
    FAIL() << "expected raise_exception";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Conversation roles must alternate user/assistant/user/assistant/..."),
              std::string::npos);
  }
}

TEST(ChatTemplateBuiltins, Phi3) {
  const std::string body =
      "<|system|>\nYou are a helpful assistant<|end|>\n<|user|>\nHello<|end|>\n"
      "<|assistant|>\nHi there<|end|>\n<|user|>\nWho are you<|end|>\n";
  EXPECT_EQ(render_builtin("phi3", kConversation, true), body + "<|assistant|>\n");
  // Without a generation prompt the template closes with the EOS token.
  EXPECT_EQ(render_builtin("phi3", kConversation, false), body + "<|endoftext|>");
}

TEST(ChatTemplateBuiltins, GemmaTrimsContentAndRenamesAssistant) {
  const char* messages = R"([
    {"role": "user", "content": "Hello"},
    {"role": "assistant", "content": "  Hi there \n"},
    {"role": "user", "content": "Who are you"}])";
  EXPECT_EQ(render_builtin("gemma", messages, true),
            "<bos><start_of_turn>user\nHello<end_of_turn>\n"
            "<start_of_turn>model\nHi there<end_of_turn>\n"
            "<start_of_turn>user\nWho are you<end_of_turn>\n"
            "<start_of_turn>model\n");
  EXPECT_THROW(render_builtin("gemma", kConversation, true), Error);  // "System role not supported"
}

TEST(ChatTemplateBuiltins, Deepseek) {
  EXPECT_EQ(render_builtin("deepseek", kConversation, true),
            "<\xEF\xBD\x9C" "begin\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>"
            "You are a helpful assistant\n\nUser: Hello\n\nAssistant: Hi there"
            "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>"
            "User: Who are you\n\nAssistant:");
}

TEST(ChatTemplateBuiltins, DeepseekCoderWhitespace) {
  // Multi-line template: `-` markers and trim_blocks remove every layout newline; the one after
  // '### Response:' survives because only lstrip_blocks (not `-`) applies before {% endif %}.
  EXPECT_EQ(render_builtin("deepseek-coder", kNoSystem, true),
            "<\xEF\xBD\x9C" "begin\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>"
            "You are an AI programming assistant, utilizing the Deepseek Coder model, developed by Deepseek "
            "Company, and you only answer questions related to computer science. For politically sensitive "
            "questions, security and privacy issues, and other non-computer science questions, you will refuse "
            "to answer\n"
            "### Instruction:\nHello\n### Response:\nHi there\n<|EOT|>\n### Instruction:\nWho are you\n"
            "### Response:\n");
  // With a system message the default preamble is replaced by it, glued to the first turn.
  EXPECT_EQ(render_builtin("deepseek-coder", kConversation, false),
            "<\xEF\xBD\x9C" "begin\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>"
            "You are a helpful assistant### Instruction:\nHello\n### Response:\nHi there\n<|EOT|>\n"
            "### Instruction:\nWho are you\n");
}

TEST(ChatTemplateBuiltins, ZephyrOneStatementPerLine) {
  EXPECT_EQ(render_builtin("zephyr", kConversation, true),
            "<|system|>\nYou are a helpful assistant</s>\n<|user|>\nHello</s>\n"
            "<|assistant|>\nHi there</s>\n<|user|>\nWho are you</s>\n<|assistant|>\n");
}

TEST(ChatTemplateBuiltins, EveryBuiltinParsesAndRenders) {
  for (const auto& name : builtin_chat_template_names()) {
    auto src = find_builtin_source(name);
    ASSERT_TRUE(src.has_value()) << name;
    EXPECT_EQ(detect_builtin_name(*src), name) << "detect_builtin_name does not recognise " << name;
    const std::string out = render_builtin(name.c_str(), R"([{"role": "user", "content": "ping"}])", true);
    EXPECT_NE(out.find("ping"), std::string::npos) << name;
  }
  EXPECT_FALSE(find_builtin_source("no-such-template").has_value());
  EXPECT_THROW(ChatTemplate::builtin("no-such-template"), Error);
  EXPECT_EQ(detect_builtin_name("{{ messages }}"), "");
}

// ---------------------------------------------------------------- Qwen3's real template

ChatTemplate qwen3() {
  return ChatTemplate::from_tokenizer_config(
      Json::parse(test::read_file(test::shared_testdata("tokenizers/qwen3/tokenizer_config.json"))));
}

TEST(ChatTemplateQwen3, ToolsToolCallsAndToolResponses) {
  const Json messages = Json::parse(R"([
    {"role": "system", "content": "Sys"},
    {"role": "user", "content": "What's the weather in Paris?"},
    {"role": "assistant", "content": "", "tool_calls": [
      {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
    {"role": "tool", "content": "{\"temp\": 20}"},
    {"role": "tool", "content": "sunny"},
    {"role": "assistant", "content": "<think>\nreason\n</think>\n\nIt is 20C."}])");
  Json extra = Json::object();
  extra.set("tools", Json::parse(R"([{"type": "function", "function": {"name": "get_weather",
      "description": "Get weather", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])"));
  const std::string expected =
      "<|im_start|>system\nSys\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
      "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
      R"({"type": "function", "function": {"name": "get_weather", "description": "Get weather", "parameters": )"
      R"({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}})"
      "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
      "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
      "<args-json-object>}\n</tool_call><|im_end|>\n"
      "<|im_start|>user\nWhat's the weather in Paris?<|im_end|>\n"
      // Empty content: no newline before the first tool call.
      "<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
      "</tool_call><|im_end|>\n"
      // Consecutive tool messages share one user turn.
      "<|im_start|>user\n<tool_response>\n{\"temp\": 20}\n</tool_response>\n<tool_response>\nsunny\n"
      "</tool_response><|im_end|>\n"
      // The last assistant turn after the last real query keeps its reasoning.
      "<|im_start|>assistant\n<think>\nreason\n</think>\n\nIt is 20C.<|im_end|>\n";
  EXPECT_EQ(qwen3().render(messages, false, extra), expected);
}

TEST(ChatTemplateQwen3, HistoryThinkingDroppedAndThinkingDisabled) {
  const Json messages = Json::parse(R"([
    {"role": "user", "content": "q1"},
    {"role": "assistant", "content": "<think>r1</think>a1"},
    {"role": "user", "content": "q2"}])");
  Json extra = Json::object();
  extra.set("enable_thinking", false);
  EXPECT_EQ(qwen3().render(messages, true, extra),
            "<|im_start|>user\nq1<|im_end|>\n<|im_start|>assistant\na1<|im_end|>\n"
            "<|im_start|>user\nq2<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  // enable_thinking left undefined: no empty think block.
  EXPECT_EQ(qwen3().render(messages, true),
            "<|im_start|>user\nq1<|im_end|>\n<|im_start|>assistant\na1<|im_end|>\n"
            "<|im_start|>user\nq2<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplateQwen3, TextPlusSeveralToolCalls) {
  const Json messages = Json::parse(R"([
    {"role": "user", "content": "q"},
    {"role": "assistant", "content": "text", "tool_calls": [
      {"name": "f", "arguments": "{\"x\": 1}"},
      {"function": {"name": "g", "arguments": {"y": [1, 2]}}}]}])");
  EXPECT_EQ(qwen3().render(messages, false),
            "<|im_start|>user\nq<|im_end|>\n"
            "<|im_start|>assistant\n<think>\n\n</think>\n\ntext\n"
            "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1}}\n</tool_call>\n"
            "<tool_call>\n{\"name\": \"g\", \"arguments\": {\"y\": [1, 2]}}\n</tool_call><|im_end|>\n");
}

// ---------------------------------------------------------------- helpers

TEST(ChatTemplateHelpers, TokenizerConfigVariants) {
  // chat_template as a list of named templates; special tokens as AddedToken objects.
  const Json config = Json::parse(R"({
    "bos_token": {"content": "<s>", "lstrip": false},
    "eos_token": "</s>",
    "chat_template": [{"name": "tool_use", "template": "TOOLS"},
                      {"name": "default", "template": "{{ bos_token }}{{ messages[0].content }}{{ eos_token }}"}]})");
  const ChatTemplate t = ChatTemplate::from_tokenizer_config(config);
  EXPECT_EQ(t.render(Json::parse(R"([{"role": "user", "content": "x"}])"), false), "<s>x</s>");
  EXPECT_THROW(ChatTemplate::from_tokenizer_config(Json::parse(R"({"eos_token": "</s>"})")), Error);
}

TEST(ChatTemplateHelpers, LoadChatTemplateArg) {
  EXPECT_EQ(load_chat_template_arg("chatml"), *find_builtin_source("chatml"));
  const std::string path = test::temp_dir() + "/custom.jinja";
  {
    std::ofstream out(path);
    out << "{{ bos_token }}{% for m in messages %}[{{ m.content }}]{% endfor %}";
  }
  EXPECT_EQ(load_chat_template_arg(path), "{{ bos_token }}{% for m in messages %}[{{ m.content }}]{% endfor %}");
  const std::string config_path = test::temp_dir() + "/tokenizer_config.json";
  {
    std::ofstream out(config_path);
    out << R"({"chat_template": "{{ messages | length }}"})";
  }
  EXPECT_EQ(load_chat_template_arg(config_path), "{{ messages | length }}");
  try {
    load_chat_template_arg("/no/such/file.jinja");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/no/such/file.jinja"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("chatml"), std::string::npos);  // lists the built-ins
  }
}

TEST(ChatTemplateHelpers, ExtraContextAndDefaults) {
  const ChatTemplate t = ChatTemplate::from_source(
      "{{ tools is none }}|{{ tools is defined }}|{{ add_generation_prompt }}|{{ custom }}|{{ strftime_now('%Y') }}",
      "", "");
  ChatTemplate pinned = t;
  pinned.options().fixed_time = 1721001600;
  Json extra = Json::object();
  extra.set("custom", "c");
  EXPECT_EQ(pinned.render(Json::array(), true, extra), "True|True|True|c|2024");
  EXPECT_THROW(t.render(Json::object(), true), Error);                       // messages must be a list
  EXPECT_THROW(t.render(Json::parse("[1]"), true), Error);                   // of objects
  EXPECT_THROW(ChatTemplate::from_source("{% if %}", "", ""), Error);        // parse errors surface early
}

}  // namespace
}  // namespace edgellm
