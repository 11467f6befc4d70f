// The tokenizer part of `edgellm convert` (tools/convert/tokenizer_export.h) against references
// it did not produce:
//   - the real Qwen3 / Llama 3 tokenizer.json: the token types and special ids llama.cpp's
//     converter gives them (its rules: special or "<|...|>" -> control, else user-defined; ids from
//     tokenizer_config, then config.json), the vocabulary padded to config.json vocab_size;
//   - SentencePiece-style BPE: a tokenizer.json built here from llama.cpp's Llama (SPM) vocab file
//     the way transformers' LlamaConverter builds one from tokenizer.model (merges from the piece
//     scores); the export must give back the same tokens and types and encode the reference
//     strings (ggml-vocab-llama-spm.gguf.inp) to the reference ids (.out, made by the original
//     tokenizer) with the scores it derives from the merges;
//   - WordPiece: a tokenizer.json built from llama.cpp's BGE vocab file (bert-bge, made by its
//     converter from the real tokenizer); the export must reproduce that file's tokens, types and
//     special ids.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include "core/error.h"
#include "core/json.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "support/hf_checkpoint.h"
#include "support/test_env.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"
#include "tools/convert/tokenizer_export.h"

namespace edgellm {
namespace {

using convert::TokenizerExport;
using convert::TokenizerSources;

Json load_json(const std::string& path) {
  return Json::parse(test::read_file(path));
}

std::unique_ptr<Tokenizer> tokenizer_of(const TokenizerExport& e) {
  gguf::GgufWriter w;
  w.set_string("general.architecture", "llama");
  convert::write_tokenizer(w, e);
  const std::vector<uint8_t> bytes = w.write_to_bytes();
  const auto f = gguf::GgufFile::from_bytes(bytes.data(), bytes.size());
  return Tokenizer::from_gguf(*f);
}

std::vector<std::string> read_inputs(const std::string& path) {
  const std::string text = test::read_file(path);
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> out;
  for (size_t pos = 0, next; (next = text.find(sep, pos)) != std::string::npos; pos = next + sep.size()) {
    out.push_back(text.substr(pos, next - pos));
  }
  return out;
}

std::vector<std::vector<int32_t>> read_outputs(const std::string& path) {
  std::vector<std::vector<int32_t>> out;
  std::istringstream lines(test::read_file(path));
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream ids(line);
    std::vector<int32_t> v;
    for (int32_t id; ids >> id;) v.push_back(id);
    out.push_back(std::move(v));
  }
  return out;
}

// ---------------------------------------------------------------- byte-level BPE (real files)

TEST(TokenizerExport, Qwen3AsLlamaCppConvertsIt) {
  const Json tj = load_json(test::shared_testdata("tokenizers/qwen3/tokenizer.json"));
  const Json tc = load_json(test::shared_testdata("tokenizers/qwen3/tokenizer_config.json"));
  // Qwen3's config.json: bos 151643, eos 151645, vocab_size 151936.
  const Json cfg = Json::parse(R"({"bos_token_id": 151643, "eos_token_id": 151645})");
  TokenizerSources src{&tj, &tc, &cfg, "", 151936};
  const TokenizerExport e = convert::export_hf_tokenizer(src);
  EXPECT_EQ(e.model, "gpt2");
  EXPECT_EQ(e.pre, "qwen2");
  ASSERT_EQ(e.tokens.size(), 151936u);
  EXPECT_EQ(e.merges.size(), 151387u);
  EXPECT_EQ(e.tokens[151669], "[PAD151669]");
  EXPECT_EQ(e.types[151669], static_cast<int32_t>(TokenAttr::kUnused));
  EXPECT_EQ(e.types[151644], static_cast<int32_t>(TokenAttr::kControl));      // <|im_start|>, special
  EXPECT_EQ(e.types[151659], static_cast<int32_t>(TokenAttr::kControl));      // <|fim_prefix|>: not special, looks it
  EXPECT_EQ(e.types[151667], static_cast<int32_t>(TokenAttr::kUserDefined));  // <think>
  EXPECT_EQ(e.types[151657], static_cast<int32_t>(TokenAttr::kUserDefined));  // <tool_call>
  EXPECT_EQ(e.types[872], static_cast<int32_t>(TokenAttr::kNormal));
  // tokenizer_config: eos <|im_end|>, pad <|endoftext|>, no bos; config.json fills bos.
  EXPECT_EQ(e.special_id("eos"), std::optional<int32_t>(151645));
  EXPECT_EQ(e.special_id("pad"), std::optional<int32_t>(151643));
  EXPECT_EQ(e.special_id("bos"), std::optional<int32_t>(151643));
  EXPECT_EQ(e.special_id("unk"), std::nullopt);
  ASSERT_EQ(e.add_special.size(), 1u);
  EXPECT_EQ(e.add_special[0], (std::pair<std::string, bool>("bos", false)));
  EXPECT_EQ(e.chat_template, tc.at("chat_template").as_string());
}

TEST(TokenizerExport, Llama3AsLlamaCppConvertsIt) {
  const Json tj = load_json(test::shared_testdata("tokenizers/llama3/tokenizer.json"));
  const Json tc = load_json(test::shared_testdata("tokenizers/llama3/tokenizer_config.json"));
  // Llama 3.1 Instruct lists three EOS ids: a list is not one id (llama.cpp ignores it too).
  const Json cfg = Json::parse(R"({"bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009]})");
  TokenizerSources src{&tj, &tc, &cfg, "", 128256};
  const TokenizerExport e = convert::export_hf_tokenizer(src);
  EXPECT_EQ(e.pre, "llama-bpe");
  ASSERT_EQ(e.tokens.size(), 128256u);
  EXPECT_EQ(e.tokens[128009], "<|eot_id|>");
  EXPECT_EQ(e.types[128255], static_cast<int32_t>(TokenAttr::kControl));  // the last reserved special token
  EXPECT_EQ(e.special_id("bos"), std::optional<int32_t>(128000));
  EXPECT_EQ(e.special_id("eos"), std::optional<int32_t>(128001));
  EXPECT_TRUE(e.add_special.empty());  // no add_bos_token in the config: llama.cpp's llama-bpe default applies
  const auto tok = tokenizer_of(e);
  EXPECT_TRUE(tok->add_bos());
  EXPECT_EQ(tok->encode("Hello", true, false).front(), 128000);
}

TEST(TokenizerExport, AVocabularyLargerThanTheEmbeddingIsRefused) {
  const Json tj = load_json(test::shared_testdata("tokenizers/qwen3/tokenizer.json"));
  TokenizerSources src{&tj, nullptr, nullptr, "", 151000};
  try {
    (void)convert::export_hf_tokenizer(src);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidFile);
    EXPECT_NE(std::string(e.what()).find("outside config.json vocab_size 151000"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------- SentencePiece-style BPE

TEST(TokenizerExport, SentencePieceStyleBpeReproducesTheReferenceIds) {
  const std::string path = test::shared_testdata("vocab/ggml-vocab-llama-spm.gguf");
  const auto ref = gguf::GgufFile::open(path);
  const auto tokens_view = *ref->get_string_array("tokenizer.ggml.tokens");
  const std::vector<std::string> tokens(tokens_view.begin(), tokens_view.end());
  const std::vector<float> scores = *ref->get_float_array("tokenizer.ggml.scores");
  const std::vector<int64_t> types = *ref->get_int_array("tokenizer.ggml.token_type");

  Json vocab = Json::object();
  Json added = Json::array();
  for (size_t i = 0; i < tokens.size(); ++i) {
    vocab.as_object().emplace_back(tokens[i], Json(static_cast<int64_t>(i)));  // set() would search: O(n^2)
    const auto t = static_cast<TokenAttr>(types[i]);
    if (t == TokenAttr::kControl || t == TokenAttr::kUnknown) {
      Json a = Json::object();
      a.set("id", Json(static_cast<int64_t>(i)));
      a.set("content", Json(tokens[i]));
      a.set("special", Json(true));
      a.set("normalized", Json(false));
      added.push_back(std::move(a));
    }
  }
  Json merges = Json::array();
  for (const auto& [l, r] : test::spm_merges(tokens, scores, types))
    merges.push_back(Json(Json::Array{Json(l), Json(r)}));
  const std::string sp = "\xE2\x96\x81";
  Json tj = Json::parse(R"({"version": "1.0", "truncation": null, "padding": null,
      "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": ")" +
                        sp + R"("},
                     {"type": "Replace", "pattern": {"String": " "}, "content": ")" +
                        sp + R"("}]},
      "pre_tokenizer": null,
      "post_processor": {"type": "TemplateProcessing",
                         "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                         "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                                  {"SpecialToken": {"id": "<s>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}]},
      "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": ")" +
                        sp + R"("}, "content": " "},
                  {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
      "model": {"type": "BPE", "dropout": null, "unk_token": "<unk>", "continuing_subword_prefix": null,
                "end_of_word_suffix": null, "fuse_unk": true, "byte_fallback": true, "ignore_merges": false}})");
  Json& model = const_cast<Json&>(tj.at("model"));
  model.set("vocab", std::move(vocab));
  model.set("merges", std::move(merges));
  tj.set("added_tokens", std::move(added));
  const Json tc = Json::parse(R"({"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "add_bos_token": true,
                                  "add_eos_token": false, "legacy": false})");

  TokenizerSources src{&tj, &tc, nullptr, "", static_cast<int64_t>(tokens.size())};
  const TokenizerExport e = convert::export_hf_tokenizer(src);
  EXPECT_EQ(e.model, "llama");
  EXPECT_EQ(e.add_space_prefix, std::optional<bool>(true));
  ASSERT_EQ(e.tokens.size(), tokens.size());
  size_t type_mismatches = 0;
  for (size_t i = 0; i < tokens.size(); ++i) {
    EXPECT_EQ(e.tokens[i], tokens[i]) << i;
    type_mismatches += e.types[i] != types[i];
  }
  EXPECT_EQ(type_mismatches, 0u);
  EXPECT_EQ(e.special_id("bos"), std::optional<int32_t>(1));
  EXPECT_EQ(e.special_id("eos"), std::optional<int32_t>(2));
  EXPECT_EQ(e.special_id("unk"), std::optional<int32_t>(0));

  const auto tok = tokenizer_of(e);
  const auto inputs = read_inputs(path + ".inp");
  const auto outputs = read_outputs(path + ".out");
  ASSERT_EQ(inputs.size(), outputs.size());
  ASSERT_GT(inputs.size(), 40u);
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_EQ(tok->encode(inputs[i], false, false), outputs[i]) << "case " << i << " '" << inputs[i] << "'";
  }
  EXPECT_EQ(tok->encode("Hello", true, false).front(), 1);  // add_bos from tokenizer_config
}

// ---------------------------------------------------------------- WordPiece

TEST(TokenizerExport, WordPieceMatchesLlamaCppsBgeVocabulary) {
  const auto ref = gguf::GgufFile::open(test::shared_testdata("vocab/ggml-vocab-bert-bge.gguf"));
  const auto tokens_view = *ref->get_string_array("tokenizer.ggml.tokens");
  const std::vector<std::string> tokens(tokens_view.begin(), tokens_view.end());
  const std::vector<int64_t> types = *ref->get_int_array("tokenizer.ggml.token_type");
  const std::string sp = "\xE2\x96\x81";
  // Back to the WordPiece vocabulary: "▁word" -> "word", "ing" -> "##ing", control tokens as is.
  Json vocab = Json::object();
  Json added = Json::array();
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::string t = tokens[i];
    if (types[i] == static_cast<int64_t>(TokenAttr::kControl)) {
      Json a = Json::object();
      a.set("id", Json(static_cast<int64_t>(i)));
      a.set("content", Json(t));
      a.set("special", Json(true));
      added.push_back(std::move(a));
    } else if (t.rfind(sp, 0) == 0) {
      t.erase(0, sp.size());
    } else {
      t = "##" + t;
    }
    vocab.as_object().emplace_back(t, Json(static_cast<int64_t>(i)));
  }
  Json tj = Json::parse(R"({"normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                                           "strip_accents": null, "lowercase": true},
      "pre_tokenizer": {"type": "BertPreTokenizer"},
      "post_processor": {"type": "TemplateProcessing",
                         "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                                    {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
                         "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                                  {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
                                  {"SpecialToken": {"id": "[SEP]", "type_id": 1}}]},
      "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
      "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100}})");
  const_cast<Json&>(tj.at("model")).set("vocab", std::move(vocab));
  tj.set("added_tokens", std::move(added));
  const Json tc =
      Json::parse(R"({"cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]", "unk_token": "[UNK]",
                                  "mask_token": "[MASK]", "do_lower_case": true})");
  const Json cfg = Json::parse(R"({"type_vocab_size": 2, "pad_token_id": 0})");
  TokenizerSources src{&tj, &tc, &cfg, "", static_cast<int64_t>(tokens.size())};
  const TokenizerExport e = convert::export_hf_tokenizer(src);
  EXPECT_EQ(e.model, "bert");
  ASSERT_EQ(e.tokens.size(), tokens.size());
  size_t token_mismatches = 0, type_mismatches = 0;
  for (size_t i = 0; i < tokens.size(); ++i) {
    token_mismatches += e.tokens[i] != tokens[i];
    type_mismatches += e.types[i] != types[i];
  }
  EXPECT_EQ(token_mismatches, 0u);
  EXPECT_EQ(type_mismatches, 0u);
  // llama.cpp's file: unknown 100, separator 102, padding 0, mask 103 (and [CLS] 101 as BOS).
  EXPECT_EQ(e.special_id("unk"), ref->get_int("tokenizer.ggml.unknown_token_id"));
  EXPECT_EQ(e.special_id("sep"), ref->get_int("tokenizer.ggml.seperator_token_id"));
  EXPECT_EQ(e.special_id("pad"), ref->get_int("tokenizer.ggml.padding_token_id"));
  EXPECT_EQ(e.special_id("mask"), ref->get_int("tokenizer.ggml.mask_token_id"));
  EXPECT_EQ(e.special_id("bos"), ref->get_int("tokenizer.ggml.cls_token_id"));
  EXPECT_EQ(e.token_type_count, *ref->get_int("tokenizer.ggml.token_type_count"));
  EXPECT_EQ(e.normalizer_lowercase, std::optional<bool>(true));
  gguf::GgufWriter w;
  convert::write_tokenizer(w, e);
  EXPECT_TRUE(w.has("tokenizer.ggml.seperator_token_id"));
}

// tokenizer_config.json's do_lower_case wins over the tokenizer.json normalizer, as transformers'
// BertTokenizerFast rebuilds the normalizer from it; absent, the file's flags stand.
TEST(TokenizerExport, DoLowerCaseFromTokenizerConfigWins) {
  const Json tj = Json::parse(R"({"normalizer": {"type": "BertNormalizer", "lowercase": true, "strip_accents": null},
      "model": {"type": "WordPiece", "unk_token": "[UNK]", "vocab": {"[UNK]": 0, "hello": 1, "Hello": 2}}})");
  const Json cased = Json::parse(R"({"do_lower_case": false})");
  const Json cased_strip = Json::parse(R"({"do_lower_case": false, "strip_accents": true})");
  const Json silent = Json::parse(R"({"unk_token": "[UNK]"})");
  TokenizerSources src{&tj, &cased, nullptr, "", 3};
  TokenizerExport e = convert::export_hf_tokenizer(src);
  EXPECT_EQ(e.normalizer_lowercase, std::optional<bool>(false));
  EXPECT_EQ(e.normalizer_strip_accents, std::nullopt);  // follows lowercase at load
  src.tokenizer_config = &cased_strip;
  e = convert::export_hf_tokenizer(src);
  EXPECT_EQ(e.normalizer_lowercase, std::optional<bool>(false));
  EXPECT_EQ(e.normalizer_strip_accents, std::optional<bool>(true));
  src.tokenizer_config = &silent;
  e = convert::export_hf_tokenizer(src);
  EXPECT_EQ(e.normalizer_lowercase, std::optional<bool>(true));
}

// ---------------------------------------------------------------- refusals

TEST(TokenizerExport, UnsupportedModelsAreNamed) {
  for (const char* type : {"Unigram", "WordLevel"}) {
    const Json tj = Json::parse(std::string(R"({"model": {"type": ")") + type + R"(", "vocab": {}}})");
    TokenizerSources src{&tj, nullptr, nullptr, "", 10};
    try {
      (void)convert::export_hf_tokenizer(src);
      FAIL() << type;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
      EXPECT_NE(std::string(e.what()).find(type), std::string::npos) << e.what();
    }
  }
  const Json no_fallback = Json::parse(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}})");
  TokenizerSources src{&no_fallback, nullptr, nullptr, "", 10};
  EXPECT_THROW((void)convert::export_hf_tokenizer(src), Error);
}

}  // namespace
}  // namespace edgellm
