#include "tools/convert/wordpiece_vocab.h"

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "core/error.h"

namespace edgellm::convert {
namespace {

constexpr size_t kMaxVocabLines = size_t{1} << 24;

// tokenizer_config values: "[CLS]" or {"content": "[CLS]", ...}; `fallback` when absent.
std::string vocab_config_token(const Json* tc, const char* key, const char* fallback) {
  const Json* v = tc ? tc->find(key) : nullptr;
  if (v && v->is_string()) return v->as_string();
  if (v && v->is_object()) {
    if (const Json* c = v->find("content"); c && c->is_string()) return c->as_string();
  }
  return fallback;
}

Json template_special(const std::string& id, int type_id) {
  Json inner = Json::object();
  inner.set("id", Json(id));
  inner.set("type_id", Json(type_id));
  Json s = Json::object();
  s.set("SpecialToken", std::move(inner));
  return s;
}

Json template_sequence(const char* id, int type_id) {
  Json inner = Json::object();
  inner.set("id", Json(id));
  inner.set("type_id", Json(type_id));
  Json s = Json::object();
  s.set("Sequence", std::move(inner));
  return s;
}

}  // namespace

Json tokenizer_json_from_vocab_txt(const std::string& text, const Json* tc, const std::string& origin) {
  if (tc != nullptr && !tc->is_object()) tc = nullptr;
  // token -> id as transformers' load_vocab builds its dict: a token listed twice keeps its last
  // line (the earlier id is then a gap, which the export fills with an unused "[PADi]").
  Json::Object entries;
  std::unordered_map<std::string, size_t> index;
  int64_t id = 0;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    require(static_cast<size_t>(id) < kMaxVocabLines, ErrorCode::kInvalidFile, origin + ": more than 2^24 tokens");
    std::string token = text.substr(at, end - at);
    const auto [it, fresh] = index.emplace(token, entries.size());
    if (fresh) {
      entries.emplace_back();
      entries.back().first = std::move(token);
    }
    entries[it->second].second = Json(id);
    ++id;
    at = end + 1;
  }
  require(id > 0, ErrorCode::kInvalidFile, origin + ": the vocabulary is empty");
  std::unordered_map<std::string, int64_t> first_id;  // the special tokens' ids
  for (const auto& [token, v] : entries) first_id.emplace(token, v.as_int());
  Json vocab(std::move(entries));

  const std::string unk = vocab_config_token(tc, "unk_token", "[UNK]");
  const std::string cls = vocab_config_token(tc, "cls_token", "[CLS]");
  const std::string sep = vocab_config_token(tc, "sep_token", "[SEP]");
  // The special tokens transformers registers as added tokens, with their vocabulary ids.
  Json added = Json::array();
  std::vector<std::string> specials = {vocab_config_token(tc, "pad_token", "[PAD]"), unk, cls, sep,
                                       vocab_config_token(tc, "mask_token", "[MASK]")};
  if (const Json* atd = tc ? tc->find("added_tokens_decoder") : nullptr; atd && atd->is_object()) {
    for (const auto& [key, entry] : atd->as_object()) {
      if (const Json* c = entry.find("content"); c && c->is_string()) specials.push_back(c->as_string());
    }
  }
  std::vector<bool> listed(static_cast<size_t>(id), false);
  for (const std::string& s : specials) {
    const auto it = first_id.find(s);
    if (it == first_id.end() || listed[static_cast<size_t>(it->second)]) continue;
    listed[static_cast<size_t>(it->second)] = true;
    Json a = Json::object();
    a.set("id", Json(it->second));
    a.set("content", Json(s));
    a.set("special", Json(true));
    added.push_back(std::move(a));
  }

  Json normalizer = Json::object();
  normalizer.set("type", Json("BertNormalizer"));
  normalizer.set("clean_text", Json(true));
  const Json* chinese = tc ? tc->find("tokenize_chinese_chars") : nullptr;
  normalizer.set("handle_chinese_chars", Json(chinese && chinese->is_bool() ? chinese->as_bool() : true));
  const Json* strip = tc ? tc->find("strip_accents") : nullptr;
  normalizer.set("strip_accents", strip && strip->is_bool() ? Json(strip->as_bool()) : Json(nullptr));
  const Json* lower = tc ? tc->find("do_lower_case") : nullptr;
  normalizer.set("lowercase", Json(lower && lower->is_bool() ? lower->as_bool() : true));

  Json post = Json::object();
  post.set("type", Json("TemplateProcessing"));
  post.set("single", Json(Json::Array{template_special(cls, 0), template_sequence("A", 0), template_special(sep, 0)}));
  post.set("pair", Json(Json::Array{template_special(cls, 0), template_sequence("A", 0), template_special(sep, 0),
                                    template_sequence("B", 1), template_special(sep, 1)}));

  Json model = Json::object();
  model.set("type", Json("WordPiece"));
  model.set("unk_token", Json(unk));
  model.set("continuing_subword_prefix", Json("##"));
  model.set("max_input_chars_per_word", Json(100));
  model.set("vocab", std::move(vocab));

  Json pre = Json::object();
  pre.set("type", Json("BertPreTokenizer"));
  Json tj = Json::object();
  tj.set("added_tokens", std::move(added));
  tj.set("normalizer", std::move(normalizer));
  tj.set("pre_tokenizer", std::move(pre));
  tj.set("post_processor", std::move(post));
  tj.set("model", std::move(model));
  return tj;
}

}  // namespace edgellm::convert
