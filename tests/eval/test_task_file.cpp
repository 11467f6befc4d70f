// The task file of `edgellm eval` (tools/eval/task_file.h): every field, and every refusal with
// the line and field named, for hostile or mistyped files (nothing is silently skipped).
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "core/sha256.h"
#include "support/test_env.h"
#include "tools/eval/task_file.h"

namespace edgellm::eval {
namespace {

std::string refusal(const std::string& text) {
  try {
    parse_task_lines(text);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidFile) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "accepted: " << text;
  return {};
}

TEST(TaskFile, ParsesEveryField) {
  const std::string text =
      "\xEF\xBB\xBF{\"id\": \"a\", \"prompt\": \"p1\", \"reference\": \"r1\", \"metric\": \"rouge\", \"max_tokens\": "
      "7, "
      "\"stop\": [\"\\n\"]}\r\n"
      "\n   \n"
      "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"references\": [\"x\", \"y\"], \"metric\": "
      "\"qa\"}\n"
      "{\"prompt\": \"p3\", \"reference\": \"pos\", \"labels\": [\"pos\", \"neg\"], \"metric\": \"accuracy\"}\n"
      "{\"prompt\": \"p4\", \"reference\": \"r\", \"metric\": \"bleu\"}";
  const auto cases = parse_task_lines(text);
  ASSERT_EQ(cases.size(), 4u);
  EXPECT_EQ(cases[0].id, "a");
  EXPECT_EQ(cases[0].prompt, "p1");
  EXPECT_EQ(cases[0].max_tokens, 7);
  ASSERT_TRUE(cases[0].stop.has_value());
  EXPECT_EQ(*cases[0].stop, std::vector<std::string>{"\n"});
  EXPECT_EQ(cases[1].id, "line-4");
  EXPECT_EQ(cases[1].line, 4);
  EXPECT_TRUE(cases[1].messages.is_array());
  EXPECT_EQ(cases[1].references, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(cases[1].metric, Metric::kQa);
  EXPECT_FALSE(cases[1].max_tokens.has_value());
  EXPECT_EQ(cases[2].labels.size(), 2u);
  EXPECT_EQ(cases[3].metric, Metric::kBleu);
}

TEST(TaskFile, RefusesWithLineAndField) {
  EXPECT_NE(refusal("").find("no case"), std::string::npos);
  EXPECT_NE(refusal("{\"prompt\": \"p\", \"reference\": \"r\"").find("line 1: malformed JSON"), std::string::npos);
  EXPECT_NE(refusal("[1]").find("not a JSON object"), std::string::npos);
  const std::string ok = "{\"prompt\": \"p\", \"reference\": \"r\", \"metric\": \"rouge\"}\n";
  EXPECT_NE(refusal(ok + "{\"prompt\": \"p\", \"refrence\": \"r\", \"metric\": \"rouge\"}")
                .find("line 2: unknown field \"refrence\""),
            std::string::npos);
  EXPECT_NE(
      refusal("{\"prompt\": \"p\", \"reference\": \"r\", \"metric\": \"meteor\"}").find("unknown metric 'meteor'"),
      std::string::npos);
  EXPECT_NE(refusal("{\"prompt\": \"p\", \"metric\": \"rouge\"}").find("no \"reference\""), std::string::npos);
  EXPECT_NE(refusal("{\"prompt\": \"p\", \"reference\": \"r\"}").find("no \"metric\""), std::string::npos);
  EXPECT_NE(refusal("{\"reference\": \"r\", \"metric\": \"rouge\"}").find("exactly one of"), std::string::npos);
  EXPECT_NE(
      refusal("{\"prompt\": \"p\", \"messages\": [{\"role\": \"user\", \"content\": \"c\"}], \"reference\": \"r\", "
              "\"metric\": \"rouge\"}")
          .find("exactly one of"),
      std::string::npos);
  EXPECT_NE(refusal("{\"prompt\": \"\", \"reference\": \"r\", \"metric\": \"rouge\"}").find("empty"),
            std::string::npos);
  EXPECT_NE(refusal("{\"prompt\": \"p\", \"references\": [], \"metric\": \"rouge\"}").find("must not be empty"),
            std::string::npos);
  EXPECT_NE(refusal("{\"prompt\": \"p\", \"references\": [1], \"metric\": \"rouge\"}").find("must be a string"),
            std::string::npos);
  EXPECT_NE(refusal("{\"prompt\": \"p\", \"reference\": \"r\", \"references\": [\"s\"], \"metric\": \"rouge\"}")
                .find("not both"),
            std::string::npos);
  EXPECT_NE(
      refusal("{\"prompt\": \"p\", \"reference\": \"r\", \"metric\": \"rouge\", \"max_tokens\": 0}").find("max_tokens"),
      std::string::npos);
  EXPECT_NE(refusal("{\"prompt\": \"p\", \"reference\": \"r\", \"metric\": \"rouge\", \"max_tokens\": 1.5}")
                .find("max_tokens"),
            std::string::npos);
  EXPECT_NE(refusal("{\"prompt\": \"p\", \"reference\": \"r\", \"metric\": \"rouge\", \"labels\": [\"a\"]}")
                .find("accuracy only"),
            std::string::npos);
  EXPECT_NE(refusal("{\"messages\": [{\"role\": \"user\"}], \"reference\": \"r\", \"metric\": \"rouge\"}")
                .find("\"role\" and \"content\""),
            std::string::npos);
  EXPECT_NE(refusal("{\"messages\": [], \"reference\": \"r\", \"metric\": \"rouge\"}").find("non-empty array"),
            std::string::npos);
  EXPECT_NE(
      refusal("{\"id\": \"x\", " + ok.substr(1) + "{\"id\": \"x\", " + ok.substr(1)).find("line 2: duplicate id 'x'"),
      std::string::npos);
  // Invalid UTF-8 inside a string (raw bytes are legal JSON to the parser; the task file refuses them).
  EXPECT_NE(
      refusal("{\"prompt\": \"p\xff\", \"reference\": \"r\", \"metric\": \"rouge\"}").find("not valid UTF-8 (byte 1)"),
      std::string::npos);
  // Deeply nested JSON is refused by the parser's depth limit, not a stack overflow.
  EXPECT_NE(refusal(std::string(100000, '[')).find("malformed JSON"), std::string::npos);
}

TEST(TaskFile, ReadsFileWithItsDigest) {
  const std::string path = test::temp_dir() + "/tasks.jsonl";
  const std::string text = "{\"prompt\": \"p\", \"reference\": \"r\", \"metric\": \"bleu\"}\n";
  {
    FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
  const TaskFile tf = read_task_file(path);
  EXPECT_EQ(tf.sha256, Sha256::hex_of(text));
  EXPECT_EQ(tf.cases.size(), 1u);
  try {
    read_task_file(test::temp_dir() + "/missing.jsonl");
    ADD_FAILURE() << "a missing file was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
  }
}

}  // namespace
}  // namespace edgellm::eval
