// A Hugging Face config.json, read into the hyper-parameters a conversion needs.
//
// Keys are the transformers names (hidden_size, num_hidden_layers, ...). Missing optional keys
// take the defaults of the transformers config class of that model type (LlamaConfig,
// Qwen2Config, Qwen3Config, BertConfig): rms_norm_eps 1e-6, rope_theta 10000, num_key_value_heads
// = num_attention_heads, tie_word_embeddings false; BERT's layer_norm_eps 1e-12, type_vocab_size
// 2, hidden_act "gelu", position_embedding_type "absolute". Every failure is Error(kInvalidFile) naming the
// key and the value ("config.json: 'num_attention_heads' = 0 is out of range [1, 4096]").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"

namespace edgellm::convert {

// rope_scaling (or rope_parameters, the newer name): how positions are stretched.
struct HfRopeScaling {
  std::string type;  // "" (none), "linear", "llama3", "yarn", "dynamic", "longrope", ...
  double factor = 1.0;
  // llama3: frequencies below low_freq_factor / original context are divided by factor,
  // above high_freq_factor kept, smoothly interpolated between.
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 0;  // 0 = absent
  // yarn (written for llama.cpp; EdgeLLM refuses yarn models at load)
  std::optional<double> extrapolation_factor, attention_factor, beta_fast, beta_slow;
};

struct HfConfig {
  std::string architecture;  // architectures[0], e.g. "Qwen2ForCausalLM"
  std::string model_type;    // "qwen2"
  std::string name_or_path;  // "_name_or_path", may be empty
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t intermediate_size = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;                 // explicit "head_dim", 0 when absent
  int64_t max_position_embeddings = 0;  // 0 when absent
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  bool tie_word_embeddings = false;
  HfRopeScaling rope;
  // BERT-style encoders (BertConfig names).
  double layer_norm_eps = 1e-12;
  int64_t type_vocab_size = 2;      // rows of token_type_embeddings
  std::string hidden_act = "gelu";  // the FFN activation ("gelu" = the exact erf form)
  std::string position_embedding_type = "absolute";
  bool is_decoder = false;
  // Special-token ids config.json may carry (lists, as Llama 3.1 writes for eos, are ignored as
  // llama.cpp's converter ignores them).
  std::optional<int64_t> bos_token_id, eos_token_id, pad_token_id, unk_token_id, sep_token_id, cls_token_id,
      mask_token_id;
  Json raw;

  // head_dim, or hidden_size / num_attention_heads when config.json has none.
  int64_t effective_head_dim() const { return head_dim > 0 ? head_dim : hidden_size / num_attention_heads; }
};

// `origin` names the file in errors ("DIR/config.json").
HfConfig read_hf_config(const Json& config, const std::string& origin);

}  // namespace edgellm::convert
