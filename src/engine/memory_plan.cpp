#include "engine/memory_plan.h"

#include <algorithm>
#include <unordered_set>

#include "core/error.h"
#include "engine/embedder.h"
#include "engine/encoder_pass.h"
#include "engine/forward.h"
#include "gguf/gguf_reader.h"
#include "kernels/repack.h"
#include "model/model.h"
#include "platform/cpu_topology.h"
#include "platform/memory_stats.h"

namespace edgellm {
namespace {

// Measured on x86-64 glibc (tests/engine/test_memory_plan.cpp: stories260K adds 4.68 MiB of which
// 1.96 are the other terms; calibrated once, then checked on two other models): the
// library's fixed allocations after a Context exists (thread pool, tables, allocator arenas)
// and what each worker thread's stack and thread-local state make resident.
constexpr size_t kRuntimeFixedBytes = size_t{2304} << 10;
constexpr size_t kRuntimePerThreadBytes = size_t{256} << 10;
// Tokenizer tables per vocabulary entry beyond the token text (id <-> text maps, scores,
// types) and per BPE merge (MergeTable: 16-byte slots at load factor <= 0.5).
constexpr size_t kTokenizerPerTokenBytes = 96;
constexpr size_t kTokenizerPerMergeBytes = 32;

size_t tokenizer_bytes(const gguf::GgufFile& f) {
  size_t bytes = 0;
  if (const auto tokens = f.get_string_array("tokenizer.ggml.tokens")) {
    for (std::string_view t : *tokens) bytes += t.size() + kTokenizerPerTokenBytes;
  }
  if (const auto merges = f.get_string_array("tokenizer.ggml.merges")) {
    bytes += merges->size() * kTokenizerPerMergeBytes;
  }
  return bytes;
}

size_t matrix_bytes(const WeightView& w) {
  return static_cast<size_t>(w.n_out) * w.row_bytes;
}

}  // namespace

Json MemoryPlan::to_json() const {
  Json j = Json::object();
  j.set("n_ctx", n_ctx);
  j.set("n_seq_max", n_seq_max);
  j.set("n_batch", n_batch);
  j.set("n_threads", n_threads);
  j.set("kv_type", tensor_type_name(kv_type));  // K (the name kept from when K and V shared one)
  j.set("kv_type_v", tensor_type_name(kv_type_v));
  j.set("kv_blocks", kv_blocks);
  j.set("weights_touched_bytes", static_cast<uint64_t>(weights_touched));
  j.set("weights_repacked_bytes", static_cast<uint64_t>(weights_repacked));
  j.set("weights_mapped_file_bytes", static_cast<uint64_t>(weights_mapped_file));
  j.set("kv_bytes", static_cast<uint64_t>(kv));
  j.set("scratch_bytes", static_cast<uint64_t>(scratch));
  j.set("logits_bytes", static_cast<uint64_t>(logits));
  j.set("tokenizer_bytes", static_cast<uint64_t>(tokenizer));
  j.set("runtime_bytes", static_cast<uint64_t>(runtime));
  j.set("draft_bytes", static_cast<uint64_t>(draft));
  j.set("total_bytes", static_cast<uint64_t>(total()));
  return j;
}

KvCacheParams kv_cache_params(const HParams& hp, const ContextParams& p) {
  KvCacheParams kp;
  kp.n_layer = hp.n_layer;
  kp.n_head_kv = hp.n_head_kv;
  kp.head_dim = hp.head_dim;
  kp.type_k = p.kv_k();
  kp.type_v = p.kv_v();
  kp.block_tokens = p.kv_block_tokens;
  kp.n_seq_max = p.n_seq_max;
  kp.n_ctx = p.n_ctx;
  return kp;
}

int32_t kv_pool_blocks(const ContextParams& p, const KvCacheParams& kp) {
  // Checked here, not only in Context: the service sizes its pool with this before it makes its
  // Context (classify's scratch sequences do not enlarge the pool).
  require(p.kv_block_tokens >= 1, ErrorCode::kInvalidArgument,
          "kv_block_tokens " + std::to_string(p.kv_block_tokens) + " must be >= 1");
  require(p.kv_budget_fraction >= 0 && p.kv_budget_fraction <= 1, ErrorCode::kInvalidArgument,
          "kv_budget_fraction " + std::to_string(p.kv_budget_fraction) + " is outside [0, 1]");
  const int64_t blocks_per_seq = (static_cast<int64_t>(p.n_ctx) + p.kv_block_tokens - 1) / p.kv_block_tokens;
  const int64_t full_blocks = std::min<int64_t>(blocks_per_seq * p.n_seq_max, INT32_MAX);
  const size_t bb = KvCache::block_bytes(kp);
  if (p.kv_budget_bytes == 0 && p.kv_budget_fraction > 0) {
    // A fraction of the memory available now (MemAvailable, lowered to the cgroup's headroom),
    // at most twice the full sequences (room for the prefix cache), at least one block.
    const size_t available = available_memory_bytes();
    require(available > 0, ErrorCode::kUnsupported,
            "kv_budget_fraction: this system does not report its available memory; give kv_budget_bytes");
    const auto budget = static_cast<size_t>(static_cast<double>(available) * p.kv_budget_fraction);
    require(bb > 0 && budget >= bb, ErrorCode::kOutOfMemory, [&] {
      return "out of KV memory: " + std::to_string(p.kv_budget_fraction) + " of the " +
             std::to_string(available >> 20) + " MiB available is less than one KV block (" + std::to_string(bb) +
             " bytes)";
    });
    return static_cast<int32_t>(std::min<int64_t>(static_cast<int64_t>(budget / bb), 2 * full_blocks));
  }
  if (p.kv_budget_bytes == 0) return static_cast<int32_t>(full_blocks);
  require(bb > 0 && p.kv_budget_bytes >= bb, ErrorCode::kInvalidArgument, [&] {
    return "kv_budget_bytes " + std::to_string(p.kv_budget_bytes) + " is smaller than one KV block (" +
           std::to_string(bb) + " bytes)";
  });
  return static_cast<int32_t>(std::min<size_t>(p.kv_budget_bytes / bb, INT32_MAX));
}

int32_t logits_rows_reserved(const ContextParams& p) {
  return std::max(1, std::min(p.n_batch, p.n_seq_max));
}

ContextParams resolved_context_params(const Model& model, ContextParams p) {
  if (p.n_ctx == 0) p.n_ctx = std::min(model.hparams().n_ctx_train, kDefaultContextCap);
  if (p.n_threads == 0) p.n_threads = default_thread_count();
  if (p.n_threads_batch == 0) p.n_threads_batch = p.n_threads;
  return p;
}

namespace {

// weights_touched, weights_repacked and weights_mapped_file of `m`.
void plan_weights(const Model& model, RepackMode repack, MemoryPlan& m) {
  // Weights: every matrix the forward multiplies (each counted once: a tied output head is
  // token_embd), plus the F32 vectors (norms, biases), which are copied out of the file. A
  // matrix that will be repacked counts with its packed size (Q4_K: 148/144 of the file's), as
  // Model::repack_weights decides it; a loaded, repacked model already has packed views.
  std::unordered_set<const uint8_t*> seen;
  for (const WeightView* w : model.matrices()) {
    if (!w->present() || !seen.insert(w->data).second) continue;
    size_t bytes = matrix_bytes(*w);
    if (model.repacked_bytes() == 0 && repack != RepackMode::kOff && kernels::can_repack(w->type, w->n_in, w->n_out)) {
      const TensorType packed = *kernels::packed_type_for(w->type);
      if (repack == RepackMode::kOn || kernels::has_fast_packed_kernel(packed)) {
        bytes = (tensor_row_bytes(packed, w->n_in) * static_cast<size_t>(w->n_out) + 63) / 64 * 64;
        m.weights_repacked += bytes;
      }
    }
    m.weights_touched += bytes;
  }
  size_t vectors = 0;
  for (const auto& t : model.gguf().tensors()) {
    if (t.n_dims == 1) vectors += t.n_bytes;
  }
  m.weights_touched += vectors;
  m.weights_mapped_file = model.weight_bytes();
  if (model.repacked_bytes() > 0) m.weights_repacked = model.repacked_bytes();
}

}  // namespace

ContextParams draft_context_params(const ContextParams& t) {
  ContextParams cp;
  cp.n_ctx = t.n_ctx;
  cp.n_batch = t.n_batch;
  cp.n_seq_max = 1;
  cp.n_threads = t.n_threads;
  cp.n_threads_batch = t.n_threads_batch;
  cp.kv_type = t.kv_k() == TensorType::F32 ? TensorType::F32 : TensorType::F16;
  cp.kv_block_tokens = t.kv_block_tokens;
  cp.placement = t.placement;
  cp.placement_batch = t.placement_batch;
  cp.thread_pool = t.thread_pool;
  return cp;
}

MemoryPlan plan_draft_memory(const Model& draft, const ContextParams& target, RepackMode repack, int32_t contexts) {
  MemoryPlan m = plan_memory(draft, draft_context_params(target), repack);
  const auto n = static_cast<size_t>(std::max(1, contexts));
  m.n_seq_max = static_cast<int32_t>(n);
  m.kv_blocks *= static_cast<int32_t>(n);
  m.kv *= n;
  m.scratch *= n;
  m.logits *= n;
  m.tokenizer = 0;
  m.runtime = 0;
  return m;
}

MemoryPlan plan_memory(const Model& model, const ContextParams& params, RepackMode repack, const Model* draft_model) {
  const ContextParams p = resolved_context_params(model, params);
  const HParams& hp = model.hparams();
  MemoryPlan m;
  m.n_ctx = p.n_ctx;
  m.n_seq_max = p.n_seq_max;
  m.n_batch = p.n_batch;
  m.n_threads = std::max(p.n_threads, p.n_threads_batch);
  m.kv_type = p.kv_k();
  m.kv_type_v = p.kv_v();
  plan_weights(model, repack, m);

  const KvCacheParams kp = kv_cache_params(hp, p);
  m.kv_blocks = kv_pool_blocks(p, kp);
  m.kv = static_cast<size_t>(m.kv_blocks) * KvCache::block_bytes(kp);
  m.scratch = ForwardPass::scratch_bytes(model, p.n_batch, p.n_ctx, p.kv_v(), m.n_threads);
  const int32_t out_width = p.embeddings ? hp.n_embd : hp.n_vocab;  // embeddings contexts keep hidden states
  m.logits = static_cast<size_t>(logits_rows_reserved(p)) * static_cast<size_t>(out_width) * sizeof(float);
  m.tokenizer = tokenizer_bytes(model.gguf());
  // Decode at another worker priority than prefill runs on a pool of its own (Context): its
  // n_threads - 1 workers come on top.
  const bool decode_pool = p.placement.nice.value_or(0) != p.placement_batch.nice.value_or(0);
  const size_t threads = static_cast<size_t>(m.n_threads) + (decode_pool ? static_cast<size_t>(p.n_threads - 1) : 0);
  m.runtime = kRuntimeFixedBytes + threads * kRuntimePerThreadBytes;
  if (draft_model != nullptr) m.draft = plan_draft_memory(*draft_model, p, repack, p.n_seq_max).total();
  return m;
}

MemoryPlan plan_embedder_memory(const Model& model, const EmbedderParams& params, RepackMode repack) {
  if (!model.hparams().encoder) return plan_memory(model, Embedder::context_params(model, params), repack);
  const EmbedderParams r = Embedder::resolved_params(model, params);
  MemoryPlan m;
  m.n_ctx = r.n_ctx;
  m.n_seq_max = r.n_seq_max;
  m.n_batch = r.n_batch;
  m.n_threads = r.n_threads;
  plan_weights(model, repack, m);
  // An encoder reads the position rows of every forward, and one token-embedding row per token
  // (like an untied embedding: its pages mostly stay on disk); plan_weights counted neither.
  for (const WeightView* w : {&model.position_embd(), &model.token_types()}) {
    if (w->present()) m.weights_touched += matrix_bytes(*w);
  }
  m.scratch = EncoderPass::scratch_bytes(model, r.n_batch, r.n_ctx, r.n_threads);
  m.tokenizer = tokenizer_bytes(model.gguf());
  m.runtime = kRuntimeFixedBytes + static_cast<size_t>(r.n_threads) * kRuntimePerThreadBytes;
  return m;
}

}  // namespace edgellm
