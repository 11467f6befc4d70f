// testdata/reference/*-greedy.jsonl were produced by an established engine: prompt_ids is its
// tokenization of `prompt` with BOS, output_text its detokenization of the generated
// output_ids (continuing after the prompt, so no leading space is dropped; control tokens are
// rendered: one stories260K continuation runs into a new story and shows its "<s>").
#include <gtest/gtest.h>

#include <sstream>

#include "tokenizer/streaming_decoder.h"
#include "tokenizer_test_util.h"

namespace edgellm {
namespace {

class ReferencePromptTest : public ::testing::TestWithParam<std::pair<std::string, std::string>> {};

TEST_P(ReferencePromptTest, PromptIdsAndOutputText) {
  const auto& [model, reference] = GetParam();
  const auto tok = test::load_gguf_tokenizer(test::shared_model(model));
  std::istringstream lines(test::read_file(test::shared_testdata("reference/" + reference)));
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    const Json c = Json::parse(line);
    const std::string& prompt = c.at("prompt").as_string();
    std::vector<int32_t> prompt_ids, output_ids;
    for (const Json& id : c.at("prompt_ids").as_array()) prompt_ids.push_back(static_cast<int32_t>(id.as_int()));
    for (const Json& id : c.at("output_ids").as_array()) output_ids.push_back(static_cast<int32_t>(id.as_int()));
    EXPECT_EQ(test::ids_to_string(tok->encode(prompt, /*add_special=*/true, false)), test::ids_to_string(prompt_ids))
        << model << ": '" << prompt << "'";
    StreamingDecoder dec(*tok, /*sequence_start=*/false, /*render_special=*/true);
    std::string text;
    for (int32_t id : output_ids) text += dec.push(id);
    text += dec.flush();
    EXPECT_EQ(text, c.at("output_text").as_string()) << model << ": '" << prompt << "'";
    ++n;
  }
  EXPECT_EQ(n, 4) << reference;
}

INSTANTIATE_TEST_SUITE_P(Shared, ReferencePromptTest,
                         ::testing::Values(std::make_pair(std::string("stories260K.gguf"), std::string("stories260K-greedy.jsonl")),
                                           std::make_pair(std::string("tiny-zh-poems.gguf"), std::string("tiny-zh-poems-greedy.jsonl"))));

TEST(GgufVocab, Stories260KMetadata) {
  const auto tok = test::load_gguf_tokenizer(test::shared_model("stories260K.gguf"));
  EXPECT_TRUE(tok->is_spm());
  EXPECT_EQ(tok->n_vocab(), 512);
  EXPECT_EQ(tok->bos(), 1);
  EXPECT_EQ(tok->eos(), 2);
  EXPECT_EQ(tok->unk(), 0);
  EXPECT_EQ(tok->pad(), -1);  // stored as 0xFFFFFFFF in the file: absent
  EXPECT_TRUE(tok->add_bos());
  EXPECT_TRUE(tok->strips_leading_space());  // add_space_prefix defaults to true for SPM
  EXPECT_TRUE(tok->is_eog(2));
  EXPECT_EQ(tok->token_attr(3), TokenAttr::kByte);
  EXPECT_EQ(tok->token_to_piece(3 + 0x41), "A");
  EXPECT_EQ(tok->token_text(1), "<s>");
}

TEST(GgufVocab, TinyZhPoemsMetadata) {
  const auto tok = test::load_gguf_tokenizer(test::shared_model("tiny-zh-poems.gguf"));
  EXPECT_EQ(tok->n_vocab(), 4096);
  EXPECT_FALSE(tok->strips_leading_space());  // add_space_prefix = false in the file
  EXPECT_EQ(tok->decode(tok->encode(" leading space", false, false)), " leading space");
}

}  // namespace
}  // namespace edgellm
