// The forward pass of an encoder (bert, model/architecture.h): whole sequences at once, every
// token attending to every token of its own sequence (bidirectional, no KV cache), LayerNorm
// after each residual sum. Several sequences of different lengths are packed one after the other
// into one call; attention never crosses a sequence boundary, so a sequence's result does not
// depend on what else is in the call. All scratch buffers are allocated once in the constructor;
// running allocates nothing.
//
// Per call of T tokens (widths: E = n_embd, Q = n_head*head_dim, F = n_ff):
//   x[T, E] = LayerNorm(token_embd[id] + token_types[type] + position_embd[pos]) (pos from 0 per sequence)
//   per layer:  q[T, Q], k, v = x @ Wq, Wk, Wv + biases
//               attn[t, h] = softmax(q_h(t) . K_h(seq(t))^T / sqrt(head_dim)) . V_h(seq(t))
//                            tasks = (sequence, head, block of kQueryRows queries): K_h^T of the
//                            sequence widened once per task, scores [rows, len] and out = P . V as
//                            F32 GEMMs (kernels::gemm_f32)
//               x = LayerNorm(x + attn @ Wo + bo)                          (attn_output_norm)
//               x = LayerNorm(x + gelu(x @ Wup + bup) @ Wdown + bdown)     (layer_output_norm; FFN in slices)
//   hidden() = x: the final hidden states, [T, E], in input order
// GELU is the exact (erf) form BERT was trained with; llama.cpp's graph uses the tanh
// approximation, which differs by at most ~1e-3 per activation (docs/embeddings.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/context.h"
#include "model/model.h"
#include "platform/memory_stats.h"

namespace edgellm {

class ThreadPool;

// One sequence of a call: its token ids and token types (segment A = 0, B = 1; null = all 0).
struct EncoderSequence {
  const int32_t* tokens = nullptr;
  const int32_t* types = nullptr;
  int32_t n = 0;
};

class EncoderPass {
 public:
  // max_tokens: most tokens per call; max_seq: longest sequence (at most the model's
  // position rows, n_ctx_train); max_threads: threads that may run at once (attention scratch).
  EncoderPass(const Model& model, int32_t max_tokens, int32_t max_seq, int max_threads);

  // Runs the sequences. Throws Error(kInvalidArgument) for an empty or too long sequence, more
  // than max_tokens tokens, a token id or token type out of range (nothing is computed then);
  // Error(kCancelled) when `abort` returns true (polled before every layer).
  void run(const EncoderSequence* seqs, int32_t n_seqs, ThreadPool& pool, int n_threads, const AbortCheck& abort);
  // The final hidden states of the last run: row t of the packed tokens, E floats each.
  const float* hidden(int32_t t) const {
    return x_.as<float>() + static_cast<size_t>(t) * static_cast<size_t>(n_embd_);
  }

  int32_t max_tokens() const { return max_tokens_; }
  int32_t max_seq() const { return max_seq_; }
  size_t allocated_bytes() const;
  // What the constructor allocates, without allocating (memory planning).
  static size_t scratch_bytes(const Model& model, int32_t max_tokens, int32_t max_seq, int max_threads);

  // Queries per attention task: scores [kQueryRows, len] stay within a few hundred KiB per
  // thread at 512 positions, and a sequence of 512 tokens still gives 16 tasks per head.
  static constexpr int32_t kQueryRows = 32;
  // Tokens per FFN slice: the [tokens, n_ff] up-projection (the largest buffer) holds one slice.
  static constexpr int32_t kFfnTokens = 128;

 private:
  struct Sizes;
  void embed(const EncoderSequence* seqs, int32_t n_seqs);
  void attention(const EncoderSequence* seqs, int32_t n_seqs);
  template <typename Fn>
  void for_tokens(int32_t n, Fn&& fn);

  const Model& model_;
  const HParams& hp_;
  int32_t n_embd_ = 0;
  int32_t max_tokens_ = 0;
  int32_t max_seq_ = 0;
  int max_threads_ = 1;
  size_t attn_scratch_floats_ = 0;  // per thread
  ThreadPool* pool_ = nullptr;      // set for the duration of run()
  int n_threads_ = 1;

  AlignedBuffer x_;        // [max_tokens, E] residual stream, then the result
  AlignedBuffer xn_;       // [max_tokens, E] projection outputs before the residual sum
  AlignedBuffer q_;        // [max_tokens, Q]
  AlignedBuffer k_;        // [max_tokens, KV]
  AlignedBuffer v_;        // [max_tokens, KV]
  AlignedBuffer attn_;     // [max_tokens, Q]
  AlignedBuffer up_;       // [min(max_tokens, kFfnTokens), F]
  AlignedBuffer xq_;       // quantized matmul inputs
  AlignedBuffer xt_;       // their tiled copies (AMX only)
  AlignedBuffer scratch_;  // per thread: K^T [head_dim, max_seq] and scores [kQueryRows, max_seq]
  AlignedBuffer row_;      // [max_threads, E] one dequantized embedding row per thread
  struct SeqTasks {
    int32_t t0, n, blocks;  // first token, tokens, query blocks
    int64_t first_task;
  };
  std::vector<SeqTasks> seq_tasks_;  // this call's sequences (reserved max_tokens)
};

}  // namespace edgellm
