#include "tools/convert/arch_mapping.h"

#include "core/error.h"

namespace edgellm::convert {
namespace {

// The decoder block every family here shares (llama.cpp's tensor_mapping.py names).
TensorMapping attn_norm() {
  return {"input_layernorm.weight", "attn_norm.weight", {Dim::kEmbd}};
}
TensorMapping ffn_norm() {
  return {"post_attention_layernorm.weight", "ffn_norm.weight", {Dim::kEmbd}};
}
TensorMapping wv() {
  return {"self_attn.v_proj.weight", "attn_v.weight", {Dim::kKv, Dim::kEmbd}};
}
TensorMapping wo() {
  return {"self_attn.o_proj.weight", "attn_output.weight", {Dim::kEmbd, Dim::kQ}};
}
TensorMapping gate() {
  return {"mlp.gate_proj.weight", "ffn_gate.weight", {Dim::kFfn, Dim::kEmbd}};
}
TensorMapping up() {
  return {"mlp.up_proj.weight", "ffn_up.weight", {Dim::kFfn, Dim::kEmbd}};
}
TensorMapping down() {
  return {"mlp.down_proj.weight", "ffn_down.weight", {Dim::kEmbd, Dim::kFfn}};
}

std::vector<TensorMapping> embeddings() {
  return {{"model.embed_tokens.weight", "token_embd.weight", {Dim::kVocab, Dim::kEmbd}}};
}
std::vector<TensorMapping> head() {
  return {{"model.norm.weight", "output_norm.weight", {Dim::kEmbd}},
          {"lm_head.weight", "output.weight", {Dim::kVocab, Dim::kEmbd}, RowOrder::kAsIs, Need::kOutputHead}};
}

// Buffers some checkpoints carry that are recomputed at run time (llama.cpp skips them too).
const std::vector<const char*> kIgnored = {".rotary_emb.inv_freq", ".attention.masked_bias", ".attention.bias"};

// BERT (BertModel, BertForMaskedLM): learned positions and token types, LayerNorm after each
// residual sum, biases everywhere, a GELU FFN without gate (llama.cpp's tensor_mapping.py names).
// The pooler and the masked-LM / next-sentence heads are not part of an embedding model and are
// left out, as llama.cpp's converter leaves them out.
ArchitectureMapping bert_mapping() {
  ArchitectureMapping m;
  m.gguf_arch = "bert";
  m.hf_classes = {"BertModel", "BertForMaskedLM"};
  m.layer_prefix = "encoder.layer.";
  m.before_blocks = {
      {"embeddings.word_embeddings.weight", "token_embd.weight", {Dim::kVocab, Dim::kEmbd}},
      {"embeddings.token_type_embeddings.weight", "token_types.weight", {Dim::kTokenTypes, Dim::kEmbd}},
      {"embeddings.position_embeddings.weight", "position_embd.weight", {Dim::kPositions, Dim::kEmbd}},
      {"embeddings.LayerNorm.weight", "token_embd_norm.weight", {Dim::kEmbd}},
      {"embeddings.LayerNorm.bias", "token_embd_norm.bias", {Dim::kEmbd}},
  };
  m.per_layer = {
      {"attention.self.query.weight", "attn_q.weight", {Dim::kQ, Dim::kEmbd}},
      {"attention.self.query.bias", "attn_q.bias", {Dim::kQ}},
      {"attention.self.key.weight", "attn_k.weight", {Dim::kKv, Dim::kEmbd}},
      {"attention.self.key.bias", "attn_k.bias", {Dim::kKv}},
      {"attention.self.value.weight", "attn_v.weight", {Dim::kKv, Dim::kEmbd}},
      {"attention.self.value.bias", "attn_v.bias", {Dim::kKv}},
      {"attention.output.dense.weight", "attn_output.weight", {Dim::kEmbd, Dim::kQ}},
      {"attention.output.dense.bias", "attn_output.bias", {Dim::kEmbd}},
      {"attention.output.LayerNorm.weight", "attn_output_norm.weight", {Dim::kEmbd}},
      {"attention.output.LayerNorm.bias", "attn_output_norm.bias", {Dim::kEmbd}},
      {"intermediate.dense.weight", "ffn_up.weight", {Dim::kFfn, Dim::kEmbd}},
      {"intermediate.dense.bias", "ffn_up.bias", {Dim::kFfn}},
      {"output.dense.weight", "ffn_down.weight", {Dim::kEmbd, Dim::kFfn}},
      {"output.dense.bias", "ffn_down.bias", {Dim::kEmbd}},
      {"output.LayerNorm.weight", "layer_output_norm.weight", {Dim::kEmbd}},
      {"output.LayerNorm.bias", "layer_output_norm.bias", {Dim::kEmbd}},
  };
  m.ignored_suffixes = {"embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias"};
  m.model_types = {"bert"};
  m.encoder = true;
  m.strip_prefix = "bert.";
  m.legacy_norm_names = true;
  m.ignored_prefixes = {"cls.predictions.", "cls.seq_relationship."};
  return m;
}

std::vector<ArchitectureMapping> make_mappings() {
  std::vector<ArchitectureMapping> table = {
      // Llama 1-3.x, Mistral (llama.cpp converts Mistral as llama too): Q/K rows reordered for
      // the normal RoPE layout; no biases.
      {"llama",
       {"LlamaForCausalLM", "LLaMAForCausalLM", "MistralForCausalLM"},
       "model.layers.",
       embeddings(),
       {attn_norm(),
        {"self_attn.q_proj.weight", "attn_q.weight", {Dim::kQ, Dim::kEmbd}, RowOrder::kRopePairsQ},
        {"self_attn.k_proj.weight", "attn_k.weight", {Dim::kKv, Dim::kEmbd}, RowOrder::kRopePairsK},
        wv(),
        wo(),
        ffn_norm(),
        gate(),
        up(),
        down()},
       head(),
       kIgnored,
       /*write_vocab_size=*/true,
       /*write_rope_dimension_count=*/true},
      // Qwen2 / Qwen2.5: neox RoPE (HF order kept), biases on Q, K and V.
      {"qwen2",
       {"Qwen2ForCausalLM"},
       "model.layers.",
       embeddings(),
       {attn_norm(),
        {"self_attn.q_proj.weight", "attn_q.weight", {Dim::kQ, Dim::kEmbd}},
        {"self_attn.q_proj.bias", "attn_q.bias", {Dim::kQ}},
        {"self_attn.k_proj.weight", "attn_k.weight", {Dim::kKv, Dim::kEmbd}},
        {"self_attn.k_proj.bias", "attn_k.bias", {Dim::kKv}},
        wv(),
        {"self_attn.v_proj.bias", "attn_v.bias", {Dim::kKv}},
        wo(),
        ffn_norm(),
        gate(),
        up(),
        down()},
       head(),
       kIgnored},
      // Qwen3 (dense): neox RoPE, per-head RMSNorm of Q and K, head_dim independent of hidden_size.
      {"qwen3",
       {"Qwen3ForCausalLM"},
       "model.layers.",
       embeddings(),
       {attn_norm(),
        {"self_attn.q_proj.weight", "attn_q.weight", {Dim::kQ, Dim::kEmbd}},
        {"self_attn.q_norm.weight", "attn_q_norm.weight", {Dim::kHeadDim}},
        {"self_attn.k_proj.weight", "attn_k.weight", {Dim::kKv, Dim::kEmbd}},
        {"self_attn.k_norm.weight", "attn_k_norm.weight", {Dim::kHeadDim}},
        wv(),
        wo(),
        ffn_norm(),
        gate(),
        up(),
        down()},
       head(),
       kIgnored},
  };
  table[0].model_types = {"llama", "mistral"};
  table[1].model_types = {"qwen2"};
  table[2].model_types = {"qwen3"};
  table.push_back(bert_mapping());
  return table;
}

const std::vector<ArchitectureMapping>& mappings() {
  static const std::vector<ArchitectureMapping> table = make_mappings();
  return table;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

int64_t resolve_dim(Dim dim, const HfConfig& c) {
  switch (dim) {
    case Dim::kVocab: return c.vocab_size;
    case Dim::kEmbd: return c.hidden_size;
    case Dim::kFfn: return c.intermediate_size;
    case Dim::kQ: return c.num_attention_heads * c.effective_head_dim();
    case Dim::kKv: return c.num_key_value_heads * c.effective_head_dim();
    case Dim::kHeadDim: return c.effective_head_dim();
    case Dim::kPositions: return c.max_position_embeddings;
    case Dim::kTokenTypes: return c.type_vocab_size;
  }
  return 0;
}

const char* dim_name(Dim dim) {
  switch (dim) {
    case Dim::kVocab: return "vocab_size";
    case Dim::kEmbd: return "hidden_size";
    case Dim::kFfn: return "intermediate_size";
    case Dim::kQ: return "num_attention_heads * head_dim";
    case Dim::kKv: return "num_key_value_heads * head_dim";
    case Dim::kHeadDim: return "head_dim";
    case Dim::kPositions: return "max_position_embeddings";
    case Dim::kTokenTypes: return "type_vocab_size";
  }
  return "?";
}

std::string supported_hf_classes() {
  std::string s;
  for (const auto& m : mappings()) {
    for (const char* c : m.hf_classes) s += (s.empty() ? "" : ", ") + std::string(c);
  }
  return s;
}

const ArchitectureMapping& find_architecture_mapping(std::string_view hf_class) {
  for (const auto& m : mappings()) {
    for (const char* c : m.hf_classes) {
      if (hf_class == c) return m;
    }
  }
  throw Error(ErrorCode::kUnsupported,
              "model class '" + std::string(hf_class) +
                  "' (config.json architectures) cannot be converted (supported: " + supported_hf_classes() + ")");
}

std::string canonical_hf_name(const ArchitectureMapping& m, std::string_view name) {
  std::string n(name);
  if (m.strip_prefix != nullptr && n.rfind(m.strip_prefix, 0) == 0) n.erase(0, std::string_view(m.strip_prefix).size());
  if (m.legacy_norm_names) {
    if (ends_with(n, ".gamma")) n.replace(n.size() - 6, 6, ".weight");
    if (ends_with(n, ".beta")) n.replace(n.size() - 5, 5, ".bias");
  }
  return n;
}

MappedName map_tensor_name(const ArchitectureMapping& m, std::string_view original, int64_t n_layer) {
  MappedName out;
  out.hf = canonical_hf_name(m, original);
  const std::string_view name = out.hf;
  // Sort keys: before-block tensors first, then blocks in order, then the rest.
  constexpr int64_t kPerBlock = 1000;
  const int64_t blocks_base = static_cast<int64_t>(m.before_blocks.size());
  const int64_t after_base = blocks_base + n_layer * kPerBlock;
  const std::string_view prefix = m.layer_prefix;
  if (name.substr(0, prefix.size()) == prefix) {
    const std::string_view rest = name.substr(prefix.size());
    size_t digits = 0;
    while (digits < rest.size() && digits < 10 && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
    if (digits > 0 && digits < rest.size() && rest[digits] == '.' && (digits == 1 || rest[0] != '0')) {
      const int64_t block = std::stoll(std::string(rest.substr(0, digits)));
      const std::string_view suffix = rest.substr(digits + 1);
      for (size_t i = 0; i < m.per_layer.size(); ++i) {
        if (suffix != m.per_layer[i].hf) continue;
        if (block >= n_layer) {
          throw Error(ErrorCode::kInvalidFile, "tensor '" + std::string(original) + "' belongs to block " +
                                                   std::to_string(block) + " but config.json num_hidden_layers is " +
                                                   std::to_string(n_layer));
        }
        out.rule = &m.per_layer[i];
        out.block = static_cast<int32_t>(block);
        out.gguf = "blk." + std::to_string(block) + "." + m.per_layer[i].gguf;
        out.order = blocks_base + block * kPerBlock + static_cast<int64_t>(i);
        return out;
      }
    }
  }
  for (size_t i = 0; i < m.before_blocks.size(); ++i) {
    if (name == m.before_blocks[i].hf) {
      out.rule = &m.before_blocks[i];
      out.gguf = m.before_blocks[i].gguf;
      out.order = static_cast<int64_t>(i);
      return out;
    }
  }
  for (size_t i = 0; i < m.after_blocks.size(); ++i) {
    if (name == m.after_blocks[i].hf) {
      out.rule = &m.after_blocks[i];
      out.gguf = m.after_blocks[i].gguf;
      out.order = after_base + static_cast<int64_t>(i);
      return out;
    }
  }
  for (const char* s : m.ignored_suffixes) {
    if (ends_with(name, s)) {
      out.kind = MappedName::Kind::kIgnored;
      return out;
    }
  }
  for (const char* p : m.ignored_prefixes) {
    if (name.substr(0, std::string_view(p).size()) == p) {
      out.kind = MappedName::Kind::kIgnored;
      return out;
    }
  }
  throw Error(ErrorCode::kUnsupported, "tensor '" + std::string(original) + "' is not part of the " + m.gguf_arch +
                                           " mapping (refusing to drop a weight silently; the checkpoint may have "
                                           "biases or layers this converter does not handle)");
}

std::vector<std::string> expected_hf_names(const ArchitectureMapping& m, const HfConfig& c) {
  std::vector<std::string> names;
  for (const auto& t : m.before_blocks) names.emplace_back(t.hf);
  for (int64_t b = 0; b < c.num_hidden_layers; ++b) {
    for (const auto& t : m.per_layer) names.push_back(m.layer_prefix + std::to_string(b) + "." + t.hf);
  }
  for (const auto& t : m.after_blocks) {
    if (t.need == Need::kOutputHead && c.tie_word_embeddings) continue;
    names.emplace_back(t.hf);
  }
  return names;
}

}  // namespace edgellm::convert
