#include "engine/context.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "engine/forward.h"
#include "engine/memory_plan.h"
#include "kv/kv_cache.h"
#include "kv/session_file.h"
#include "model/model.h"
#include "model/model_fingerprint.h"
#include "platform/cpu_topology.h"
#include "platform/memory_stats.h"
#include "platform/shared_thread_pool.h"
#include "platform/thread_pool.h"

namespace edgellm {

namespace {

constexpr int32_t kMaxThreads = 256;

}  // namespace

struct Context::Impl {
  std::unique_ptr<KvCache> kv;
  std::shared_ptr<ThreadPool> pool;         // prefill (and decode unless decode_pool is set)
  std::shared_ptr<ThreadPool> decode_pool;  // null: decode runs on `pool`
  std::unique_ptr<ForwardPass> forward;
  std::vector<float> logits;  // [n_outputs, out_width]; capacity n_batch rows reserved up front
  size_t out_width = 0;       // n_vocab, or n_embd in an embeddings context
  int32_t n_outputs = 0;
  uint64_t fingerprint = 0;  // the model file's (prefix-cache seed, session files)
  // decode() bookkeeping, reserved up front so a decode step does not touch the heap.
  std::vector<int32_t> next_pos;                   // [n_seq_max] simulated next position
  std::vector<std::pair<int32_t, int32_t>> grown;  // (seq, length before the chunk), <= n_batch
};

Context::Context(const Model& model, const ContextParams& params) : model_(model), params_(params) {
  const HParams& hp = model.hparams();
  require(!hp.encoder, ErrorCode::kUnsupported,
          hp.arch + " is an encoder model: it computes embeddings and rerank scores (engine/embedder.h, `edgellm "
                    "embed`), not text");
  ContextParams& p = params_;
  require(p.n_ctx >= 0, ErrorCode::kInvalidArgument, "n_ctx " + std::to_string(p.n_ctx) + " must be >= 0");
  if (p.n_ctx == 0) p.n_ctx = std::min(hp.n_ctx_train, kDefaultContextCap);
  require(p.n_batch >= 1, ErrorCode::kInvalidArgument, "n_batch " + std::to_string(p.n_batch) + " must be >= 1");
  require(p.n_seq_max >= 1, ErrorCode::kInvalidArgument, "n_seq_max " + std::to_string(p.n_seq_max) + " must be >= 1");
  require(p.n_threads >= 0 && p.n_threads <= kMaxThreads, ErrorCode::kInvalidArgument,
          "n_threads " + std::to_string(p.n_threads) + " is outside [0, " + std::to_string(kMaxThreads) + "]");
  require(p.n_threads_batch >= 0 && p.n_threads_batch <= kMaxThreads, ErrorCode::kInvalidArgument,
          "n_threads_batch " + std::to_string(p.n_threads_batch) + " is outside [0, " + std::to_string(kMaxThreads) + "]");
  if (p.n_threads == 0) p.n_threads = default_thread_count();
  if (p.n_threads_batch == 0) p.n_threads_batch = p.n_threads;

  KvCacheParams kp = kv_cache_params(hp, p);  // engine/memory_plan.h: the shape the plan counts
  const uint64_t fingerprint = edgellm::model_fingerprint(model.gguf());
  kp.prefix_seed = fingerprint;
  kp.n_blocks = kv_pool_blocks(p, kp);  // the memory formula (engine/memory_plan.h); checks the block size and budget
  if (p.kv_budget_bytes == 0 && p.kv_budget_fraction > 0) {
    p.kv_budget_bytes = static_cast<size_t>(kp.n_blocks) * KvCache::block_bytes(kp);  // params() reports the choice
  }

  impl_ = std::make_unique<Impl>();
  impl_->kv = std::make_unique<KvCache>(kp);
  impl_->fingerprint = fingerprint;
  const int max_threads = std::max(p.n_threads, p.n_threads_batch);
  for (const ThreadPlacement* pl : {&p.placement, &p.placement_batch}) {
    require(!pl->nice || (*pl->nice >= -20 && *pl->nice <= 19), ErrorCode::kInvalidArgument,
            "thread nice value " + std::to_string(pl->nice.value_or(0)) + " is outside [-20, 19]");
  }
  impl_->pool = p.thread_pool ? p.thread_pool : shared_thread_pool(max_threads, p.pin_threads);
  if (p.placement.nice.value_or(0) != p.placement_batch.nice.value_or(0)) {
    // Decode workers at another priority than prefill workers get a pool of their own (n_threads
    // threads: on a 4 + 4 phone 3 more sleeping workers, ~100 KiB of stack touched). One pool
    // would have to move its workers' nice value back and forth every phase change, and an
    // unprivileged thread cannot raise its priority again once it lowered it: prefill would run
    // at decode's priority after the first decode.
    impl_->decode_pool = std::make_shared<ThreadPool>(p.n_threads);
  }
  impl_->forward = std::make_unique<ForwardPass>(model, p.n_batch, p.n_ctx, p.kv_v(), max_threads);
  params_.thread_pool.reset();  // params() reports the configuration; the Context holds the pool
  // One row per sequence: a decode step of every sequence never allocates. A prompt that asks for
  // more rows (perplexity: every position) grows it once. Reserving n_batch rows up front would
  // be 311 MB of address space for a 151936-token vocabulary at n_batch 512.
  impl_->out_width = static_cast<size_t>(p.embeddings ? hp.n_embd : hp.n_vocab);
  impl_->logits.reserve(static_cast<size_t>(logits_rows_reserved(p)) * impl_->out_width);
  impl_->next_pos.resize(static_cast<size_t>(p.n_seq_max));
  impl_->grown.reserve(static_cast<size_t>(std::min(p.n_batch, p.n_seq_max)));
}

Context::~Context() = default;

KvCache& Context::kv_cache() { return *impl_->kv; }

size_t Context::allocated_bytes() const {
  return impl_->kv->pool().total_bytes() + (impl_->forward ? impl_->forward->allocated_bytes() : 0) +
         impl_->logits.capacity() * sizeof(float);
}

ThreadPool& Context::prefill_pool() const { return *impl_->pool; }
ThreadPool& Context::decode_pool() const { return impl_->decode_pool ? *impl_->decode_pool : *impl_->pool; }

PlacementLog::Snapshot Context::placement_log() const {
  PlacementLog::Snapshot s = impl_->pool->placement_log();
  if (impl_->decode_pool) {
    const PlacementLog::Snapshot d = impl_->decode_pool->placement_log();
    s.affinity_applied += d.affinity_applied;
    s.affinity_failed += d.affinity_failed;
    s.nice_applied += d.nice_applied;
    s.nice_denied += d.nice_denied;
    if (s.note.empty()) s.note = d.note;
  }
  return s;
}

int32_t Context::kv_blocks_needed(int32_t seq_id, int32_t n_more) const {
  return impl_->kv->blocks_needed(seq_id, impl_->kv->seq_length(seq_id) + std::max<int32_t>(0, n_more));
}
int32_t Context::kv_blocks_free() const { return impl_->kv->pool().n_free(); }
int32_t Context::kv_blocks_total() const { return impl_->kv->pool().n_blocks(); }
int32_t Context::kv_blocks_for(int64_t n_tokens) const {
  const int64_t T = params_.kv_block_tokens;
  return static_cast<int32_t>(std::min<int64_t>((std::max<int64_t>(0, n_tokens) + T - 1) / T, INT32_MAX));
}

size_t Context::release_logits() {
  const size_t keep_rows = static_cast<size_t>(std::max(1, std::min(params_.n_batch, params_.n_seq_max)));
  const size_t n_vocab = impl_->out_width;
  if (impl_->logits.capacity() <= keep_rows * n_vocab) return 0;
  const size_t released = (impl_->logits.capacity() - keep_rows * n_vocab) * sizeof(float);
  std::vector<float> small;
  small.reserve(keep_rows * n_vocab);
  impl_->logits.swap(small);
  impl_->n_outputs = 0;
  return released;
}

size_t Context::trim() {
  size_t released = 0;
  if (impl_->forward) {
    released += impl_->forward->allocated_bytes();
    impl_->forward.reset();
  }
  released += release_logits();
  KvCache& kv = *impl_->kv;
  if (kv.pool().n_in_use() == 0) released += kv.pool().discard_storage();  // drops the prefix cache
  return released;
}

void Context::decode(const Batch& batch) {
  const auto t0 = std::chrono::steady_clock::now();
  const HParams& hp = model_.hparams();
  KvCache& kv = *impl_->kv;
  const auto& entries = batch.entries();
  const int32_t n = static_cast<int32_t>(entries.size());

  // Validate the whole batch before touching the cache: ids, and positions that continue each
  // sequence without gaps (simulated over the batch).
  std::vector<int32_t>& next = impl_->next_pos;
  for (int32_t s = 0; s < params_.n_seq_max; ++s) next[static_cast<size_t>(s)] = kv.seq_length(s);
  int32_t n_outputs = 0;
  // Messages are built only on failure: a valid decode step must not touch the heap.
  for (int32_t i = 0; i < n; ++i) {
    const BatchEntry& e = entries[static_cast<size_t>(i)];
    if (e.seq_id < 0 || e.seq_id >= params_.n_seq_max) {
      throw Error(ErrorCode::kInvalidArgument, "batch entry " + std::to_string(i) + ": sequence id " +
                                                   std::to_string(e.seq_id) + " is outside [0, " +
                                                   std::to_string(params_.n_seq_max) + ") (n_seq_max)");
    }
    if (e.token < 0 || e.token >= hp.n_vocab) {
      throw Error(ErrorCode::kInvalidArgument, "batch entry " + std::to_string(i) + ": token id " +
                                                   std::to_string(e.token) + " is outside [0, " +
                                                   std::to_string(hp.n_vocab) + ")");
    }
    int32_t& expect = next[static_cast<size_t>(e.seq_id)];
    if (e.pos != expect) {
      throw Error(ErrorCode::kInvalidArgument,
                  "batch entry " + std::to_string(i) + ": position " + std::to_string(e.pos) + " of sequence " +
                      std::to_string(e.seq_id) + " does not follow its last position (expected " +
                      std::to_string(expect) + "; truncate the sequence to rewrite positions)");
    }
    if (e.pos >= params_.n_ctx) {
      throw Error(ErrorCode::kContextFull, "batch entry " + std::to_string(i) + ": position " + std::to_string(e.pos) +
                                               " of sequence " + std::to_string(e.seq_id) +
                                               " exceeds the context size n_ctx " + std::to_string(params_.n_ctx));
    }
    ++expect;
    if (e.want_logits) ++n_outputs;
  }

  // Grows only when a caller asks for more logit rows than ever before (e.g. every position for
  // perplexity); decode steps of up to n_seq_max sequences never allocate.
  impl_->logits.resize(static_cast<size_t>(n_outputs) * impl_->out_width);
  impl_->n_outputs = 0;

  int32_t out_done = 0;
  auto& grown = impl_->grown;  // (seq, length before this chunk)
  for (int32_t c0 = 0; c0 < n; c0 += params_.n_batch) {
    const int32_t cn = std::min(params_.n_batch, n - c0);
    const BatchEntry* chunk = entries.data() + c0;
    grown.clear();
    bool distinct = true;
    int32_t chunk_outputs = 0;
    for (int32_t i = 0; i < cn; ++i) {
      if (chunk[i].want_logits) ++chunk_outputs;
      bool seen = false;
      for (const auto& g : grown) seen = seen || g.first == chunk[i].seq_id;
      if (seen) {
        distinct = false;
      } else {
        grown.emplace_back(chunk[i].seq_id, kv.seq_length(chunk[i].seq_id));
      }
    }
    try {
      for (int32_t i = 0; i < cn; ++i) {
        kv.seq_grow(chunk[i].seq_id, chunk[i].pos + 1);
        kv.seq_set_token(chunk[i].seq_id, chunk[i].pos, chunk[i].token);
      }
      // A decode step (one token per sequence, or a stepwise verify batch) uses n_threads;
      // prefill uses n_threads_batch, each phase on its placement (and pool).
      const bool decode_phase = distinct || batch.stepwise();
      const int threads = decode_phase ? params_.n_threads : params_.n_threads_batch;
      const ThreadPlacement& placement = decode_phase ? params_.placement : params_.placement_batch;
      ThreadPool& pool = decode_phase && impl_->decode_pool ? *impl_->decode_pool : *impl_->pool;
      const ScopedThreadPlacement scope(placement.empty() ? nullptr : &placement);
      if (!impl_->forward) {  // released by trim()
        const int max_threads = std::max(params_.n_threads, params_.n_threads_batch);
        impl_->forward = std::make_unique<ForwardPass>(model_, params_.n_batch, params_.n_ctx, params_.kv_v(),
                                                       max_threads);
      }
      impl_->forward->run(chunk, cn, kv, pool, threads, abort_check_, matmul_observer_,
                          impl_->logits.data() + static_cast<size_t>(out_done) * impl_->out_width,
                          params_.embeddings, batch.stepwise());
    } catch (...) {
      for (const auto& g : grown) kv.seq_truncate(g.first, g.second);
      impl_->n_outputs = out_done;
      throw;
    }
    // The blocks this chunk filled are now written: the prefix cache may hand them out.
    for (const auto& g : grown) kv.seq_publish(g.first);
    out_done += chunk_outputs;
    impl_->n_outputs = out_done;
    stats_.n_tokens_processed += cn;
    ++stats_.n_forward_calls;
  }
  stats_.forward_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

const float* Context::logits(int32_t i) const {
  require(!params_.embeddings, ErrorCode::kInvalidArgument,
          "logits: this context outputs embeddings (ContextParams::embeddings), not logits");
  if (i < 0 || i >= impl_->n_outputs) {
    throw Error(ErrorCode::kInvalidArgument, "logits index " + std::to_string(i) + " is outside [0, " +
                                                 std::to_string(impl_->n_outputs) +
                                                 ") (entries with want_logits in the last decode)");
  }
  return impl_->logits.data() + static_cast<size_t>(i) * impl_->out_width;
}

const float* Context::embeddings(int32_t i) const {
  require(params_.embeddings, ErrorCode::kInvalidArgument,
          "embeddings: this context outputs logits (set ContextParams::embeddings for hidden states)");
  require(i >= 0 && i < impl_->n_outputs, ErrorCode::kInvalidArgument, [&] {
    return "embeddings index " + std::to_string(i) + " is outside [0, " + std::to_string(impl_->n_outputs) +
           ") (entries with want_logits in the last decode)";
  });
  return impl_->logits.data() + static_cast<size_t>(i) * impl_->out_width;
}

int32_t Context::n_outputs() const { return impl_->n_outputs; }

int32_t Context::seq_length(int32_t seq_id) const { return impl_->kv->seq_length(seq_id); }
void Context::seq_clear(int32_t seq_id) { impl_->kv->seq_clear(seq_id); }
void Context::seq_truncate(int32_t seq_id, int32_t n_keep) { impl_->kv->seq_truncate(seq_id, n_keep); }
void Context::seq_fork(int32_t src_seq, int32_t dst_seq) { impl_->kv->seq_fork(src_seq, dst_seq); }
int32_t Context::seq_reuse_prefix(int32_t seq_id, const std::vector<int32_t>& tokens, int32_t n_max) {
  return impl_->kv->seq_reuse_prefix(seq_id, tokens.data(), static_cast<int32_t>(tokens.size()), n_max);
}
int32_t Context::kv_blocks_cached() const { return impl_->kv->pool().n_cached(); }
uint64_t Context::model_fingerprint() const { return impl_->fingerprint; }

std::string Context::save_session(int32_t seq_id, std::string_view payload) {
  return encode_session(*impl_->kv, seq_id, impl_->fingerprint, payload);
}

std::string Context::load_session(int32_t seq_id, std::string_view bytes, const std::vector<int32_t>* prompt) {
  const SessionView s = decode_session(bytes, impl_->fingerprint, impl_->kv->params());
  check_session_tokens(s, model_.hparams().n_vocab);
  auto n = static_cast<int32_t>(s.tokens.size());
  if (prompt != nullptr) {
    int32_t common = 0;
    const auto limit = std::min<int32_t>(n, static_cast<int32_t>(prompt->size()) - 1);
    while (common < limit && s.tokens[static_cast<size_t>(common)] == (*prompt)[static_cast<size_t>(common)]) ++common;
    n = common;
  }
  import_session(*impl_->kv, seq_id, s, n);
  return s.payload;
}
void Context::clear() { impl_->kv->clear(); }

}  // namespace edgellm
