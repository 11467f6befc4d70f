// One memory model: what a configuration (model, context, sequences, batch, KV type, threads)
// adds to a process, term by term. The Context sizes its KV pool and logits with the same
// functions (kv_pool_blocks, logits_rows_reserved), `edgellm info` prints this, the planner
// compares it with a device's budget and the degradation ladder re-plans with it
// (docs/device-fitness.md, "The memory formula").
//
//   total = weights_touched + kv + scratch + logits + tokenizer + runtime
//   weights_touched  every matrix and vector the forward pass reads: all layers, the output
//                    head; token_embd only when tied to the output (an untied embedding is read
//                    one row per token, so its pages mostly stay on disk). Repacked matrices are
//                    anonymous memory of the same size whose mapped pages were released, so the
//                    term is the same with or without repacking (weights_repacked says how much
//                    of it cannot be evicted by the OS).
//   kv               kv_pool_blocks x KvCache::block_bytes (the whole pool, as if every position
//                    of every sequence were used: the worst case a phone must survive);
//                    block_bytes = block_tokens x n_layer x n_head_kv x (K row + V row), a row
//                    being head_dim values in its type: F32 4 B, F16 2 B, Q8_0 34 B and Q4_0
//                    18 B per 32 (head_dim 64: 256 / 128 / 68 / 36 bytes)
//   scratch          ForwardPass buffers for n_batch entries and max threads
//   logits           logits_rows_reserved x n_vocab x 4 bytes
//   tokenizer        vocabulary strings and tables, merge table (estimated from the GGUF arrays)
//   runtime          worker thread stacks touched + the library's fixed allocations (measured)
//   draft            a draft model for speculative decoding, when one is held beside the model
//                    (plan_draft_memory): its weights_touched once, plus n_seq_max x (kv +
//                    scratch + logits) of a context with one sequence of the target's n_ctx (F16
//                    KV; F32 beside an F32 target): generate() gives one sequence a draft
//                    context (n_seq_max 1), the InferenceService one per sequence slot; no
//                    tokenizer (it uses the target's) and no runtime (it runs on the target's
//                    threads, between the target's forwards)
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/json.h"
#include "engine/context.h"
#include "kv/kv_cache.h"
#include "model/model.h"

namespace edgellm {

// The context used when params.n_ctx is 0: the model's training context, capped so a model
// trained on 128K positions does not reserve a KV pool sized for them on a phone.
inline constexpr int32_t kDefaultContextCap = 4096;

struct MemoryPlan {
  int32_t n_ctx = 0, n_seq_max = 0, n_batch = 0, n_threads = 0;
  TensorType kv_type = TensorType::F16;    // K
  TensorType kv_type_v = TensorType::F16;  // V
  int32_t kv_blocks = 0;
  size_t weights_touched = 0;
  size_t weights_repacked = 0;     // part of weights_touched that is anonymous (repacked) memory
  size_t weights_mapped_file = 0;  // every tensor of the file (address space, not resident)
  size_t kv = 0;
  size_t scratch = 0;
  size_t logits = 0;
  size_t tokenizer = 0;
  size_t runtime = 0;
  size_t draft = 0;  // plan_draft_memory(...).total() of a draft model beside it; 0: none

  size_t total() const { return weights_touched + kv + scratch + logits + tokenizer + runtime + draft; }
  Json to_json() const;  // every term in bytes, plus "total"
};

// The KV cache's shape for `hp` under `params` (pool size not set: kv_pool_blocks).
KvCacheParams kv_cache_params(const HParams& hp, const ContextParams& params);
// KV pool size the Context allocates: enough blocks for n_seq_max full sequences, or what
// kv_budget_bytes holds. Throws Error(kInvalidArgument) for a budget below one block, kv_block_tokens < 1
// or kv_budget_fraction outside [0, 1]; kOutOfMemory when the fraction is less than one block.
int32_t kv_pool_blocks(const ContextParams& params, const KvCacheParams& kv);
// Logits rows the Context reserves up front (one per sequence, at most n_batch).
int32_t logits_rows_reserved(const ContextParams& params);
// ContextParams with the Context's defaults filled in (n_ctx 0 -> the model's, capped;
// threads 0 -> big cores), without validation beyond what the formula needs.
ContextParams resolved_context_params(const Model& model, ContextParams params);

// The plan for `model` under `params`. `repack`: how the model is (or will be) loaded; a model
// loaded with repacking already has packed matrices and the mode does not matter. `draft_model`:
// a draft model for speculative decoding beside it (its term: plan_draft_memory), loaded with the
// same `repack`.
MemoryPlan plan_memory(const Model& model, const ContextParams& params, RepackMode repack,
                       const Model* draft_model = nullptr);

// The Context a draft model gets beside a target context with (resolved) params `target`
// (generation/draft_model_drafter.h creates it from these): one sequence of the target's n_ctx,
// its batch, threads, placements and thread pool; KV F16, or F32 when the target's K is F32.
ContextParams draft_context_params(const ContextParams& target);
// A draft model's own terms beside a target context with resolved params `target`: weights
// once, and kv, scratch, logits of draft_context_params(target) times `contexts` (the
// InferenceService keeps one per sequence slot: target.n_seq_max; generate() one); tokenizer
// and runtime 0 (see the file comment). plan_memory's MemoryPlan::draft is its total() with
// contexts = the target's n_seq_max.
MemoryPlan plan_draft_memory(const Model& draft, const ContextParams& target, RepackMode repack, int32_t contexts = 1);

struct EmbedderParams;
// The same terms for an Embedder (engine/embedder.h): an encoder has no KV and no logits, its
// scratch is the EncoderPass's for n_batch tokens; a decoder used as an embedder is its
// embeddings Context (KV for one forward's sequences, hidden-state rows instead of logits).
// n_ctx, n_batch and n_seq_max report the embedder's; kv_type its K/V type.
MemoryPlan plan_embedder_memory(const Model& model, const EmbedderParams& params, RepackMode repack);

}  // namespace edgellm
