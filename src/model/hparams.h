// Model hyper-parameters, read from the GGUF metadata keys "<arch>.*" and validated so the
// forward pass can trust them.
#pragma once

#include <cstdint>
#include <string>

#include "model/architecture.h"
#include "model/pooling_type.h"

namespace edgellm {

namespace gguf {
class GgufFile;
}

enum class RopeScaling { kNone, kLinear };

struct HParams {
  std::string arch;                // general.architecture
  RopeStyle rope_style = RopeStyle::kNormal;
  int32_t n_vocab = 0;             // tokenizer.ggml.tokens length, else token_embd rows
  int32_t n_ctx_train = 0;         // <arch>.context_length
  int32_t n_embd = 0;              // <arch>.embedding_length
  int32_t n_layer = 0;             // <arch>.block_count
  int32_t n_ff = 0;                // <arch>.feed_forward_length
  int32_t n_head = 0;              // <arch>.attention.head_count
  int32_t n_head_kv = 0;           // <arch>.attention.head_count_kv (default n_head)
  int32_t head_dim = 0;            // <arch>.attention.key_length (default n_embd / n_head)
  int32_t n_rot = 0;               // <arch>.rope.dimension_count (default head_dim)
  float rms_eps = 1e-5f;           // <arch>.attention.layer_norm_rms_epsilon
  float rope_freq_base = 10000.0f; // <arch>.rope.freq_base
  RopeScaling rope_scaling = RopeScaling::kNone;
  float rope_freq_scale = 1.0f;    // 1 / rope.scaling.factor for linear scaling
  int32_t rope_orig_ctx = 0;       // <arch>.rope.scaling.original_context_length (informative)
  bool has_rope_freqs = false;     // rope_freqs.weight present (llama3 per-dimension factors)
  // Embeddings and encoders.
  bool encoder = false;            // Architecture::encoder
  bool causal = true;              // <arch>.attention.causal (false for encoders)
  float norm_eps = 1e-12f;         // <arch>.attention.layer_norm_epsilon (encoders' LayerNorm)
  PoolingType pooling = PoolingType::kUnspecified;  // <arch>.pooling_type
  int32_t n_token_types = 0;       // rows of token_types.weight (0: none)
  int32_t n_cls_out = 0;           // rows of cls.output.weight: classification / rank outputs (0: none)

  int32_t n_embd_q() const { return n_head * head_dim; }    // width of Q and of attn_output's input
  int32_t n_embd_kv() const { return n_head_kv * head_dim; } // width of K and V
  int32_t n_gqa() const { return n_head / n_head_kv; }       // query heads per KV head
};

// Reads and validates. Throws Error(kInvalidFile) naming the key for a missing or out-of-range
// value, Error(kUnsupported) for an unsupported architecture or feature (e.g. yarn scaling).
HParams read_hparams(const gguf::GgufFile& file);

// "llama: n_vocab 512, n_embd 64, n_layer 5, ..." for logs and `edgellm info`.
std::string describe(const HParams& hp);

}  // namespace edgellm
