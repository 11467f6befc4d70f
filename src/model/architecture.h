// The registry of supported model architectures and what distinguishes them in the forward pass.
// Two families: decoders of the llama block (llama, qwen2, qwen3; tensor names, shapes and
// hyper-parameter keys shared) and encoders of the BERT block (bert), which serve embeddings and
// reranking only (engine/encoder_pass.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace edgellm {

// How RoPE pairs the dimensions of a head (first n_rot dims rotated, the rest passed through):
//  kNormal: pairs (2i, 2i+1)           — llama; GGUF converters permute llama Q/K rows so that
//                                        adjacent pairs are the rotated ones.
//  kNeox:   pairs (i, i + n_rot/2)     — qwen2, qwen3 (weights stored as in Hugging Face).
enum class RopeStyle { kNormal, kNeox };

struct Architecture {
  const char* name;      // value of general.architecture, also the key prefix ("qwen2.block_count")
  RopeStyle rope_style;
  bool qkv_bias;         // blk.N.attn_{q,k,v}.bias present (qwen2)
  bool qk_norm;          // blk.N.attn_{q,k}_norm.weight: per-head RMSNorm of Q and K before RoPE (qwen3)
  // Encoder (bert): every token of a sequence attends to every other (no causal mask, no KV
  // cache), LayerNorm (with bias) after each residual sum (post-norm), absolute positions as
  // learned rows (position_embd) added to the token and token-type embeddings, a GELU feed-forward
  // with biases, and no output head: the final hidden states are the result.
  bool encoder = false;
};

// Throws Error(kUnsupported) naming `name` and listing the supported architectures.
const Architecture& find_architecture(std::string_view name);
std::vector<std::string> supported_architectures();
// "llama, qwen2, qwen3, bert"
std::string supported_architectures_list();

}  // namespace edgellm
