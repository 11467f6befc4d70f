#include "tools/convert/tokenizer_export.h"

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "core/error.h"
#include "gguf/gguf_writer.h"
#include "tokenizer/vocab_data.h"

namespace edgellm::convert {
namespace {

constexpr std::string_view kSpace = "\xE2\x96\x81";  // U+2581 "▁", SentencePiece's space
// The id space is sized by the largest id: as in tokenizer/vocab_data.cpp, a file whose ids are
// mostly unused is refused rather than allocated (a 1 KB file must not cost gigabytes).
constexpr int64_t kMaxId = int64_t{1} << 24;

[[noreturn]] void invalid(const std::string& what) {
  throw Error(ErrorCode::kInvalidFile, "tokenizer.json: " + what);
}

int32_t attr(TokenAttr a) {
  return static_cast<int32_t>(a);
}

// llama.cpp's does_token_look_special: some models mark control tokens as not special.
bool looks_special(std::string_view t) {
  auto wrapped = [&](std::string_view open, std::string_view close) {
    return t.size() >= open.size() + close.size() && t.substr(0, open.size()) == open &&
           t.substr(t.size() - close.size()) == close;
  };
  return t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]" || wrapped("<|", "|>") ||
         wrapped("<\xEF\xBD\x9C", "\xEF\xBD\x9C>") /* <｜...｜> */ || wrapped("<unused", ">");
}

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
  return s;
}

// tokenizer_config values: "<s>" or {"content": "<s>", ...}.
std::string token_content(const Json* v) {
  if (v == nullptr) return {};
  if (v->is_string()) return v->as_string();
  if (v->is_object()) {
    if (const Json* c = v->find("content"); c && c->is_string()) return c->as_string();
  }
  return {};
}

struct Added {
  int64_t id;
  std::string content;
  bool special;
};

std::vector<Added> added_tokens(const Json& tj) {
  std::vector<Added> out;
  const Json* list = tj.find("added_tokens");
  if (list == nullptr || list->is_null()) return out;
  if (!list->is_array()) invalid("added_tokens is not a list");
  for (const Json& a : list->as_array()) {
    const Json* id = a.find("id");
    const Json* content = a.find("content");
    if (!id || !id->is_number() || !content || !content->is_string())
      invalid("an added_tokens entry has no id / content");
    const double v = id->as_number();
    if (!(v >= 0 && v < static_cast<double>(kMaxId)) || v != static_cast<double>(static_cast<int64_t>(v))) {
      invalid("added token '" + content->as_string().substr(0, 64) + "' has id " + id->dump() + " outside [0, 2^24)");
    }
    const Json* special = a.find("special");
    out.push_back({static_cast<int64_t>(v), content->as_string(), special && special->is_bool() && special->as_bool()});
  }
  return out;
}

// model.vocab as (token, id) pairs; WordPiece and BPE store it as {"token": id}.
std::vector<std::pair<std::string, int64_t>> vocab_entries(const Json& model) {
  const Json* vocab = model.find("vocab");
  if (!vocab || !vocab->is_object()) invalid("model.vocab is not an object of token -> id");
  std::vector<std::pair<std::string, int64_t>> out;
  out.reserve(vocab->as_object().size());
  for (const auto& [text, id] : vocab->as_object()) {
    if (!id.is_number()) invalid("vocab entry '" + text.substr(0, 64) + "' has no numeric id");
    const double v = id.as_number();
    if (!(v >= 0 && v < static_cast<double>(kMaxId)) || v != static_cast<double>(static_cast<int64_t>(v))) {
      invalid("vocab entry '" + text.substr(0, 64) + "' has id " + id.dump() + " outside [0, 2^24)");
    }
    out.emplace_back(text, static_cast<int64_t>(v));
  }
  return out;
}

// The dense id space [0, n) of vocab + added tokens; gaps are "[PADi]" (type unused), as
// llama.cpp's converter fills them. `n` is at least vocab_size (config.json).
struct IdSpace {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::vector<bool> filled;
};

IdSpace id_space(const std::vector<std::pair<std::string, int64_t>>& vocab, const std::vector<Added>& added,
                 int64_t vocab_size) {
  int64_t max_id = -1;
  for (const auto& e : vocab) max_id = std::max(max_id, e.second);
  for (const auto& a : added) max_id = std::max(max_id, a.id);
  if (max_id < 0) invalid("the vocabulary is empty");
  if (vocab_size > 0 && max_id >= vocab_size) {
    throw Error(ErrorCode::kInvalidFile, "tokenizer.json: token id " + std::to_string(max_id) +
                                             " is outside config.json vocab_size " + std::to_string(vocab_size) +
                                             " (the embedding matrix has no row for it)");
  }
  const size_t listed = vocab.size() + added.size();
  if (static_cast<size_t>(max_id) + 1 > 2 * listed + 1024) {
    invalid("ids reach " + std::to_string(max_id) + " but only " + std::to_string(listed) + " tokens are listed");
  }
  const size_t n = static_cast<size_t>(std::max(max_id + 1, vocab_size));
  IdSpace s;
  s.tokens.resize(n);
  s.types.assign(n, attr(TokenAttr::kUnused));
  s.filled.assign(n, false);
  for (const auto& [text, id] : vocab) {
    s.tokens[static_cast<size_t>(id)] = text;
    s.types[static_cast<size_t>(id)] = attr(TokenAttr::kNormal);
    s.filled[static_cast<size_t>(id)] = true;
  }
  for (size_t i = 0; i < n; ++i) {
    if (!s.filled[i]) s.tokens[i] = "[PAD" + std::to_string(i) + "]";
  }
  return s;
}

// Added tokens: control when special or special-looking, else user-defined with "▁" spelled as a
// space (llama.cpp's user-defined tokens are pre-normalised text).
void apply_added(IdSpace& s, const std::vector<Added>& added) {
  for (const Added& a : added) {
    const auto i = static_cast<size_t>(a.id);
    if (a.special || looks_special(a.content)) {
      s.tokens[i] = a.content;
      s.types[i] = attr(TokenAttr::kControl);
    } else {
      s.tokens[i] = replace_all(a.content, kSpace, " ");
      s.types[i] = attr(TokenAttr::kUserDefined);
    }
    s.filled[i] = true;
  }
}

// model.merges: "a b" strings, or ["a", "b"] pairs (transformers >= 4.45); in the pair form a
// space inside a part is written as U+0120 as llama.cpp does, so "a b" splits unambiguously.
std::vector<std::string> read_merges(const Json& model, bool required) {
  std::vector<std::string> merges;
  const Json* m = model.find("merges");
  if (m == nullptr || m->is_null()) {
    if (required) invalid("model.merges is missing (a BPE tokenizer needs its merges)");
    return merges;
  }
  if (!m->is_array()) invalid("model.merges is not a list");
  merges.reserve(m->size());
  for (const Json& e : m->as_array()) {
    if (e.is_string()) {
      merges.push_back(e.as_string());
    } else if (e.is_array() && e.size() == 2 && e.at(size_t{0}).is_string() && e.at(size_t{1}).is_string()) {
      merges.push_back(replace_all(e.at(size_t{0}).as_string(), " ", "\xC4\xA0") + " " +
                       replace_all(e.at(size_t{1}).as_string(), " ", "\xC4\xA0"));
    } else {
      invalid("merge #" + std::to_string(merges.size()) + " is neither \"a b\" nor [\"a\", \"b\"]");
    }
  }
  return merges;
}

bool tree_has(const Json* node, std::string_view type, const char* child_list) {
  if (node == nullptr || !node->is_object()) return false;
  const Json* t = node->find("type");
  if (t && t->is_string() && t->as_string() == type) return true;
  const Json* list = node->find(child_list);
  if (list && list->is_array()) {
    for (const Json& c : list->as_array()) {
      if (tree_has(&c, type, child_list)) return true;
    }
  }
  return false;
}

const Json* find_in_tree(const Json* node, std::string_view type, const char* child_list) {
  if (node == nullptr || !node->is_object()) return nullptr;
  const Json* t = node->find("type");
  if (t && t->is_string() && t->as_string() == type) return node;
  const Json* list = node->find(child_list);
  if (list && list->is_array()) {
    for (const Json& c : list->as_array()) {
      if (const Json* f = find_in_tree(&c, type, child_list)) return f;
    }
  }
  return nullptr;
}

bool is_byte_token(std::string_view t) {
  auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); };
  return t.size() == 6 && t.substr(0, 3) == "<0x" && hex(t[3]) && hex(t[4]) && t[5] == '>';
}

// ------------------------------------------------------------------ the three families

void export_byte_level_bpe(const Json& tj, const Json& model, int64_t vocab_size, TokenizerExport& out) {
  // The pre-tokenizer identification (and its refusal of unknown regexes) is the runtime loader's.
  const VocabData d = vocab_data_from_hf_json(tj, nullptr);
  out.model = "gpt2";
  out.pre = d.pre;
  IdSpace s = id_space(vocab_entries(model), added_tokens(tj), vocab_size);
  apply_added(s, added_tokens(tj));
  out.tokens = std::move(s.tokens);
  out.types = std::move(s.types);
  out.merges = read_merges(model, /*required=*/true);
}

// Scores for SentencePiece's merge order: llama.cpp's SPM tokenizer merges the adjacent pair whose
// concatenation has the highest score; Hugging Face's BPE applies merges by rank. A token made by
// merge r gets -(r + 1) (its first merge, when several make it); tokens no merge makes keep 0
// (characters, bytes) so they never outrank a merge product.
std::vector<float> scores_from_merges(const std::vector<std::string>& tokens, const std::vector<std::string>& merges) {
  std::unordered_map<std::string_view, size_t> index;
  index.reserve(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) index.emplace(tokens[i], i);
  std::vector<float> scores(tokens.size(), 0.0f);
  std::vector<bool> made(tokens.size(), false);
  std::string joined;
  for (size_t r = 0; r < merges.size(); ++r) {
    const std::string& m = merges[r];
    const size_t sp = m.find(' ', 1);
    if (sp == std::string::npos) invalid("merge #" + std::to_string(r) + " '" + m.substr(0, 64) + "' has no space");
    joined.assign(m, 0, sp);
    joined.append(m, sp + 1, std::string::npos);
    const auto it = index.find(joined);
    if (it == index.end() || made[it->second]) continue;
    made[it->second] = true;
    scores[it->second] = -static_cast<float>(r + 1);
  }
  return scores;
}

void export_sentencepiece_bpe(const Json& tj, const Json& model, const Json* config, int64_t vocab_size,
                              TokenizerExport& out) {
  out.model = "llama";
  out.pre = "default";
  const std::vector<Added> added = added_tokens(tj);
  IdSpace s = id_space(vocab_entries(model), added, vocab_size);
  const std::string unk = token_content(model.find("unk_token"));
  for (size_t i = 0; i < s.tokens.size(); ++i) {
    if (!s.filled[i]) continue;
    if (is_byte_token(s.tokens[i])) s.types[i] = attr(TokenAttr::kByte);
    if (!unk.empty() && s.tokens[i] == unk) s.types[i] = attr(TokenAttr::kUnknown);
  }
  apply_added(s, added);
  for (const Added& a : added) {
    if (!unk.empty() && a.content == unk) s.types[static_cast<size_t>(a.id)] = attr(TokenAttr::kUnknown);
  }
  const std::vector<std::string> merges = read_merges(model, /*required=*/true);
  out.scores = scores_from_merges(s.tokens, merges);
  for (size_t i = 0; i < s.tokens.size(); ++i) {
    const auto t = static_cast<TokenAttr>(s.types[i]);
    if (t == TokenAttr::kUnused) out.scores[i] = -10000.0f;
    if (t == TokenAttr::kControl || t == TokenAttr::kUserDefined) out.scores[i] = -1000.0f;
  }
  out.tokens = std::move(s.tokens);
  out.types = std::move(s.types);

  // Whether a space is put in front of the text: a Prepend("▁") normalizer (Llama 2, TinyLlama)
  // or a Metaspace pre-tokenizer that prepends (Mistral's newer files); tokenizer_config's
  // add_prefix_space, when present, decides (as llama.cpp's llama converter lets it).
  bool prefix = false;
  if (const Json* prepend = find_in_tree(tj.find("normalizer"), "Prepend", "normalizers")) {
    const Json* p = prepend->find("prepend");
    prefix = p && p->is_string() && p->as_string() == kSpace;
  }
  if (const Json* ms = find_in_tree(tj.find("pre_tokenizer"), "Metaspace", "pretokenizers")) {
    const Json* scheme = ms->find("prepend_scheme");
    const Json* add = ms->find("add_prefix_space");
    if (scheme && scheme->is_string()) prefix = prefix || scheme->as_string() != "never";
    if (add && add->is_bool()) prefix = prefix || add->as_bool();
  }
  if (config) {
    if (const Json* a = config->find("add_prefix_space"); a && a->is_bool()) prefix = a->as_bool();
  }
  out.add_space_prefix = prefix;
}

void export_wordpiece(const Json& tj, const Json& model, const Json* tokenizer_config, const Json* config_json,
                      int64_t vocab_size, TokenizerExport& out) {
  out.model = "bert";
  out.pre = "default";  // llama.cpp's WordPiece tokenizer has one pre-tokenizer; the key is not read
  const std::vector<Added> added = added_tokens(tj);
  IdSpace s = id_space(vocab_entries(model), added, vocab_size);
  apply_added(s, added);
  // llama.cpp's "phantom space" form: a word-initial piece starts with "▁", a continuation
  // ("##ing") loses its prefix, control tokens stay as they are.
  for (size_t i = 0; i < s.tokens.size(); ++i) {
    if (s.types[i] == attr(TokenAttr::kControl)) continue;
    std::string& t = s.tokens[i];
    if (t.rfind("##", 0) == 0) {
      t.erase(0, 2);
    } else {
      t.insert(0, kSpace);
    }
  }
  out.tokens = std::move(s.tokens);
  out.types = std::move(s.types);
  const Json* bert_normalizer = find_in_tree(tj.find("normalizer"), "BertNormalizer", "normalizers");
  auto flag = [](const Json* from, const char* key) -> std::optional<bool> {
    const Json* v = from ? from->find(key) : nullptr;
    return v && v->is_bool() ? std::optional<bool>(v->as_bool()) : std::nullopt;
  };
  if (const auto l = flag(bert_normalizer, "lowercase")) out.normalizer_lowercase = *l;
  if (const auto a = flag(bert_normalizer, "strip_accents")) out.normalizer_strip_accents = *a;
  if (find_in_tree(tj.find("normalizer"), "Lowercase", "normalizers")) out.normalizer_lowercase = true;
  if (find_in_tree(tj.find("normalizer"), "StripAccents", "normalizers")) out.normalizer_strip_accents = true;
  // tokenizer_config.json's do_lower_case, when given, is what transformers' BertTokenizerFast
  // runs with: it rebuilds the normalizer when the file's flags differ (strip_accents then from
  // tokenizer_config too; absent or null, it follows lowercase).
  if (const Json* l = tokenizer_config ? tokenizer_config->find("do_lower_case") : nullptr; l && l->is_bool()) {
    if (out.normalizer_lowercase != l->as_bool()) {
      out.normalizer_lowercase = l->as_bool();
      const Json* a = tokenizer_config->find("strip_accents");
      out.normalizer_strip_accents = a && a->is_bool() ? std::optional<bool>(a->as_bool()) : std::nullopt;
    }
  }
  // BertNormalizer's handle_chinese_chars / clean_text (tokenizer_config.json's
  // tokenize_chinese_chars wins, as BertTokenizerFast rebuilds the normalizer from it): the
  // engine's WordPiece, like llama.cpp's, always cleans the text and puts each CJK ideograph in a
  // word of its own, so a tokenizer that does neither would encode differently after conversion.
  const bool chinese = flag(tokenizer_config, "tokenize_chinese_chars")
                           .value_or(flag(bert_normalizer, "handle_chinese_chars").value_or(true));
  if (!chinese) {
    throw Error(ErrorCode::kUnsupported,
                "tokenizer: tokenize_chinese_chars / handle_chinese_chars false is not supported (the engine's "
                "WordPiece, like llama.cpp's, splits CJK ideographs into words of their own)");
  }
  if (!flag(bert_normalizer, "clean_text").value_or(true)) {
    throw Error(ErrorCode::kUnsupported,
                "tokenizer.json: BertNormalizer clean_text false is not supported (the engine's WordPiece, like "
                "llama.cpp's, always drops control characters and maps whitespace to spaces)");
  }
  out.token_type_count = 1;
  if (config_json) {
    if (const Json* t = config_json->find("type_vocab_size");
        t && t->is_number() && t->as_number() >= 1 && t->as_number() <= 1024) {
      out.token_type_count = static_cast<int32_t>(t->as_number());
    }
  }
}

// ------------------------------------------------------------------ special tokens

// llama.cpp's gguf.SpecialVocab: ids by token type and whether BOS / EOS / SEP are added.
class SpecialVocab {
 public:
  SpecialVocab(const TokenizerSources& src, const std::vector<Added>& added, size_t n_vocab)
      : added_(added), n_vocab_(n_vocab) {
    const Json* tc = src.tokenizer_config && src.tokenizer_config->is_object() ? src.tokenizer_config : nullptr;
    for (const char* t : {"bos", "eos", "unk", "sep", "pad", "cls", "mask"}) types_.emplace_back(t);
    // Token texts by type, from tokenizer_config; the post-processor may fill or move them.
    for (const auto& t : types_) text_[t] = tc ? token_content(tc->find(t + "_token")) : "";
    if (tc) {
      if (text_["bos"].empty() && !text_["cls"].empty()) text_["bos"] = text_["cls"];
      if (text_["eos"].empty() && !text_["sep"].empty()) text_["eos"] = text_["sep"];
    }
    if (const Json* pp = src.tokenizer_json->find("post_processor"); pp && pp->is_object()) {
      const Json* list = pp->find("processors");
      if (list && list->is_array()) {
        for (const Json& p : list->as_array()) post_processor(p, tc != nullptr);
      } else {
        post_processor(*pp, tc != nullptr);
      }
    }
    for (const auto& t : types_) {
      if (tc) {
        if (const Json* a = tc->find("add_" + t + "_token"); a && a->is_bool()) set_add(t, a->as_bool());
      }
      const std::string& text = text_[t];
      if (text.empty()) continue;
      for (const Added& a : added_) {  // the first added token with that text, as llama.cpp
        if (a.content == text) {
          set_id(t, a.id);
          break;
        }
      }
    }
    if (src.config_json && src.config_json->is_object()) {
      for (const auto& t : types_) {
        const Json* v = src.config_json->find(t + "_token_id");
        if (v && v->is_number() && v->as_number() >= 0 && v->as_number() < static_cast<double>(kMaxId) &&
            v->as_number() == static_cast<double>(static_cast<int64_t>(v->as_number()))) {
          set_id(t, static_cast<int64_t>(v->as_number()));
        }
      }
    }
  }

  std::vector<std::pair<std::string, int32_t>> ids;
  std::vector<std::pair<std::string, bool>> adds;

 private:
  void set_id(const std::string& type, int64_t id) {
    if (id < 0 || static_cast<size_t>(id) >= n_vocab_) return;  // out of range: skipped, as llama.cpp
    for (const auto& e : ids) {
      if (e.first == type) return;  // the first source wins
    }
    ids.emplace_back(type, static_cast<int32_t>(id));
  }
  void set_add(const std::string& type, bool v) {
    for (auto& e : adds) {
      if (e.first == type) {
        e.second = v;
        return;
      }
    }
    adds.emplace_back(type, v);
  }
  static std::string special_token_id(const Json& piece) {
    const Json* st = piece.find("SpecialToken");
    return st ? token_content(st->find("id")) : "";
  }
  static std::string sequence_id(const Json& piece) {
    const Json* sq = piece.find("Sequence");
    return sq ? token_content(sq->find("id")) : "";
  }

  void post_processor(const Json& p, bool have_config) {
    const std::string type = token_content(p.find("type"));
    if (type == "RobertaProcessing") {
      set_add("bos", true);
      set_add("eos", true);
      set_add("sep", true);
      if (have_config && text_["cls"].empty()) {
        const Json* cls = p.find("cls");
        text_["cls"] = cls && cls->is_array() && cls->size() > 0 ? token_content(&cls->at(size_t{0})) : text_["bos"];
      }
      if (have_config && text_["sep"].empty()) {
        const Json* sep = p.find("sep");
        text_["sep"] = sep && sep->is_array() && sep->size() > 0 ? token_content(&sep->at(size_t{0})) : text_["eos"];
      }
      return;
    }
    if (type != "TemplateProcessing") return;
    // Only simple templates ("<bos> $A", "$A <eos>", "<cls> $A <sep>") are understood, as in
    // llama.cpp: the first / last special token of the single-sequence template.
    const Json* single = p.find("single");
    if (!single || !single->is_array() || single->size() < 2) return;
    const std::string first = special_token_id(single->at(size_t{0}));
    const std::string last = special_token_id(single->at(single->size() - 1));
    std::string& bos = text_["bos"];
    std::string& cls = text_["cls"];
    std::string& eos = text_["eos"];
    if (!first.empty()) {
      if (!have_config) {
        bos = first;
      } else if (first != bos && first != cls) {
        if (bos.empty()) bos = first;
        if (cls.empty()) cls = first;
      }
      set_add("bos", first == bos || first == cls);
    }
    if (!last.empty()) {
      if (!have_config) {
        eos = last;
      } else if (last != eos) {
        // The old EOS becomes the end-of-turn (or end-of-message) token.
        const char* moved = std::find(types_.begin(), types_.end(), "eot") == types_.end()   ? "eot"
                            : std::find(types_.begin(), types_.end(), "eom") == types_.end() ? "eom"
                                                                                             : nullptr;
        if (moved) {
          types_.emplace_back(moved);
          text_[moved] = eos;
        }
        eos = last;
      }
      set_add("eos", true);
    }
    // "A <sep> B" in the pair template: SEP is added between two sequences.
    const Json* pair = p.find("pair");
    if (!pair || !pair->is_array() || pair->size() == 0) return;
    std::vector<const Json*> mid;
    for (const Json& e : pair->as_array()) mid.push_back(&e);
    if (!first.empty() && !mid.empty() && special_token_id(*mid.front()) == first) mid.erase(mid.begin());
    if (!last.empty() && !mid.empty() && special_token_id(*mid.back()) == last) mid.pop_back();
    if (mid.size() < 3 || sequence_id(*mid.front()) != "A" || sequence_id(*mid.back()) != "B") return;
    // mid is A, then one or two tokens, then B: the first counts when the single template ends
    // without a special token, the second (A <sep> <eos> B) always.
    bool add_sep = false;
    const std::string& sep = text_["sep"];
    const std::string s1 = special_token_id(*mid[1]);
    if (!s1.empty() && (s1 == sep || s1 == eos) && last.empty()) add_sep = true;
    if (mid.size() == 4) {
      const std::string s2 = special_token_id(*mid[2]);
      if (!s2.empty() && (s2 == sep || s2 == eos)) add_sep = true;
    }
    set_add("sep", add_sep);
    if (add_sep && sep.empty() && have_config) text_["sep"] = eos;
  }

  const std::vector<Added>& added_;
  size_t n_vocab_;
  std::vector<std::string> types_;
  std::unordered_map<std::string, std::string> text_;
};

void read_chat_template(const TokenizerSources& src, TokenizerExport& out) {
  const Json* tc = src.tokenizer_config;
  const Json* t = tc && tc->is_object() ? tc->find("chat_template") : nullptr;
  if (t == nullptr || t->is_null()) {
    out.chat_template = src.chat_template_file;
    return;
  }
  if (t->is_string()) {
    out.chat_template = t->as_string();
    return;
  }
  if (!t->is_array()) {
    throw Error(ErrorCode::kInvalidFile, "tokenizer_config.json: chat_template is neither a string nor a list");
  }
  for (const Json& c : t->as_array()) {
    const std::string name = token_content(c.find("name"));
    const Json* body = c.find("template");
    if (name.empty() || !body || !body->is_string()) continue;
    std::string clean;  // llama.cpp keeps [A-Za-z0-9] in template names, '_' for the rest
    for (char ch : name)
      clean += ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')) ? ch : '_';
    if (clean == "default") {
      out.chat_template = body->as_string();
    } else {
      out.named_chat_templates.emplace_back(clean, body->as_string());
    }
  }
}

}  // namespace

std::optional<int32_t> TokenizerExport::special_id(const std::string& type) const {
  for (const auto& [t, id] : special_ids) {
    if (t == type) return id;
  }
  return std::nullopt;
}

TokenizerExport export_hf_tokenizer(const TokenizerSources& src) {
  require(src.tokenizer_json != nullptr, ErrorCode::kIo,
          "no tokenizer.json (convert needs the fast-tokenizer file; tokenizer.model alone is not read, vocab.txt "
          "only for BERT models)");
  const Json& tj = *src.tokenizer_json;
  if (!tj.is_object()) invalid("the top level is not an object");
  const Json* model = tj.find("model");
  if (!model || !model->is_object()) invalid("no 'model' object");
  const std::string type = token_content(model->find("type"));
  const Json* tc = src.tokenizer_config && src.tokenizer_config->is_object() ? src.tokenizer_config : nullptr;

  TokenizerExport out;
  if (type == "BPE" && tree_has(tj.find("pre_tokenizer"), "ByteLevel", "pretokenizers")) {
    export_byte_level_bpe(tj, *model, src.vocab_size, out);
  } else if (type == "BPE") {
    const Json* bf = model->find("byte_fallback");
    require(bf && bf->is_bool() && bf->as_bool(), ErrorCode::kUnsupported,
            "tokenizer.json: a BPE model with neither a ByteLevel pre-tokenizer nor byte_fallback is not supported");
    export_sentencepiece_bpe(tj, *model, tc, src.vocab_size, out);
  } else if (type == "WordPiece") {
    export_wordpiece(tj, *model, tc, src.config_json, src.vocab_size, out);
  } else {
    throw Error(ErrorCode::kUnsupported, "tokenizer.json: model type '" + type.substr(0, 32) +
                                             "' is not supported (supported: BPE (byte-level or SentencePiece-style), "
                                             "WordPiece)");
  }
  SpecialVocab sv(src, added_tokens(tj), out.tokens.size());
  out.special_ids = std::move(sv.ids);
  out.add_special = std::move(sv.adds);
  read_chat_template(src, out);
  return out;
}

void write_tokenizer(gguf::GgufWriter& w, const TokenizerExport& t) {
  w.set_string("tokenizer.ggml.model", t.model);
  w.set_string("tokenizer.ggml.pre", t.pre);
  w.set_array_string("tokenizer.ggml.tokens", t.tokens);
  if (!t.scores.empty()) w.set_array_f32("tokenizer.ggml.scores", t.scores);
  w.set_array_i32("tokenizer.ggml.token_type", t.types);
  if (t.token_type_count > 0) w.set_u32("tokenizer.ggml.token_type_count", static_cast<uint32_t>(t.token_type_count));
  if (!t.merges.empty()) w.set_array_string("tokenizer.ggml.merges", t.merges);
  static const std::pair<const char*, const char*> kIdKeys[] = {
      {"bos", "tokenizer.ggml.bos_token_id"},     {"eos", "tokenizer.ggml.eos_token_id"},
      {"unk", "tokenizer.ggml.unknown_token_id"}, {"sep", "tokenizer.ggml.seperator_token_id"},
      {"pad", "tokenizer.ggml.padding_token_id"}, {"mask", "tokenizer.ggml.mask_token_id"},
      {"eot", "tokenizer.ggml.eot_token_id"},     {"eom", "tokenizer.ggml.eom_token_id"},
  };
  // In the order they were found; "cls" has no GGUF key (llama.cpp's writer has no handler for it).
  for (const auto& [type, id] : t.special_ids) {
    for (const auto& [k, key] : kIdKeys) {
      if (type == k) w.set_u32(key, static_cast<uint32_t>(id));
    }
  }
  for (const auto& [type, v] : t.add_special) {
    if (type == "bos" || type == "eos" || type == "sep") w.set_bool("tokenizer.ggml.add_" + type + "_token", v);
  }
  if (t.add_space_prefix) w.set_bool("tokenizer.ggml.add_space_prefix", *t.add_space_prefix);
  if (!t.chat_template.empty()) w.set_string("tokenizer.chat_template", t.chat_template);
  if (!t.named_chat_templates.empty()) {
    std::vector<std::string> names;
    for (const auto& [name, body] : t.named_chat_templates) {
      w.set_string("tokenizer.chat_template." + name, body);
      names.push_back(name);
    }
    w.set_array_string("tokenizer.chat_templates", names);
  }
  if (t.normalizer_lowercase) w.set_bool("tokenizer.ggml.normalizer.lowercase", *t.normalizer_lowercase);
  if (t.normalizer_strip_accents) w.set_bool("tokenizer.ggml.normalizer.strip_accents", *t.normalizer_strip_accents);
}

}  // namespace edgellm::convert
