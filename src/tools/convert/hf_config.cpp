#include "tools/convert/hf_config.h"

#include <cmath>

#include "core/error.h"

namespace edgellm::convert {
namespace {

// Bounds no real model reaches; the same spirit as model/hparams.cpp (products of these stay far
// from overflow in the shape checks).
constexpr int64_t kMaxWidth = int64_t{1} << 20;
constexpr int64_t kMaxCount = int64_t{1} << 12;
constexpr int64_t kMaxVocab = int64_t{1} << 24;
constexpr int64_t kMaxContext = int64_t{1} << 30;

class Reader {
 public:
  Reader(const Json& obj, std::string origin, std::string prefix = "")
      : obj_(obj), origin_(std::move(origin)), prefix_(std::move(prefix)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw Error(ErrorCode::kInvalidFile, origin_ + ": '" + prefix_ + key + "' " + what);
  }

  const Json* get(const std::string& key) const {
    const Json* v = obj_.find(key);
    return v == nullptr || v->is_null() ? nullptr : v;
  }

  int64_t integer(const std::string& key, int64_t lo, int64_t hi,
                  std::optional<int64_t> fallback = std::nullopt) const {
    const Json* v = get(key);
    if (v == nullptr) {
      if (fallback) return *fallback;
      fail(key, "is missing");
    }
    if (!v->is_number()) fail(key, "is not a number");
    const double d = v->as_number();
    if (d != std::floor(d) || std::fabs(d) > 9.007199254740992e15) fail(key, "= " + v->dump() + " is not an integer");
    const auto i = static_cast<int64_t>(d);
    if (i < lo || i > hi) {
      fail(key, "= " + std::to_string(i) + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    return i;
  }

  double number(const std::string& key, double lo, double hi, double fallback) const {
    const Json* v = get(key);
    if (v == nullptr) return fallback;
    if (!v->is_number()) fail(key, "is not a number");
    const double d = v->as_number();
    if (!std::isfinite(d) || d < lo || d > hi) fail(key, "= " + v->dump() + " is out of range");
    return d;
  }

  std::optional<double> optional_number(const std::string& key) const {
    const Json* v = get(key);
    if (v == nullptr) return std::nullopt;
    return number(key, -1e12, 1e12, 0);
  }

  bool boolean(const std::string& key, bool fallback) const {
    const Json* v = get(key);
    if (v == nullptr) return fallback;
    if (!v->is_bool()) fail(key, "is not true or false");
    return v->as_bool();
  }

  std::string string(const std::string& key) const {
    const Json* v = get(key);
    if (v == nullptr) return {};
    if (!v->is_string()) fail(key, "is not a string");
    return v->as_string();
  }

  // An id that config.json may hold as an integer; anything else (a list, null) is absent.
  std::optional<int64_t> token_id(const std::string& key) const {
    const Json* v = get(key);
    // Old configs write -1 for "none" (pad_token_id); lists (Llama 3.1's eos) are not one id.
    if (v == nullptr || !v->is_number() || v->as_number() < 0) return std::nullopt;
    return integer(key, 0, kMaxVocab);
  }

 private:
  const Json& obj_;
  std::string origin_;
  std::string prefix_;
};

void read_rope(const Json& c, const Reader& top, const std::string& origin, HfConfig& cfg) {
  // Newer transformers name it rope_parameters (and may put rope_theta inside it).
  std::string key = "rope_parameters";
  const Json* rp = c.find(key);
  if (rp == nullptr || rp->is_null()) {
    key = "rope_scaling";
    rp = c.find(key);
  }
  cfg.rope_theta = top.number("rope_theta", 1e-3, 1e12, 10000.0);
  if (rp == nullptr || rp->is_null()) return;
  if (!rp->is_object()) top.fail(key, "is not an object");
  const Reader r(*rp, origin, key + ".");
  if (r.get("rope_theta")) cfg.rope_theta = r.number("rope_theta", 1e-3, 1e12, cfg.rope_theta);
  std::string type = r.string("rope_type");
  if (type.empty()) type = r.string("type");
  if (type == "default") type.clear();
  cfg.rope.type = type;
  cfg.rope.factor = r.number("factor", 1e-6, 1e6, 1.0);
  cfg.rope.low_freq_factor = r.number("low_freq_factor", 1e-6, 1e6, 1.0);
  cfg.rope.high_freq_factor = r.number("high_freq_factor", 1e-6, 1e6, 4.0);
  cfg.rope.original_max_position_embeddings = r.integer("original_max_position_embeddings", 1, kMaxContext, 0);
  cfg.rope.extrapolation_factor = r.optional_number("extrapolation_factor");
  cfg.rope.attention_factor = r.optional_number("attention_factor");
  if (!cfg.rope.attention_factor) cfg.rope.attention_factor = r.optional_number("attn_factor");
  cfg.rope.beta_fast = r.optional_number("beta_fast");
  cfg.rope.beta_slow = r.optional_number("beta_slow");
  if (type == "llama3" && cfg.rope.high_freq_factor == cfg.rope.low_freq_factor) {
    r.fail("high_freq_factor", "equals low_freq_factor (the llama3 interpolation divides by their difference)");
  }
}

}  // namespace

HfConfig read_hf_config(const Json& c, const std::string& origin) {
  if (!c.is_object()) throw Error(ErrorCode::kInvalidFile, origin + ": not a JSON object");
  const Reader r(c, origin);
  HfConfig cfg;
  cfg.raw = c;

  const Json* archs = r.get("architectures");
  if (archs == nullptr) r.fail("architectures", "is missing (it names the model class, e.g. [\"LlamaForCausalLM\"])");
  if (!archs->is_array() || archs->size() == 0 || !archs->at(size_t{0}).is_string()) {
    r.fail("architectures", "is not a non-empty list of class names");
  }
  cfg.architecture = archs->at(size_t{0}).as_string();
  cfg.model_type = r.string("model_type");
  cfg.name_or_path = r.string("_name_or_path");

  cfg.vocab_size = r.integer("vocab_size", 1, kMaxVocab);
  cfg.hidden_size = r.integer("hidden_size", 1, kMaxWidth);
  cfg.num_hidden_layers = r.integer("num_hidden_layers", 1, kMaxCount);
  cfg.intermediate_size = r.integer("intermediate_size", 1, kMaxWidth);
  cfg.num_attention_heads = r.integer("num_attention_heads", 1, kMaxCount);
  cfg.num_key_value_heads = r.integer("num_key_value_heads", 1, cfg.num_attention_heads, cfg.num_attention_heads);
  if (cfg.num_attention_heads % cfg.num_key_value_heads != 0) {
    r.fail("num_key_value_heads",
           "= " + std::to_string(cfg.num_key_value_heads) +
               " does not divide num_attention_heads = " + std::to_string(cfg.num_attention_heads));
  }
  cfg.head_dim = r.integer("head_dim", 1, kMaxWidth, 0);
  if (cfg.head_dim == 0 && cfg.hidden_size % cfg.num_attention_heads != 0) {
    r.fail("hidden_size", "= " + std::to_string(cfg.hidden_size) + " is not a multiple of num_attention_heads = " +
                              std::to_string(cfg.num_attention_heads) + " and there is no head_dim");
  }
  if (cfg.effective_head_dim() % 2 != 0) {
    r.fail(cfg.head_dim ? "head_dim" : "hidden_size",
           "gives an odd head dimension " + std::to_string(cfg.effective_head_dim()) + " (RoPE rotates pairs)");
  }
  cfg.max_position_embeddings = r.integer("max_position_embeddings", 1, kMaxContext, 0);
  cfg.rms_norm_eps = r.number("rms_norm_eps", 1e-12, 1.0, 1e-6);
  cfg.tie_word_embeddings = r.boolean("tie_word_embeddings", false);
  read_rope(c, r, origin, cfg);
  cfg.layer_norm_eps = r.number("layer_norm_eps", 1e-30, 1.0, 1e-12);
  cfg.type_vocab_size = r.integer("type_vocab_size", 1, kMaxCount, 2);
  if (r.get("hidden_act")) cfg.hidden_act = r.string("hidden_act");
  if (r.get("position_embedding_type")) cfg.position_embedding_type = r.string("position_embedding_type");
  cfg.is_decoder = r.boolean("is_decoder", false);

  cfg.bos_token_id = r.token_id("bos_token_id");
  cfg.eos_token_id = r.token_id("eos_token_id");
  cfg.pad_token_id = r.token_id("pad_token_id");
  cfg.unk_token_id = r.token_id("unk_token_id");
  cfg.sep_token_id = r.token_id("sep_token_id");
  cfg.cls_token_id = r.token_id("cls_token_id");
  cfg.mask_token_id = r.token_id("mask_token_id");
  return cfg;
}

}  // namespace edgellm::convert
