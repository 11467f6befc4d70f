// The arithmetic of a prefill, from the model's matmul shapes: what "effective int8 ops/s" and
// "% of int8 peak" of `edgellm bench`'s pp tests divide by time.
//
//   matmul ops   every linear layer (per layer wq, wk, wv, wo, ffn_gate, ffn_up, ffn_down:
//                n_in x n_out MACs) for every prompt token, plus the output head (n_embd x
//                n_vocab) only for the positions whose logits are wanted (a pp test: the last
//                token of the prompt). 1 MAC = 2 ops. These run as int8 dot products when the
//                weights are quantized (activations quantized to 8 bits), so they are what the
//                int8 peak bounds.
//   attention    q . k and p . v of causal attention, head_dim MACs each per (query, key) pair:
//                a token at position p attends to p + 1 positions, per layer and query head.
//                Counted separately and NOT in the matmul ops: it runs in F32 here
//                (kernels::gemm_f32 on the KV cache's values), not as int8 dot products.
// Norms, RoPE, biases, activations and softmax (O(n_embd) per token) are not counted.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/tensor_type.h"

namespace edgellm {
class Model;
}

namespace edgellm::bench {

struct MatmulShape {
  int64_t n_in = 0;   // K: the input width (columns)
  int64_t n_out = 0;  // rows
  bool head = false;  // the output head: only logit positions multiply it
  TensorType type = TensorType::F32;
};

struct PrefillShape {
  std::vector<MatmulShape> matrices;  // every matrix the forward pass multiplies, the head included
  int64_t n_layer = 0, n_head = 0, head_dim = 0;  // attention
};

struct PrefillOps {
  double matmul_ops = 0;     // 2 x MACs of every matrix (see the file comment), the head's included
  double head_ops = 0;       // of matmul_ops, the output head's
  double attention_ops = 0;  // 2 x MACs of q . k and p . v; not part of matmul_ops
  // Every matrix but the head is quantized, so the matmul ops run as int8 dot products and the
  // int8 peak is their ceiling (false for F32 / F16 / BF16 weights: "% int8 peak" is not shown).
  bool int8 = false;
};

// The shapes of `model`: Model::matrices() (head first) and its attention hyper-parameters.
PrefillShape prefill_shape(const Model& model);

// A prefill of n_tokens after n_depth positions already in the KV cache, with logits wanted for
// n_logits of the tokens (a pp test: 1). Throws Error(kInvalidArgument) for negative counts or
// n_logits > n_tokens.
PrefillOps count_prefill_ops(const PrefillShape& shape, int64_t n_tokens, int64_t n_logits, int64_t n_depth);

}  // namespace edgellm::bench
