// The forward pass over one chunk of batch entries (at most n_batch), for the llama family.
// All scratch buffers are allocated once in the constructor for the largest chunk; running a
// chunk allocates nothing.
//
// Per chunk of n entries (widths: E = n_embd, Q = n_head*head_dim, KV = n_head_kv*head_dim):
//   x[n, E] = token_embd rows
//   per layer:  xn = rms_norm(x) * attn_norm
//               q[n, Q], k[n, KV], v[n, KV] = xn @ Wq, Wk, Wv (+ bias: qwen2)
//               per head: rms_norm(q), rms_norm(k) (qwen3); RoPE on the first n_rot dims
//               K, V rows -> each entry's sequence blocks in the KV cache
//               attn[n, Q] = softmax(q . K[0..pos] / sqrt(head_dim)) . V[0..pos]  (GQA)
//               x += attn @ Wo
//               xn = rms_norm(x) * ffn_norm
//               x += (silu(xn @ Wgate) * (xn @ Wup)) @ Wdown    (slices of ffn_slice_tokens entries)
//   logits[j, n_vocab] = (rms_norm(x_e) * output_norm) @ Woutput  for entries e wanting logits
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/batch.h"
#include "engine/matmul_group.h"
#include "model/model.h"
#include "platform/memory_stats.h"

namespace edgellm {

class KvCache;
class MatmulObserver;
class ThreadPool;
struct AbortCheck;

class ForwardPass {
 public:
  // n_batch: most entries per chunk; n_ctx: longest sequence (attention score buffer);
  // kv_type_v: the V cache type (Q4_0 V adds room for the int8 weights of decode's V sum to each
  // thread's attention area, on every CPU, so memory plans do not depend on it; the weights are
  // used where the ISA has that kernel: kernels/attention.h);
  // max_threads: threads that may run attention at once (one scratch area each).
  ForwardPass(const Model& model, int32_t n_batch, int32_t n_ctx, TensorType kv_type_v, int max_threads);

  // Runs `n` entries. Preconditions (checked by Context): token ids valid, each entry's position
  // is allocated in its sequence (kv.seq_length > pos), positions of one sequence increasing.
  // Logits of the entries with want_logits are written consecutively to `logits`
  // (rows of n_vocab floats); with `hidden_out`, their normed final states instead (rows of
  // n_embd floats: rms_norm(x) * output_norm, llama.cpp's "result_norm"), and no head is run.
  // `abort` is polled before every layer; when it returns true run() throws Error(kCancelled)
  // (the K/V rows written so far belong to the chunk the caller rolls back).
  // `observer` (may be null) sees every matmul's input (engine/matmul_observer.h).
  // `stepwise`: attention entry by entry whatever the batch (Batch::set_stepwise).
  void run(const BatchEntry* entries, int32_t n, KvCache& kv, ThreadPool& pool, int n_threads,
           const AbortCheck& abort, MatmulObserver* observer, float* logits, bool hidden_out = false,
           bool stepwise = false);

  size_t allocated_bytes() const;
  // What the constructor allocates, without allocating (memory planning, `edgellm info`).
  static size_t scratch_bytes(const Model& model, int32_t n_batch, int32_t n_ctx, TensorType kv_type_v,
                              int max_threads);

 private:
  struct Sizes;  // byte size of every buffer, computed in one place
  // Runs several matmuls that share one parallel region (engine/matmul_group.h).
  void matmuls(const MatmulJob* jobs, int n_jobs, int32_t n_tokens);
  void rope_tables(const BatchEntry* entries, int32_t n);
  void apply_rope(float* head, int32_t entry) const;
  // Attention (forward_attention.cpp): entry-wise for decode, by query blocks for prefill.
  struct QueryBlock {
    int32_t first;  // entry index
    int32_t count;  // consecutive positions of one sequence, at most query_block_tokens_
  };
  // Float offsets in one thread's attention scratch for attention_blocks (scores first, at 0).
  struct BlockScratch {
    size_t queries, tile, total;
  };
  // Tokens per FFN slice of a chunk: gate and up ([tokens, n_ff] each, the largest scratch:
  // 2 x 18 MiB for Qwen2.5-1.5B at 512 tokens) hold one slice. A slice of 128 still fills every
  // prefill tile; the FFN weights are read once per slice instead of once per chunk, from L3.
  // With tile kernels (AMX) the FFN weights are decoded into tiles once per matmul call, so a
  // slice of 256 halves that work per token: pp512 paired 1.036 (TinyLlama Q4_0), 1.067
  // (Qwen2.5-1.5B Q4_K_M), for gate / up 2 x 128 x n_ff x 4 bytes more (11 MiB at n_ff 11008).
  static constexpr int32_t kFfnTokens = 128;
  static constexpr int32_t kFfnTokensTiled = 256;
  // kFfnTokensTiled where the active ISA runs the FFN matmuls on tile kernels, else kFfnTokens.
  static int32_t ffn_slice_tokens(const Model& model);
  // K/V positions per prefill tile: K^T [hd, 64] F32 is 16 KiB at head_dim 64, in L1.
  static constexpr int32_t kAttnTileRows = 64;
  // Most tokens per query block, and the bytes of scores [tokens x g, n_ctx] one thread may
  // hold for them (the block shrinks at long contexts to stay within it).
  static constexpr int32_t kMaxBlockTokens = 16;
  static constexpr size_t kBlockScoresBudget = size_t{2} << 20;
  static int32_t prefill_block_tokens(int64_t g, int64_t scores_stride, int32_t n_batch);
  static BlockScratch block_scratch(int64_t g, int64_t hd, int64_t scores_stride, int32_t query_block_tokens);
  void plan_query_blocks(const BatchEntry* entries, int32_t n, bool stepwise);
  void attention(const BatchEntry* entries, int32_t n, int layer, const KvCache& kv);
  void attention_entries(const BatchEntry* entries, int32_t n, int layer, const KvCache& kv);
  void attention_blocks(const BatchEntry* entries, int layer, const KvCache& kv);
  template <typename Fn>
  void for_entries(int32_t n, Fn&& fn);

  const Model& model_;
  const HParams& hp_;
  int32_t n_batch_;
  int32_t n_ctx_;
  int max_threads_;
  int32_t ffn_tokens_ = kFfnTokens;  // ffn_slice_tokens(model_) at construction
  size_t attn_scratch_floats_ = 0;  // per thread
  size_t entries_scores_floats_ = 0;  // per thread: decode scores, then the int8 queries
  size_t entries_weights_floats_ = 0;  // per thread: offset of decode's int8 V weights (0: none)
  // Rows of Q4_0 V whose int8 weights are made, then summed, at a time (forward_attention.cpp);
  // a multiple of the kernels' 64-row groups (kernels::kValueWeightGroupRows).
  static constexpr int32_t kWeightedRows = 256;
  int64_t scores_stride_ = 0;       // floats between query rows of attention_blocks' scores (n_ctx rounded to 16)
  int32_t query_block_tokens_ = 1;  // tokens per prefill query block (1: attention_blocks off)
  std::vector<QueryBlock> blocks_;  // this chunk's query blocks (reserved n_batch)
  bool use_blocks_ = false;

  ThreadPool* pool_ = nullptr;  // set for the duration of run()
  int n_threads_ = 1;
  MatmulObserver* observer_ = nullptr;  // set for the duration of run(); usually null

  AlignedBuffer x_;       // [n_batch, n_embd] residual stream
  AlignedBuffer xn_;      // [n_batch, max(n_embd, n_embd_q)] normed input / matmul output scratch
  AlignedBuffer q_;       // [n_batch, n_embd_q]
  AlignedBuffer k_;       // [n_batch, n_embd_kv]
  AlignedBuffer v_;       // [n_batch, n_embd_kv]
  AlignedBuffer attn_;    // [n_batch, n_embd_q]
  AlignedBuffer gate_;    // [min(n_batch, ffn_tokens_), n_ff]
  AlignedBuffer up_;      // [min(n_batch, ffn_tokens_), n_ff]
  AlignedBuffer xq_;      // [n_batch, widest group of quantized inputs] matmul inputs
  AlignedBuffer xt_;      // their tiled copies (kernels.h: tile_activations); empty without AMX
  AlignedBuffer cos_;     // [n_batch, n_rot/2]
  AlignedBuffer sin_;     // [n_batch, n_rot/2]
  AlignedBuffer scores_;  // per thread: attention scores [n_gqa, n_ctx], or attention_blocks' area
  std::vector<int32_t> out_rows_;  // entries wanting logits, in order (reserved n_batch)
};

}  // namespace edgellm
