// The catalogue of model shapes `edgellm synth` can generate: the real hyper-parameters of
// published checkpoints (from each model's Hugging Face config.json) plus tiny shapes for CI.
// A synthetic model of a real shape has exactly the tensor shapes (and so the file size and the
// memory traffic per token) of the real one; only the weight values are random.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace edgellm::synth {

// Llama 3.x "rope_scaling": {"rope_type": "llama3", factor, low_freq_factor, high_freq_factor,
// original_max_position_embeddings}. GGUF stores it baked into rope_freqs.weight.
struct Llama3RopeScaling {
  float factor = 0;             // 0 = the shape has no rope_freqs tensor
  float low_freq_factor = 1;
  float high_freq_factor = 4;
  int32_t original_context = 8192;
};

// The llama3 scaling of the tiny CI shapes (and of the test fixture's rope_freqs models): a
// small original context, so that with head_dim 64 every branch of the rule occurs (kept,
// slowed down by `factor`, interpolated dimensions).
inline constexpr Llama3RopeScaling kTinyLlama3Scaling{8.0f, 1.0f, 4.0f, 64};

struct ModelShape {
  const char* name;          // CLI name: "qwen2.5-0.5b"
  const char* display_name;  // general.name: "Qwen2.5-0.5B"
  const char* arch;          // general.architecture: llama, qwen2 (QKV bias), qwen3 (Q/K norm), bert (encoder)
  const char* size_label;    // general.size_label as llama.cpp prints it: "0.5B"
  int32_t n_vocab;
  int32_t n_embd;
  int32_t n_layer;
  int32_t n_ff;
  int32_t n_head;
  int32_t n_head_kv;
  int32_t head_dim;          // may differ from n_embd / n_head (qwen3)
  int32_t n_ctx_train;
  float rope_freq_base;
  float rms_eps;             // RMSNorm epsilon; for bert the LayerNorm epsilon (layer_norm_eps)
  bool tied_embeddings;      // no output.weight: the head reuses token_embd
  Llama3RopeScaling rope_scaling;
  // Rotary dimensions per head; 0 = all of head_dim (every catalogue shape). Only free-form
  // shapes (the test fixture) use partial rotation.
  int32_t n_rot = 0;
  // Encoders (bert): token-type rows (type_vocab_size), the pooling the file declares (GGUF
  // <arch>.pooling_type; -1: none written) and a reranker's classification outputs (> 0: the
  // pooler as cls.weight / cls.bias and the classifier as cls.output.weight / .bias).
  int32_t n_token_types = 0;
  int32_t pooling = -1;
  int32_t n_cls_out = 0;

  int32_t rot_dims() const { return n_rot > 0 ? n_rot : head_dim; }
  bool is_encoder() const;   // bert
  bool has_rope_freqs() const { return rope_scaling.factor > 0; }
  bool qkv_bias() const;     // qwen2
  bool qk_norm() const;      // qwen3
};

// Throws Error(kInvalidArgument) naming `name` and listing the known shapes.
const ModelShape& find_model_shape(std::string_view name);
const std::vector<ModelShape>& model_shapes();
std::string model_shape_names();  // "qwen2.5-0.5b, qwen2.5-1.5b, ..."

// The per-dimension RoPE frequency divisors llama.cpp's converter writes to rope_freqs.weight
// for llama3 scaling: [rot_dims() / 2] values in [1, factor]. Empty when the shape has none.
std::vector<float> llama3_rope_factors(const ModelShape& shape);

}  // namespace edgellm::synth
