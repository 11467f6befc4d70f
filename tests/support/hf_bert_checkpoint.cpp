#include "support/hf_bert_checkpoint.h"

#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <unordered_map>

#include "core/json.h"
#include "gguf/gguf_reader.h"
#include "support/test_env.h"
#include "tokenizer/vocab_data.h"

namespace edgellm::test {
namespace {

namespace fs = std::filesystem;

void bert_write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

// The small vocabulary: BERT's five specials at its usual low ids, words, continuations,
// punctuation, then filler tokens up to `n`.
std::vector<std::string> small_bert_vocab(int64_t n) {
  std::vector<std::string> v = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  for (const char* w :
       {"the",  "a",      "cat",   "dog",   "sat",   "on",    "mat",   "play", "run", "un",    "happy", "is",
        "it",   "hello",  "world", "model", "phone", "quick", "brown", "fox",  "##s", "##ing", "##ed",  "##ly",
        "##py", "##ness", "##ow",  ".",     ",",     "!",     "?",     "'",    "-",   "(",     ")"}) {
    v.emplace_back(w);
  }
  for (int64_t i = static_cast<int64_t>(v.size()); i < n; ++i) v.push_back("tok" + std::to_string(i));
  return v;
}

// llama.cpp's BGE vocabulary file back in WordPiece form: "▁word" -> "word", "ing" -> "##ing",
// control tokens as they are.
std::vector<std::string> bge_vocab() {
  const auto f = gguf::GgufFile::open(shared_testdata("vocab/ggml-vocab-bert-bge.gguf"));
  const auto tokens = *f->get_string_array("tokenizer.ggml.tokens");
  const std::vector<int64_t> types = *f->get_int_array("tokenizer.ggml.token_type");
  const std::string sp = "\xE2\x96\x81";
  std::vector<std::string> out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::string t(tokens[i]);
    if (types[i] == static_cast<int64_t>(TokenAttr::kControl)) {
      // as is
    } else if (t.rfind(sp, 0) == 0) {
      t.erase(0, sp.size());
    } else {
      t = "##" + t;
    }
    out.push_back(std::move(t));
  }
  return out;
}

std::string small_bert_tokenizer_json(const std::vector<std::string>& vocab) {
  Json v = Json::object();
  for (size_t i = 0; i < vocab.size(); ++i) v.as_object().emplace_back(vocab[i], Json(static_cast<int64_t>(i)));
  Json added = Json::array();
  for (int64_t i = 0; i < 5; ++i) {
    Json a = Json::object();
    a.set("id", Json(i));
    a.set("content", Json(vocab[static_cast<size_t>(i)]));
    a.set("single_word", Json(false));
    a.set("lstrip", Json(false));
    a.set("rstrip", Json(false));
    a.set("normalized", Json(false));
    a.set("special", Json(true));
    added.push_back(std::move(a));
  }
  // As transformers saves bert-base-uncased's tokenizer.json.
  Json tj = Json::parse(R"({"version": "1.0", "truncation": null, "padding": null,
      "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                     "strip_accents": null, "lowercase": true},
      "pre_tokenizer": {"type": "BertPreTokenizer"},
      "post_processor": {"type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                   {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
        "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                 {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
                 {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
        "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
                           "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}},
      "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
      "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                "max_input_chars_per_word": 100}})");
  const_cast<Json&>(tj.at("model")).set("vocab", std::move(v));
  tj.set("added_tokens", std::move(added));
  return tj.dump();
}

std::vector<double> bert_linear(const HfTensor& w, const HfTensor& b, const std::vector<double>& x) {
  const int64_t out = w.shape[0], in = w.shape[1];
  std::vector<double> y(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    double s = b.values[static_cast<size_t>(o)];
    for (int64_t i = 0; i < in; ++i)
      s += static_cast<double>(w.values[static_cast<size_t>(o * in + i)]) * x[static_cast<size_t>(i)];
    y[static_cast<size_t>(o)] = s;
  }
  return y;
}

void bert_layer_norm(std::vector<double>& x, const HfTensor& w, const HfTensor& b, double eps) {
  double mean = 0, var = 0;
  for (double v : x) mean += v;
  mean /= static_cast<double>(x.size());
  for (double v : x) var += (v - mean) * (v - mean);
  var /= static_cast<double>(x.size());
  const double inv = 1.0 / std::sqrt(var + eps);
  for (size_t i = 0; i < x.size(); ++i) x[i] = (x[i] - mean) * inv * w.values[i] + b.values[i];
}

bool bert_punct(unsigned char c) {
  return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
}

}  // namespace

const HfTensor& TinyBertCheckpoint::at(const std::string& name) const {
  const auto it = tensors.find(name);
  if (it == tensors.end()) throw std::runtime_error("tiny BERT checkpoint has no tensor " + name);
  return it->second;
}

std::string tiny_bert_config_json(const TinyBertSpec& s) {
  char eps[64];
  std::snprintf(eps, sizeof eps, "%.17g", s.ln_eps);
  return std::string("{\n  \"_name_or_path\": \"tiny-bert\",\n  \"architectures\": [\"") +
         (s.masked_lm ? "BertForMaskedLM" : "BertModel") +
         "\"],\n  \"attention_probs_dropout_prob\": 0.1,\n  \"classifier_dropout\": null,\n"
         "  \"hidden_act\": \"gelu\",\n  \"hidden_dropout_prob\": 0.1,\n  \"hidden_size\": " +
         std::to_string(s.embd) +
         ",\n  \"initializer_range\": 0.02,\n  \"intermediate_size\": " + std::to_string(s.ffn) +
         ",\n  \"layer_norm_eps\": " + eps + ",\n  \"max_position_embeddings\": " + std::to_string(s.positions) +
         ",\n  \"model_type\": \"bert\",\n  \"num_attention_heads\": " + std::to_string(s.heads) +
         ",\n  \"num_hidden_layers\": " + std::to_string(s.layers) +
         ",\n  \"pad_token_id\": 0,\n  \"position_embedding_type\": \"absolute\",\n  \"torch_dtype\": \"float32\",\n"
         "  \"transformers_version\": \"4.44.2\",\n  \"type_vocab_size\": " +
         std::to_string(s.type_vocab) + ",\n  \"use_cache\": true,\n  \"vocab_size\": " + std::to_string(s.vocab) +
         "\n}\n";
}

TinyBertCheckpoint write_tiny_bert_checkpoint(const TinyBertSpec& s, const std::string& dir) {
  fs::create_directories(dir);
  TinyBertCheckpoint ck;
  ck.spec = s;
  ck.dir = dir;
  ck.vocab = s.tokenizer == "bge-vocab-txt" ? bge_vocab() : small_bert_vocab(s.vocab);
  if (static_cast<int64_t>(ck.vocab.size()) != s.vocab) {
    throw std::runtime_error("tiny BERT: the vocabulary has " + std::to_string(ck.vocab.size()) +
                             " tokens, spec.vocab " + std::to_string(s.vocab));
  }
  std::mt19937_64 rng(s.seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const std::string prefix = s.masked_lm ? "bert." : "";
  std::vector<HfTensor> order;
  auto add = [&](const std::string& name, std::vector<int64_t> shape, float scale, float offset = 0.0f,
                 bool keep = true) {
    HfTensor t;
    t.name = (keep ? prefix : std::string()) + name;
    t.dtype = s.dtype;
    t.shape = std::move(shape);
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    t.values.resize(static_cast<size_t>(n));
    for (float& v : t.values) v = round_to_dtype(offset + scale * normal(rng), s.dtype);
    order.push_back(t);
    if (keep) ck.tensors.emplace(name, std::move(t));
  };
  const float in_e = 1.0f / std::sqrt(static_cast<float>(s.embd));
  if (s.masked_lm) {
    // The buffer older checkpoints store (int64 positions): not a weight.
    HfTensor pos;
    pos.name = "bert.embeddings.position_ids";
    pos.dtype = "I64";
    pos.shape = {1, s.positions};
    for (int64_t i = 0; i < s.positions; ++i) pos.raw.append(reinterpret_cast<const char*>(&i), sizeof i);
    order.push_back(pos);
  }
  add("embeddings.word_embeddings.weight", {s.vocab, s.embd}, 1.0f);
  add("embeddings.position_embeddings.weight", {s.positions, s.embd}, 0.5f);
  add("embeddings.token_type_embeddings.weight", {s.type_vocab, s.embd}, 0.5f);
  add("embeddings.LayerNorm.weight", {s.embd}, 0.2f, 1.0f);
  add("embeddings.LayerNorm.bias", {s.embd}, 0.2f);
  for (int64_t l = 0; l < s.layers; ++l) {
    const std::string p = "encoder.layer." + std::to_string(l) + ".";
    for (const char* m : {"query", "key", "value"}) {
      add(p + "attention.self." + m + ".weight", {s.embd, s.embd}, std::string(m) == "value" ? in_e : 2.0f * in_e);
      add(p + "attention.self." + m + ".bias", {s.embd}, 0.3f);
    }
    add(p + "attention.output.dense.weight", {s.embd, s.embd}, in_e);
    add(p + "attention.output.dense.bias", {s.embd}, 0.2f);
    add(p + "attention.output.LayerNorm.weight", {s.embd}, 0.2f, 1.0f);
    add(p + "attention.output.LayerNorm.bias", {s.embd}, 0.2f);
    add(p + "intermediate.dense.weight", {s.ffn, s.embd}, 1.5f * in_e);
    add(p + "intermediate.dense.bias", {s.ffn}, 0.3f);
    add(p + "output.dense.weight", {s.embd, s.ffn}, 1.0f / std::sqrt(static_cast<float>(s.ffn)));
    add(p + "output.dense.bias", {s.embd}, 0.2f);
    add(p + "output.LayerNorm.weight", {s.embd}, 0.2f, 1.0f);
    add(p + "output.LayerNorm.bias", {s.embd}, 0.2f);
  }
  if (s.masked_lm) {
    // The masked-LM head an embedding model does not use.
    add("cls.predictions.bias", {s.vocab}, 0.1f, 0.0f, false);
    add("cls.predictions.transform.dense.weight", {s.embd, s.embd}, in_e, 0.0f, false);
    add("cls.predictions.transform.dense.bias", {s.embd}, 0.1f, 0.0f, false);
    add("cls.predictions.transform.LayerNorm.weight", {s.embd}, 0.1f, 1.0f, false);
    add("cls.predictions.transform.LayerNorm.bias", {s.embd}, 0.1f, 0.0f, false);
  } else {
    add("pooler.dense.weight", {s.embd, s.embd}, in_e);  // BertModel's pooler: not used for embeddings
    add("pooler.dense.bias", {s.embd}, 0.1f);
  }

  bert_write_file(dir + "/config.json", tiny_bert_config_json(s));
  if (s.shards <= 1) {
    bert_write_file(dir + "/model.safetensors", safetensors_bytes(order, R"({"format": "pt"})"));
  } else {
    std::vector<std::vector<HfTensor>> parts(static_cast<size_t>(s.shards));
    for (size_t i = 0; i < order.size(); ++i) parts[i * parts.size() / order.size()].push_back(order[i]);
    Json map = Json::object();
    for (size_t p = 0; p < parts.size(); ++p) {
      char name[64];
      std::snprintf(name, sizeof name, "model-%05zu-of-%05d.safetensors", p + 1, s.shards);
      bert_write_file(dir + "/" + name, safetensors_bytes(parts[p], R"({"format": "pt"})"));
      for (const HfTensor& t : parts[p]) map.set(t.name, Json(name));
    }
    Json index = Json::object();
    index.set("metadata", Json::parse(R"({"total_size": 0})"));
    index.set("weight_map", std::move(map));
    bert_write_file(dir + "/model.safetensors.index.json", index.dump());
  }

  Json tc = Json::parse(R"({"cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]", "unk_token": "[UNK]",
                            "mask_token": "[MASK]", "model_max_length": 512, "strip_accents": null,
                            "tokenize_chinese_chars": true, "tokenizer_class": "BertTokenizer"})");
  tc.set("do_lower_case", Json(s.do_lower_case));
  bert_write_file(dir + "/tokenizer_config.json", tc.dump());
  if (s.tokenizer == "small") {
    bert_write_file(dir + "/tokenizer.json", small_bert_tokenizer_json(ck.vocab));
  } else {
    std::string txt;
    for (const std::string& t : ck.vocab) txt += t + "\n";
    bert_write_file(dir + "/vocab.txt", txt);
  }
  if (!s.pooling.empty()) {
    bert_write_file(dir + "/modules.json", R"([
  {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
  {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
  {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}
])");
    fs::create_directories(dir + "/1_Pooling");
    const std::string n = std::to_string(s.embd);
    bert_write_file(dir + "/1_Pooling/config.json",
                    s.pooling == "cls-mode"
                        ? R"({"word_embedding_dimension": )" + n + R"(, "pooling_mode": "cls"})"
                        : R"({"word_embedding_dimension": )" + n + R"(, "pooling_mode_cls_token": )" +
                              (s.pooling == "cls" ? "true" : "false") + R"(, "pooling_mode_mean_tokens": )" +
                              (s.pooling == "mean" ? "true" : "false") +
                              R"(, "pooling_mode_max_tokens": false, "pooling_mode_mean_sqrt_len_tokens": false,
                      "pooling_mode_weightedmean_tokens": false, "pooling_mode_lasttoken": false, "include_prompt": true})");
  }
  return ck;
}

std::vector<std::vector<double>> naive_bert_hidden(const TinyBertCheckpoint& ck, const std::vector<int32_t>& tokens,
                                                   const std::vector<int32_t>& types) {
  const TinyBertSpec& s = ck.spec;
  const size_t T = tokens.size(), E = static_cast<size_t>(s.embd);
  const size_t H = static_cast<size_t>(s.heads), hd = E / H;
  std::vector<std::vector<double>> x(T, std::vector<double>(E));
  const HfTensor& word = ck.at("embeddings.word_embeddings.weight");
  const HfTensor& pos = ck.at("embeddings.position_embeddings.weight");
  const HfTensor& typ = ck.at("embeddings.token_type_embeddings.weight");
  for (size_t t = 0; t < T; ++t) {
    const size_t ty = types.empty() ? 0 : static_cast<size_t>(types[t]);
    for (size_t i = 0; i < E; ++i) {
      x[t][i] = static_cast<double>(word.values[static_cast<size_t>(tokens[t]) * E + i]) + pos.values[t * E + i] +
                typ.values[ty * E + i];
    }
    bert_layer_norm(x[t], ck.at("embeddings.LayerNorm.weight"), ck.at("embeddings.LayerNorm.bias"), s.ln_eps);
  }
  for (int64_t l = 0; l < s.layers; ++l) {
    const std::string p = "encoder.layer." + std::to_string(l) + ".";
    std::vector<std::vector<double>> q(T), k(T), v(T);
    for (size_t t = 0; t < T; ++t) {
      q[t] = bert_linear(ck.at(p + "attention.self.query.weight"), ck.at(p + "attention.self.query.bias"), x[t]);
      k[t] = bert_linear(ck.at(p + "attention.self.key.weight"), ck.at(p + "attention.self.key.bias"), x[t]);
      v[t] = bert_linear(ck.at(p + "attention.self.value.weight"), ck.at(p + "attention.self.value.bias"), x[t]);
    }
    for (size_t t = 0; t < T; ++t) {
      std::vector<double> ctx(E, 0.0);
      for (size_t h = 0; h < H; ++h) {
        std::vector<double> sc(T);
        double mx = -1e300;
        for (size_t j = 0; j < T; ++j) {
          double d = 0;
          for (size_t i = 0; i < hd; ++i) d += q[t][h * hd + i] * k[j][h * hd + i];
          sc[j] = d / std::sqrt(static_cast<double>(hd));
          mx = std::max(mx, sc[j]);
        }
        double sum = 0;
        for (double& e : sc) sum += (e = std::exp(e - mx));
        for (size_t j = 0; j < T; ++j) {
          for (size_t i = 0; i < hd; ++i) ctx[h * hd + i] += sc[j] / sum * v[j][h * hd + i];
        }
      }
      const std::vector<double> o =
          bert_linear(ck.at(p + "attention.output.dense.weight"), ck.at(p + "attention.output.dense.bias"), ctx);
      for (size_t i = 0; i < E; ++i) x[t][i] += o[i];
      bert_layer_norm(x[t], ck.at(p + "attention.output.LayerNorm.weight"),
                      ck.at(p + "attention.output.LayerNorm.bias"), s.ln_eps);
      std::vector<double> u =
          bert_linear(ck.at(p + "intermediate.dense.weight"), ck.at(p + "intermediate.dense.bias"), x[t]);
      for (double& e : u) e = 0.5 * e * (1.0 + std::erf(e / std::sqrt(2.0)));  // "gelu": the exact form
      const std::vector<double> d = bert_linear(ck.at(p + "output.dense.weight"), ck.at(p + "output.dense.bias"), u);
      for (size_t i = 0; i < E; ++i) x[t][i] += d[i];
      bert_layer_norm(x[t], ck.at(p + "output.LayerNorm.weight"), ck.at(p + "output.LayerNorm.bias"), s.ln_eps);
    }
  }
  return x;
}

std::vector<int32_t> naive_wordpiece(const std::vector<std::string>& vocab, const std::string& text, bool lower) {
  std::unordered_map<std::string, int32_t> id;
  for (size_t i = 0; i < vocab.size(); ++i) id.emplace(vocab[i], static_cast<int32_t>(i));
  std::vector<std::string> words;
  std::string cur;
  for (unsigned char c : text) {
    if (std::isspace(c)) {
      if (!cur.empty()) words.push_back(cur);
      cur.clear();
    } else if (bert_punct(c)) {
      if (!cur.empty()) words.push_back(cur);
      cur.clear();
      words.emplace_back(1, static_cast<char>(c));
    } else {
      cur += static_cast<char>(lower ? std::tolower(c) : c);
    }
  }
  if (!cur.empty()) words.push_back(cur);
  std::vector<int32_t> out;
  for (const std::string& w : words) {
    std::vector<int32_t> pieces;
    size_t start = 0;
    bool bad = false;
    while (start < w.size()) {
      size_t end = w.size();
      int32_t found = -1;
      for (; end > start; --end) {
        const std::string sub = (start > 0 ? "##" : "") + w.substr(start, end - start);
        if (const auto it = id.find(sub); it != id.end()) {
          found = it->second;
          break;
        }
      }
      if (found < 0) {
        bad = true;
        break;
      }
      pieces.push_back(found);
      start = end;
    }
    if (bad) {
      out.push_back(id.at("[UNK]"));
    } else {
      out.insert(out.end(), pieces.begin(), pieces.end());
    }
  }
  return out;
}

}  // namespace edgellm::test
