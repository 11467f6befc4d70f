// An inference context: the per-conversation state (KV cache, scratch buffers, threads) over a
// shared, read-only Model. One Context serves several sequences at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "platform/thread_pool.h"

#include "engine/batch.h"
#include "kernels/tensor_type.h"

namespace edgellm {

class Model;
class KvCache;
class MatmulObserver;

// Polled by the forward pass between layers (and before the first): returning true abandons the
// forward, which then throws Error(kCancelled) with the chunk rolled back as for any error. A
// plain function pointer: the check runs n_layer times per forward and must cost nothing.
struct AbortCheck {
  bool (*fn)(void* user) = nullptr;
  void* user = nullptr;
  bool operator()() const { return fn != nullptr && fn(user); }
};

struct ContextParams {
  int32_t n_ctx = 0;              // max positions per sequence; 0 = the model's training context, capped at 4096
  int32_t n_batch = 512;          // max batch entries per forward chunk (a longer batch is split)
  int32_t n_seq_max = 1;          // sequences that may hold KV at once
  int32_t n_threads = 0;          // threads for decode-sized batches; 0 = default (big cores)
  int32_t n_threads_batch = 0;    // threads for prefill-sized batches; 0 = n_threads
  // KV cache element types: F16 (default), F32 (tests), Q8_0 (int8 + per-block scale), Q4_0
  // (4-bit + per-block scale; Q8_0 and Q4_0 need head_dim a multiple of 32). kv_type is the K
  // type and also the V type unless kv_type_v is set (--kv-type-k / --kv-type-v).
  TensorType kv_type = TensorType::F16;
  std::optional<TensorType> kv_type_v;
  int32_t kv_block_tokens = 16;   // tokens per KV block (a multiple of 16 for decode's int8-weighted
                                  // Q4_0 V sum; other sizes use the F32 sum, kernels/attention.h)
  size_t kv_budget_bytes = 0;     // KV pool size; 0 = see kv_budget_fraction
  // With kv_budget_bytes 0: > 0 sizes the pool as this fraction of the memory available now
  // (MemAvailable), at most twice n_seq_max full sequences (the rest of a large budget serves
  // the prefix cache); 0 = enough blocks for n_seq_max full sequences. In (0, 1].
  double kv_budget_fraction = 0;
  bool pin_threads = false;       // pin worker threads to the big cores (sched_setaffinity)
  // Outputs are the final hidden states after output_norm (n_embd floats, embeddings(i)) instead
  // of logits: llama.cpp's `embeddings` context parameter, what a decoder used as an embedder
  // (Qwen3-Embedding, engine/embedder.h) pools. The output head is not run.
  bool embeddings = false;
  // Where decode (n_threads) and prefill (n_threads_batch) threads run and at which worker
  // priority (platform/thread_placement.h; device/power_mode.h fills them per power mode). Empty:
  // threads stay where they are. The thread calling decode() takes the phase's CPU set too.
  ThreadPlacement placement;
  ThreadPlacement placement_batch;
  // The pool to run on (attached, shared with its other users). Null: the process-wide
  // shared_thread_pool() with enough threads, pinned when pin_threads.
  std::shared_ptr<ThreadPool> thread_pool;

  TensorType kv_k() const { return kv_type; }
  TensorType kv_v() const { return kv_type_v.value_or(kv_type); }
};

struct ContextStats {
  int64_t n_tokens_processed = 0;  // batch entries run through the model since creation
  int64_t n_forward_calls = 0;
  double forward_seconds = 0;      // wall time inside decode()
};

class Context {
 public:
  Context(const Model& model, const ContextParams& params);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // Runs the model over the batch (split into n_batch chunks). K/V of every entry is written to
  // its sequence's blocks; logits are kept for entries with want_logits.
  // Errors: kInvalidArgument (bad token id / seq id / position not following the sequence),
  // kContextFull (position >= n_ctx or KV blocks exhausted). On error, chunks that completed
  // stay in the cache; the failing chunk's entries do not.
  void decode(const Batch& batch);

  // Installs the check polled between layers (AbortCheck{} removes it). Set it from the thread
  // that calls decode(), not during a decode.
  void set_abort_check(AbortCheck check) { abort_check_ = check; }
  // Installs a tool's window on every matmul input of later decodes (engine/matmul_observer.h;
  // nullptr removes it). The observer must outlive its installation. Same thread rule.
  void set_matmul_observer(MatmulObserver* observer) { matmul_observer_ = observer; }

  // Capacity, for admission before a batch is built (so a step never fails half way for want
  // of KV blocks): blocks that extending `seq_id` by `n_more` positions takes from the pool
  // (including the copy of a shared partial block), and blocks free now.
  int32_t kv_blocks_needed(int32_t seq_id, int32_t n_more) const;
  int32_t kv_blocks_free() const;    // free + cached (an allocation evicts a cached block)
  int32_t kv_blocks_total() const;
  int32_t kv_blocks_cached() const;  // unreferenced blocks the prefix cache keeps
  // Blocks a sequence of `n_tokens` positions occupies (ceil(n_tokens / kv_block_tokens)).
  int32_t kv_blocks_for(int64_t n_tokens) const;

  // Gives memory back on pressure: the forward pass's scratch buffers (re-created by the next
  // decode) and logit rows beyond one per sequence; when no sequence holds KV, the KV pool's
  // pages too, dropping the prefix cache (they read as zeros afterwards and are written before
  // they are read). Returns
  // the bytes released. Not during a decode.
  size_t trim();
  // The logit rows beyond one per sequence (at most n_batch) only: what a forward with many
  // outputs grew (a classify's label rows). Returns the bytes released. Not during a decode.
  size_t release_logits();

  // Logits (n_vocab floats) of the i-th entry that wanted logits in the last decode() call.
  // Throws Error(kInvalidArgument) in an embeddings context.
  const float* logits(int32_t i) const;
  // With ContextParams::embeddings: the normed final hidden state (n_embd floats) of the i-th
  // entry that wanted an output. Throws Error(kInvalidArgument) otherwise.
  const float* embeddings(int32_t i) const;
  int32_t n_outputs() const;

  // Sequence management. A sequence holds positions [0, seq_length).
  int32_t seq_length(int32_t seq_id) const;
  void seq_clear(int32_t seq_id);                        // frees its blocks
  void seq_truncate(int32_t seq_id, int32_t n_keep);     // keep positions [0, n_keep)
  void seq_fork(int32_t src_seq, int32_t dst_seq);       // dst shares src's blocks (copy-on-write)
  void clear();                                          // all sequences (and the prefix cache)
  // Context shift (context_shift.cpp, docs/context-shift.md): drops positions [n_keep, n_keep +
  // n_discard) of `seq_id` and moves the later ones down by n_discard, re-rotating their cached
  // K rows by -n_discard so every kept row is the K of its token at its new position (RoPE is a
  // rotation, linear in the position). The model then sees the kept prefix (attention sinks,
  // system prompt) followed by the most recent window at consistent relative positions; decode
  // continues at seq_length(). kInvalidArgument for a bad range, kContextFull when shared blocks
  // must be copied and the pool has too few free (the sequence is then unchanged).
  void seq_shift(int32_t seq_id, int32_t n_keep, int32_t n_discard);
  // Prefix cache (kv_cache.h): makes `seq_id` hold the longest prefix of `tokens`, at most n_max
  // positions, that it already holds or that the cache holds in full blocks (of any sequence,
  // live or finished). Returns the positions held; decode the rest from there. Pass
  // n_max = tokens.size() - 1 to keep one token to decode for the logits.
  int32_t seq_reuse_prefix(int32_t seq_id, const std::vector<int32_t>& tokens, int32_t n_max);

  // Sessions (kv/session_file.h, docs/sessions.md). save_session: the sequence's positions, token
  // ids and K/V rows plus `payload`, as bytes (kInvalidArgument when a position has no recorded
  // id). load_session: validates the bytes against this model and KV type (kInvalidFile:
  // truncated / corrupted; kInvalidArgument: another model, KV type or shape; the sequence is
  // then untouched) and makes the sequence hold the saved positions (kContextFull: too many; it
  // is left empty); with `prompt`, only the saved positions that start `prompt`, at most
  // prompt.size() - 1. Returns the payload.
  std::string save_session(int32_t seq_id, std::string_view payload = {});
  std::string load_session(int32_t seq_id, std::string_view bytes, const std::vector<int32_t>* prompt = nullptr);
  // The model file's fingerprint (model/model_fingerprint.h).
  uint64_t model_fingerprint() const;

  const Model& model() const { return model_; }
  const ContextParams& params() const { return params_; }
  const ContextStats& stats() const { return stats_; }
  KvCache& kv_cache();
  // Bytes this context allocated (KV pool + scratch + logits), for memory reports.
  size_t allocated_bytes() const;
  // The pools prefill and decode run on (the same one unless the phases' worker priorities
  // differ: see the constructor) and what applying the placements did on them.
  ThreadPool& prefill_pool() const;
  ThreadPool& decode_pool() const;
  PlacementLog::Snapshot placement_log() const;

 private:
  struct Impl;
  const Model& model_;
  ContextParams params_;
  ContextStats stats_;
  AbortCheck abort_check_;
  MatmulObserver* matmul_observer_ = nullptr;
  std::unique_ptr<Impl> impl_;
};

}  // namespace edgellm
