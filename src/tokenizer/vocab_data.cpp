#include "tokenizer/vocab_data.h"

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "core/error.h"
#include "core/json.h"
#include "gguf/gguf_reader.h"

namespace edgellm {
namespace {

// Special-token ids in GGUF are u32; writers use 0xFFFFFFFF (or other out-of-range values)
// for "none", so anything outside the vocabulary is treated as absent.
int32_t optional_id(const gguf::GgufFile& file, const char* key, size_t n_vocab) {
  const auto v = file.get_int(key);
  if (!v || *v < 0 || *v >= static_cast<int64_t>(n_vocab)) return -1;
  return static_cast<int32_t>(*v);
}

// The two Split regexes Hugging Face uses for the byte-level BPE families we support.
constexpr std::string_view kLlama3Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr std::string_view kQwen2Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// Walks a pre_tokenizer tree and records the Split regex and whether a ByteLevel step (and
// whether it uses its own GPT-2 regex) is present.
struct PreTokenizerInfo {
  std::string split_regex;
  bool byte_level = false;
  bool byte_level_regex = false;
};

void scan_pre_tokenizer(const Json& node, PreTokenizerInfo& info) {
  if (!node.is_object()) return;
  const Json* type = node.find("type");
  if (!type || !type->is_string()) return;
  const std::string& t = type->as_string();
  if (t == "Sequence") {
    if (const Json* list = node.find("pretokenizers"); list && list->is_array()) {
      for (const Json& child : list->as_array()) scan_pre_tokenizer(child, info);
    }
  } else if (t == "Split") {
    const Json* pattern = node.find("pattern");
    const Json* regex = pattern ? pattern->find("Regex") : nullptr;
    require(regex && regex->is_string(), ErrorCode::kUnsupported,
            "tokenizer.json: Split pre-tokenizer without a Regex pattern is not supported");
    info.split_regex = regex->as_string();
  } else if (t == "ByteLevel") {
    info.byte_level = true;
    const Json* use_regex = node.find("use_regex");
    info.byte_level_regex = !use_regex || (use_regex->is_bool() && use_regex->as_bool());
  } else {
    throw Error(ErrorCode::kUnsupported, "tokenizer.json: pre-tokenizer type '" + t + "' is not supported");
  }
}

// tokenizer_config values: "bos_token": "<s>" or {"content": "<s>", ...} or null.
std::string config_token(const Json* config, std::string_view key) {
  if (!config || !config->is_object()) return {};
  const Json* v = config->find(key);
  if (!v) return {};
  if (v->is_string()) return v->as_string();
  if (v->is_object()) {
    if (const Json* c = v->find("content"); c && c->is_string()) return c->as_string();
  }
  return {};
}

std::optional<bool> config_bool(const Json* config, std::string_view key) {
  if (!config || !config->is_object()) return std::nullopt;
  const Json* v = config->find(key);
  if (!v || !v->is_bool()) return std::nullopt;
  return v->as_bool();
}

}  // namespace

VocabData vocab_data_from_gguf(const gguf::GgufFile& file) {
  VocabData d;
  const auto model = file.get_string("tokenizer.ggml.model");
  require(model.has_value(), ErrorCode::kInvalidFile, "GGUF has no tokenizer.ggml.model key");
  d.model = *model;
  if (d.model != "llama" && d.model != "gpt2" && d.model != "bert") {
    throw Error(ErrorCode::kUnsupported, "tokenizer model '" + d.model +
                                             "' (tokenizer.ggml.model) is not supported (supported: llama, gpt2, bert)");
  }
  d.pre = file.get_string("tokenizer.ggml.pre").value_or("default");

  const auto tokens = file.get_string_array("tokenizer.ggml.tokens");
  require(tokens.has_value(), ErrorCode::kInvalidFile, "GGUF has no tokenizer.ggml.tokens string array");
  d.tokens.assign(tokens->begin(), tokens->end());
  const size_t n = d.tokens.size();
  if (auto scores = file.get_float_array("tokenizer.ggml.scores")) d.scores = std::move(*scores);
  if (auto types = file.get_int_array("tokenizer.ggml.token_type")) {
    d.types.reserve(types->size());
    for (size_t i = 0; i < types->size(); ++i) {
      const int64_t t = (*types)[i];
      // 0 is llama.cpp's "undefined" type, written by some old converters: treat as normal.
      // Other out-of-range values are reported by Tokenizer's validation, naming the token.
      d.types.push_back(t == 0 ? static_cast<int32_t>(TokenAttr::kNormal)
                               : static_cast<int32_t>(std::clamp<int64_t>(t, -1, 1000)));
    }
  }
  if (const auto merges = file.get_string_array("tokenizer.ggml.merges")) {
    d.merges.assign(merges->begin(), merges->end());
  }
  require(d.model != "gpt2" || !d.merges.empty(), ErrorCode::kInvalidFile,
          "GGUF tokenizer model 'gpt2' has no tokenizer.ggml.merges");

  d.bos = optional_id(file, "tokenizer.ggml.bos_token_id", n);
  d.eos = optional_id(file, "tokenizer.ggml.eos_token_id", n);
  d.eot = optional_id(file, "tokenizer.ggml.eot_token_id", n);
  d.eom = optional_id(file, "tokenizer.ggml.eom_token_id", n);
  d.unk = optional_id(file, "tokenizer.ggml.unknown_token_id", n);
  d.pad = optional_id(file, "tokenizer.ggml.padding_token_id", n);
  d.cls = optional_id(file, "tokenizer.ggml.cls_token_id", n);
  d.sep = optional_id(file, "tokenizer.ggml.seperator_token_id", n);  // sic: llama.cpp's spelling
  d.mask = optional_id(file, "tokenizer.ggml.mask_token_id", n);

  // Defaults follow llama.cpp: SentencePiece vocabs add BOS and a space prefix; byte-level BPE
  // vocabs add neither, except the Llama 3 family which adds BOS and uses whole-word tokens.
  const bool spm = d.model == "llama";
  const bool llama3 = !spm && (d.pre == "llama3" || d.pre == "llama-v3" || d.pre == "llama-bpe" || d.pre == "falcon3");
  d.add_bos = spm || llama3;
  d.add_space_prefix = spm;
  d.ignore_merges = llama3;
  if (d.model == "bert") {
    // WordPiece as llama.cpp reads it: [CLS] text [SEP] with add_special; [CLS] doubles as BOS.
    // Its defaults when the file names none are BERT's ids (101, 102, 100, 103).
    const auto fallback = [&](int32_t& id, int32_t bert_id) {
      if (id < 0 && bert_id < static_cast<int32_t>(n)) id = bert_id;
    };
    fallback(d.cls, 101);
    fallback(d.sep, 102);
    fallback(d.unk, 100);
    fallback(d.mask, 103);
    if (d.bos < 0) d.bos = d.cls;
    d.add_bos = true;
    d.add_sep = true;
    d.add_space_prefix = false;
    d.lowercase = file.get_bool("tokenizer.ggml.normalizer.lowercase").value_or(true);
    d.strip_accents = file.get_bool("tokenizer.ggml.normalizer.strip_accents").value_or(d.lowercase);
  }
  if (auto v = file.get_bool("tokenizer.ggml.add_bos_token")) d.add_bos = *v;
  if (auto v = file.get_bool("tokenizer.ggml.add_eos_token")) d.add_eos = *v;
  if (auto v = file.get_bool("tokenizer.ggml.add_sep_token")) d.add_sep = *v;
  if (auto v = file.get_bool("tokenizer.ggml.add_space_prefix")) d.add_space_prefix = *v;
  return d;
}

VocabData vocab_data_from_hf_json(const Json& tj, const Json* config) {
  require(tj.is_object(), ErrorCode::kInvalidFile, "tokenizer.json: top level is not an object");
  const Json* model = tj.find("model");
  require(model && model->is_object(), ErrorCode::kInvalidFile, "tokenizer.json: no 'model' object");
  const Json* type = model->find("type");
  const std::string model_type = type && type->is_string() ? type->as_string() : "";
  require(model_type == "BPE", ErrorCode::kUnsupported,
          "tokenizer.json: model type '" + model_type + "' is not supported (only byte-level BPE)");

  PreTokenizerInfo pre;
  if (const Json* p = tj.find("pre_tokenizer")) scan_pre_tokenizer(*p, pre);
  require(pre.byte_level, ErrorCode::kUnsupported,
          "tokenizer.json: only byte-level BPE (a ByteLevel pre-tokenizer) is supported");

  VocabData d;
  d.model = "gpt2";
  d.add_space_prefix = false;
  d.add_bos = false;
  if (pre.split_regex.empty()) {
    require(pre.byte_level_regex, ErrorCode::kUnsupported,
            "tokenizer.json: ByteLevel pre-tokenizer without a regex and no Split step is not supported");
    d.pre = "gpt-2";
  } else if (pre.split_regex == kLlama3Regex) {
    d.pre = "llama-bpe";
  } else if (pre.split_regex == kQwen2Regex) {
    d.pre = "qwen2";
  } else {
    throw Error(ErrorCode::kUnsupported,
                "tokenizer.json: pre-tokenizer regex '" + pre.split_regex.substr(0, 80) + "' is not supported");
  }
  if (const Json* im = model->find("ignore_merges"); im && im->is_bool()) d.ignore_merges = im->as_bool();

  const Json* vocab = model->find("vocab");
  require(vocab && vocab->is_object(), ErrorCode::kInvalidFile, "tokenizer.json: model.vocab is not an object");
  std::vector<std::pair<int64_t, const std::string*>> entries;
  entries.reserve(vocab->as_object().size());
  int64_t max_id = -1;
  for (const auto& [text, id] : vocab->as_object()) {
    require(id.is_number(), ErrorCode::kInvalidFile, "tokenizer.json: vocab entry '" + text + "' has no numeric id");
    const int64_t v = id.as_int();
    require(v >= 0 && v < (int64_t{1} << 24), ErrorCode::kInvalidFile,
            "tokenizer.json: vocab entry '" + text + "' has id " + std::to_string(v) + " outside [0, 2^24)");
    entries.emplace_back(v, &text);
    max_id = std::max(max_id, v);
  }
  struct Added {
    int64_t id;
    std::string text;
    bool special;
  };
  std::vector<Added> added;
  if (const Json* list = tj.find("added_tokens"); list && list->is_array()) {
    for (const Json& a : list->as_array()) {
      const Json* id = a.find("id");
      const Json* content = a.find("content");
      require(id && id->is_number() && content && content->is_string(), ErrorCode::kInvalidFile,
              "tokenizer.json: added_tokens entry without id/content");
      const int64_t v = id->as_int();
      require(v >= 0 && v < (int64_t{1} << 24), ErrorCode::kInvalidFile,
              "tokenizer.json: added token '" + content->as_string() + "' has id " + std::to_string(v) + " outside [0, 2^24)");
      const Json* special = a.find("special");
      added.push_back({v, content->as_string(), special && special->is_bool() && special->as_bool()});
      max_id = std::max(max_id, v);
    }
  }
  require(max_id >= 0, ErrorCode::kInvalidFile, "tokenizer.json: empty vocabulary");
  const size_t n = static_cast<size_t>(max_id) + 1;
  // The id space is sized by the largest id and its gaps filled with placeholders, so one huge id
  // in a small file would cost gigabytes (the fuzzer's 1.3 KB file with the id 16210271: 2.1 GB).
  // Real files are dense (Qwen2.5, Llama 3: no gap at all); more unused ids than listed tokens
  // is refused, which keeps the memory proportional to the file.
  const size_t listed = entries.size() + added.size();
  if (n > 2 * listed + 1024) {
    throw Error(ErrorCode::kInvalidFile, "tokenizer.json: ids reach " + std::to_string(max_id) + " but only " +
                                             std::to_string(listed) +
                                             " tokens are listed (more than half of the id space unused)");
  }
  d.tokens.assign(n, std::string());
  d.types.assign(n, static_cast<int32_t>(TokenAttr::kUnused));
  std::vector<bool> filled(n, false);
  for (const auto& [id, text] : entries) {
    d.tokens[static_cast<size_t>(id)] = *text;
    d.types[static_cast<size_t>(id)] = static_cast<int32_t>(TokenAttr::kNormal);
    filled[static_cast<size_t>(id)] = true;
  }
  for (const Added& a : added) {
    const auto i = static_cast<size_t>(a.id);
    d.tokens[i] = a.text;
    d.types[i] = static_cast<int32_t>(a.special ? TokenAttr::kControl : TokenAttr::kUserDefined);
    filled[i] = true;
  }
  for (size_t i = 0; i < n; ++i) {
    if (!filled[i]) d.tokens[i] = "[PAD" + std::to_string(i) + "]";  // unused gap in the id space
  }

  if (const Json* merges = model->find("merges"); merges && merges->is_array()) {
    d.merges.reserve(merges->size());
    for (const Json& m : merges->as_array()) {
      if (m.is_string()) {
        d.merges.push_back(m.as_string());
      } else if (m.is_array() && m.size() == 2 && m.at(size_t{0}).is_string() && m.at(size_t{1}).is_string()) {
        d.merges.push_back(m.at(size_t{0}).as_string() + " " + m.at(size_t{1}).as_string());
      } else {
        throw Error(ErrorCode::kInvalidFile,
                    "tokenizer.json: merge #" + std::to_string(d.merges.size()) + " is neither \"a b\" nor [\"a\", \"b\"]");
      }
    }
  }

  std::unordered_map<std::string_view, int32_t> index;
  for (size_t i = 0; i < n; ++i) index[d.tokens[i]] = static_cast<int32_t>(i);
  auto id_of = [&](const std::string& text) -> int32_t {
    if (text.empty()) return -1;
    const auto it = index.find(text);
    return it == index.end() ? -1 : it->second;
  };
  d.bos = id_of(config_token(config, "bos_token"));
  d.eos = id_of(config_token(config, "eos_token"));
  d.pad = id_of(config_token(config, "pad_token"));
  d.unk = id_of(config_token(config, "unk_token"));
  if (auto v = config_bool(config, "add_bos_token")) d.add_bos = *v;
  if (auto v = config_bool(config, "add_eos_token")) d.add_eos = *v;
  return d;
}

}  // namespace edgellm
