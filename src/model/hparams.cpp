#include "model/hparams.h"

#include <cmath>
#include <limits>
#include <optional>
#include <sstream>

#include "core/error.h"
#include "gguf/gguf_reader.h"

namespace edgellm {

namespace {

// Upper bounds that no real model reaches; they keep products like n_head * head_dim and the
// KV size computations far away from integer overflow on hostile files.
constexpr int64_t kMaxDim = 1 << 20;     // widths (n_embd, n_ff, head_dim)
constexpr int64_t kMaxCount = 1 << 12;   // layers, heads
constexpr int64_t kMaxVocab = 1 << 24;
constexpr int64_t kMaxContext = 1 << 24;

int32_t int_key(const gguf::GgufFile& f, const std::string& key, int64_t lo, int64_t hi,
                std::optional<int64_t> fallback = std::nullopt) {
  auto v = f.get_int(key);
  if (!v) {
    if (fallback) return static_cast<int32_t>(*fallback);
    throw Error(ErrorCode::kInvalidFile, "GGUF key '" + key + "' is missing (required for the model)");
  }
  require(*v >= lo && *v <= hi, ErrorCode::kInvalidFile,
          "GGUF key '" + key + "' = " + std::to_string(*v) + " is out of range [" + std::to_string(lo) + ", " +
              std::to_string(hi) + "]");
  return static_cast<int32_t>(*v);
}

float float_key(const gguf::GgufFile& f, const std::string& key, double lo, double hi, double fallback) {
  auto v = f.get_float(key);
  const double x = v ? *v : fallback;
  require(std::isfinite(x) && x >= lo && x <= hi, ErrorCode::kInvalidFile,
          "GGUF key '" + key + "' = " + std::to_string(x) + " is out of range");
  return static_cast<float>(x);
}

}  // namespace

HParams read_hparams(const gguf::GgufFile& f) {
  HParams hp;
  auto arch = f.get_string("general.architecture");
  require(arch.has_value(), ErrorCode::kInvalidFile, "GGUF key 'general.architecture' is missing");
  const Architecture& a = find_architecture(*arch);
  hp.arch = a.name;
  hp.rope_style = a.rope_style;
  hp.encoder = a.encoder;
  const std::string p = hp.arch + ".";

  hp.n_embd = int_key(f, p + "embedding_length", 1, kMaxDim);
  hp.n_layer = int_key(f, p + "block_count", 1, kMaxCount);
  hp.n_ff = int_key(f, p + "feed_forward_length", 1, kMaxDim);
  hp.n_head = int_key(f, p + "attention.head_count", 1, kMaxCount);
  hp.n_head_kv = int_key(f, p + "attention.head_count_kv", 1, kMaxCount, hp.n_head);
  require(hp.n_head % hp.n_head_kv == 0, ErrorCode::kInvalidFile,
          p + "attention.head_count (" + std::to_string(hp.n_head) + ") is not a multiple of " + p +
              "attention.head_count_kv (" + std::to_string(hp.n_head_kv) + ")");

  // head_dim: explicit for qwen3 (128 with n_embd/n_head = 64 in Qwen3-0.6B), derived otherwise.
  const auto key_length = f.get_int(p + "attention.key_length");
  if (!key_length) {
    require(hp.n_embd % hp.n_head == 0, ErrorCode::kInvalidFile,
            p + "embedding_length (" + std::to_string(hp.n_embd) + ") is not a multiple of " + p +
                "attention.head_count (" + std::to_string(hp.n_head) + ") and " + p +
                "attention.key_length is absent");
  }
  hp.head_dim = int_key(f, p + "attention.key_length", 1, kMaxDim, hp.n_embd / hp.n_head);
  const int32_t value_length = int_key(f, p + "attention.value_length", 1, kMaxDim, hp.head_dim);
  require(value_length == hp.head_dim, ErrorCode::kUnsupported,
          p + "attention.value_length (" + std::to_string(value_length) + ") differs from key_length (" +
              std::to_string(hp.head_dim) + "): not supported");
  require(hp.head_dim % 2 == 0, ErrorCode::kInvalidFile,
          "head dimension " + std::to_string(hp.head_dim) + " is odd (RoPE rotates pairs)");

  hp.n_rot = int_key(f, p + "rope.dimension_count", 2, hp.head_dim, hp.head_dim);
  require(hp.n_rot % 2 == 0, ErrorCode::kInvalidFile,
          p + "rope.dimension_count (" + std::to_string(hp.n_rot) + ") is odd");

  hp.n_ctx_train = int_key(f, p + "context_length", 1, kMaxContext, 2048);
  hp.rms_eps = float_key(f, p + "attention.layer_norm_rms_epsilon", 1e-12, 1.0, 1e-5);
  hp.rope_freq_base = float_key(f, p + "rope.freq_base", 1.0, 1e12, 10000.0);

  // RoPE scaling: "none" and "linear" (positions divided by factor). YaRN changes the attention
  // temperature and per-dimension ramps; refusing is better than silently wrong logits.
  std::string scaling = f.get_string(p + "rope.scaling.type").value_or("");
  const auto factor = f.get_float(p + "rope.scaling.factor");
  const auto legacy_linear = f.get_float(p + "rope.scale_linear");
  if (scaling.empty()) scaling = (legacy_linear && *legacy_linear != 1.0) ? "linear" : "none";
  if (scaling == "linear") {
    const double fac = factor ? *factor : (legacy_linear ? *legacy_linear : 1.0);
    require(std::isfinite(fac) && fac > 0 && fac <= 1024, ErrorCode::kInvalidFile,
            p + "rope.scaling.factor = " + std::to_string(fac) + " is out of range (0, 1024]");
    hp.rope_scaling = fac == 1.0 ? RopeScaling::kNone : RopeScaling::kLinear;
    hp.rope_freq_scale = static_cast<float>(1.0 / fac);
  } else if (scaling != "none") {
    throw Error(ErrorCode::kUnsupported, p + "rope.scaling.type '" + scaling +
                                             "' is not supported (supported: none, linear; llama3 scaling via "
                                             "rope_freqs.weight)");
  }
  if (auto orig = f.get_int(p + "rope.scaling.original_context_length")) {
    require(*orig >= 0 && *orig <= kMaxContext, ErrorCode::kInvalidFile,
            p + "rope.scaling.original_context_length is out of range");
    hp.rope_orig_ctx = static_cast<int32_t>(*orig);
  }
  hp.has_rope_freqs = f.find_tensor("rope_freqs.weight") != nullptr;

  // Embedding models. An encoder's LayerNorm epsilon is required (llama.cpp requires it too);
  // its attention is bidirectional, which a file may not contradict.
  if (hp.encoder) {
    require(f.get_float(p + "attention.layer_norm_epsilon").has_value(), ErrorCode::kInvalidFile,
            "GGUF key '" + p + "attention.layer_norm_epsilon' is missing (required for the model)");
    hp.norm_eps = float_key(f, p + "attention.layer_norm_epsilon", 1e-30, 1.0, 1e-12);
    hp.causal = false;
    if (const auto causal = f.get_bool(p + "attention.causal")) {
      require(!*causal, ErrorCode::kUnsupported, p + "attention.causal is true: causal encoders are not supported");
    }
  } else if (const auto causal = f.get_bool(p + "attention.causal")) {
    require(*causal, ErrorCode::kUnsupported,
            p + "attention.causal is false: bidirectional attention is supported for encoder architectures only");
  }
  if (const auto pooling = f.get_int(p + "pooling_type")) {
    const auto type = pooling_type_from_gguf(*pooling);
    require(type.has_value(), ErrorCode::kInvalidFile,
            "GGUF key '" + p + "pooling_type' = " + std::to_string(*pooling) + " is out of range [0, 4]");
    hp.pooling = *type;
  }
  const auto rows = [&](const char* name) -> int32_t {
    const gguf::TensorInfo* t = f.find_tensor(name);
    if (!t || t->n_dims != 2) return 0;
    require(t->ne[1] >= 1 && t->ne[1] <= kMaxDim, ErrorCode::kInvalidFile,
            std::string(name) + " has " + std::to_string(t->ne[1]) + " rows");
    return static_cast<int32_t>(t->ne[1]);
  };
  hp.n_token_types = hp.encoder ? rows("token_types.weight") : 0;
  hp.n_cls_out = rows("cls.output.weight");

  // Vocabulary: the tokenizer's token list is authoritative; a weights-only file uses the
  // embedding rows.
  if (const auto n_tokens = f.get_string_array_size("tokenizer.ggml.tokens")) {
    require(*n_tokens >= 1 && *n_tokens <= static_cast<uint64_t>(kMaxVocab), ErrorCode::kInvalidFile,
            "tokenizer.ggml.tokens has " + std::to_string(*n_tokens) + " entries");
    hp.n_vocab = static_cast<int32_t>(*n_tokens);
  } else if (const auto* emb = f.find_tensor("token_embd.weight"); emb && emb->n_dims == 2) {
    require(emb->ne[1] >= 1 && emb->ne[1] <= kMaxVocab, ErrorCode::kInvalidFile,
            "token_embd.weight has " + std::to_string(emb->ne[1]) + " rows");
    hp.n_vocab = static_cast<int32_t>(emb->ne[1]);
  } else {
    throw Error(ErrorCode::kInvalidFile, "cannot determine the vocabulary size: neither tokenizer.ggml.tokens nor a 2-D "
                                         "token_embd.weight is present");
  }
  return hp;
}

std::string describe(const HParams& hp) {
  std::ostringstream s;
  s << hp.arch << ": n_vocab " << hp.n_vocab << ", n_embd " << hp.n_embd << ", n_layer " << hp.n_layer << ", n_ff "
    << hp.n_ff << ", n_head " << hp.n_head << ", n_head_kv " << hp.n_head_kv << ", head_dim " << hp.head_dim
    << ", n_rot " << hp.n_rot << ", rope " << (hp.rope_style == RopeStyle::kNeox ? "neox" : "normal") << " base "
    << hp.rope_freq_base;
  if (hp.rope_scaling == RopeScaling::kLinear) s << " linear x" << 1.0f / hp.rope_freq_scale;
  if (hp.has_rope_freqs) s << " +rope_freqs";
  if (hp.encoder) {
    s << ", encoder (bidirectional), norm_eps " << hp.norm_eps << ", token types " << hp.n_token_types;
  } else {
    s << ", rms_eps " << hp.rms_eps;
  }
  if (hp.pooling != PoolingType::kUnspecified) s << ", pooling " << pooling_type_name(hp.pooling);
  if (hp.n_cls_out > 0) s << ", classifier outputs " << hp.n_cls_out;
  s << ", n_ctx_train " << hp.n_ctx_train;
  return s.str();
}

}  // namespace edgellm
