#include "tools/synth/synth_vocab.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "core/error.h"
#include "core/json.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "tokenizer/vocab_data.h"

namespace edgellm::synth {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  require(static_cast<bool>(in), ErrorCode::kIo, "cannot open tokenizer file '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  require(!in.bad(), ErrorCode::kIo, "cannot read tokenizer file '" + path + "'");
  return ss.str();
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void set_id(gguf::GgufWriter& w, const char* key, int32_t id) {
  if (id >= 0) w.set_u32(key, static_cast<uint32_t>(id));
}

}  // namespace

void write_placeholder_vocab(gguf::GgufWriter& w, int32_t n_vocab) {
  require(n_vocab >= 3, ErrorCode::kInvalidArgument,
          "placeholder vocabulary needs at least 3 tokens, model has " + std::to_string(n_vocab));
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  tokens.reserve(static_cast<size_t>(n_vocab));
  for (int32_t i = 0; i < n_vocab; ++i) {
    if (i == 0) {
      tokens.emplace_back("<unk>");
      types.push_back(static_cast<int32_t>(TokenAttr::kUnknown));
    } else if (i == 1) {
      tokens.emplace_back("<s>");
      types.push_back(static_cast<int32_t>(TokenAttr::kControl));
    } else if (i == 2) {
      tokens.emplace_back("</s>");
      types.push_back(static_cast<int32_t>(TokenAttr::kControl));
    } else {
      tokens.push_back("<t" + std::to_string(i) + ">");
      types.push_back(static_cast<int32_t>(TokenAttr::kNormal));
    }
    scores.push_back(-static_cast<float>(i));
  }
  w.set_string("tokenizer.ggml.model", "llama");
  w.set_string("tokenizer.ggml.pre", "default");
  w.set_array_string("tokenizer.ggml.tokens", tokens);
  w.set_array_f32("tokenizer.ggml.scores", scores);
  w.set_array_i32("tokenizer.ggml.token_type", types);
  w.set_u32("tokenizer.ggml.unknown_token_id", 0);
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_u32("tokenizer.ggml.eos_token_id", 2);
  w.set_bool("tokenizer.ggml.add_bos_token", true);
  w.set_bool("tokenizer.ggml.add_eos_token", false);
}

void write_placeholder_wordpiece_vocab(gguf::GgufWriter& w, int32_t n_vocab) {
  require(n_vocab > 103, ErrorCode::kInvalidArgument,
          "placeholder WordPiece vocabulary needs more than 103 tokens, model has " + std::to_string(n_vocab));
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (int32_t i = 0; i < n_vocab; ++i) {
    const char* special = i == 0 ? "[PAD]" : i == 100 ? "[UNK]" : i == 101 ? "[CLS]" : i == 102 ? "[SEP]" : i == 103 ? "[MASK]" : nullptr;
    tokens.push_back(special ? std::string(special) : "\xE2\x96\x81t" + std::to_string(i));
    types.push_back(static_cast<int32_t>(special ? TokenAttr::kControl : TokenAttr::kNormal));
  }
  w.set_string("tokenizer.ggml.model", "bert");
  w.set_string("tokenizer.ggml.pre", "default");
  w.set_array_string("tokenizer.ggml.tokens", tokens);
  w.set_array_i32("tokenizer.ggml.token_type", types);
  w.set_u32("tokenizer.ggml.unknown_token_id", 100);
  w.set_u32("tokenizer.ggml.cls_token_id", 101);
  w.set_u32("tokenizer.ggml.seperator_token_id", 102);
  w.set_u32("tokenizer.ggml.padding_token_id", 0);
  w.set_u32("tokenizer.ggml.mask_token_id", 103);
}

void write_vocab(gguf::GgufWriter& w, const VocabData& vocab, int32_t n_vocab, const std::string& chat_template) {
  const size_t n = vocab.tokens.size();
  require(n <= static_cast<size_t>(n_vocab), ErrorCode::kInvalidArgument,
          "tokenizer has " + std::to_string(n) + " tokens but the model shape has only " + std::to_string(n_vocab) +
              " embedding rows");
  std::vector<std::string> tokens(vocab.tokens.begin(), vocab.tokens.end());
  std::vector<int32_t> types = vocab.types;
  types.resize(n, static_cast<int32_t>(TokenAttr::kNormal));
  for (size_t i = n; i < static_cast<size_t>(n_vocab); ++i) {
    // llama.cpp's converter pads the vocabulary to config.json's vocab_size the same way.
    tokens.push_back("[PAD" + std::to_string(i) + "]");
    types.push_back(static_cast<int32_t>(TokenAttr::kUnused));
  }
  w.set_string("tokenizer.ggml.model", vocab.model);
  w.set_string("tokenizer.ggml.pre", vocab.pre);
  w.set_array_string("tokenizer.ggml.tokens", tokens);
  w.set_array_i32("tokenizer.ggml.token_type", types);
  if (!vocab.scores.empty()) {
    std::vector<float> scores = vocab.scores;
    scores.resize(static_cast<size_t>(n_vocab), 0.0f);
    w.set_array_f32("tokenizer.ggml.scores", scores);
  }
  if (!vocab.merges.empty()) w.set_array_string("tokenizer.ggml.merges", vocab.merges);
  set_id(w, "tokenizer.ggml.bos_token_id", vocab.bos);
  set_id(w, "tokenizer.ggml.eos_token_id", vocab.eos);
  set_id(w, "tokenizer.ggml.eot_token_id", vocab.eot);
  set_id(w, "tokenizer.ggml.eom_token_id", vocab.eom);
  set_id(w, "tokenizer.ggml.unknown_token_id", vocab.unk);
  set_id(w, "tokenizer.ggml.padding_token_id", vocab.pad);
  set_id(w, "tokenizer.ggml.cls_token_id", vocab.cls);
  set_id(w, "tokenizer.ggml.seperator_token_id", vocab.sep);  // sic: llama.cpp's key
  set_id(w, "tokenizer.ggml.mask_token_id", vocab.mask);
  w.set_bool("tokenizer.ggml.add_bos_token", vocab.add_bos);
  w.set_bool("tokenizer.ggml.add_eos_token", vocab.add_eos);
  if (vocab.model == "llama") w.set_bool("tokenizer.ggml.add_space_prefix", vocab.add_space_prefix);
  if (!chat_template.empty()) w.set_string("tokenizer.chat_template", chat_template);
}

void write_tokenizer_from_file(gguf::GgufWriter& w, const std::string& path, int32_t n_vocab) {
  if (ends_with(path, ".gguf")) {
    const auto src = gguf::GgufFile::open(path);
    const auto n_tokens = src->get_string_array_size("tokenizer.ggml.tokens");
    require(n_tokens.has_value(), ErrorCode::kInvalidFile, "'" + path + "' has no tokenizer.ggml.tokens");
    if (*n_tokens == static_cast<uint64_t>(n_vocab)) {
      w.copy_metadata_from(*src, [](std::string_view key) { return key.substr(0, 10) != "tokenizer."; });
      return;
    }
    const VocabData vocab = vocab_data_from_gguf(*src);
    write_vocab(w, vocab, n_vocab, src->get_string("tokenizer.chat_template").value_or(""));
    return;
  }
  const Json tokenizer_json = Json::parse(read_text(path));
  const std::filesystem::path config_path = std::filesystem::path(path).parent_path() / "tokenizer_config.json";
  Json config;
  const bool have_config = std::filesystem::exists(config_path);
  if (have_config) config = Json::parse(read_text(config_path.string()));
  const VocabData vocab = vocab_data_from_hf_json(tokenizer_json, have_config ? &config : nullptr);
  std::string chat_template;
  if (have_config) {
    if (const Json* t = config.find("chat_template"); t && t->is_string()) chat_template = t->as_string();
  }
  write_vocab(w, vocab, n_vocab, chat_template);
}

}  // namespace edgellm::synth
