#include "engine/forward.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <initializer_list>

#include "core/error.h"
#include "engine/context.h"
#include "engine/matmul_group.h"
#include "engine/matmul_observer.h"
#include "engine/rope.h"
#include "engine/row_parallel.h"
#include "kernels/attention.h"
#include "kernels/kernels.h"
#include "kernels/repack.h"
#include "kv/kv_cache.h"
#include "platform/thread_pool.h"

namespace edgellm {

namespace {

size_t act_row(const WeightView& w) { return matmul_input_row_bytes(w); }

// Bytes of quantized input one token needs in the largest matmul group: Q/K/V share the input
// but may need up to three formats, gate/up two, the others one. Attention side (and the output
// head) and FFN side apart: the FFN runs on at most ffn_slice_tokens tokens at a time.
struct QuantizedInputBytes {
  size_t attention = 0, ffn = 0;
};
QuantizedInputBytes quantized_input_bytes_per_token(const Model& model) {
  QuantizedInputBytes b;
  b.attention = act_row(model.output());
  for (int il = 0; il < model.n_layer(); ++il) {
    const LayerWeights& L = model.layer(il);
    b.attention = std::max(b.attention, 3 * std::max({act_row(L.wq), act_row(L.wk), act_row(L.wv)}));
    b.attention = std::max(b.attention, act_row(L.wo));
    b.ffn = std::max(b.ffn, 2 * std::max(act_row(L.ffn_gate), act_row(L.ffn_up)));
    b.ffn = std::max(b.ffn, act_row(L.ffn_down));
  }
  return b;
}

size_t tiled_input_bytes(const Model& model, int64_t tokens, int64_t ffn_tokens) {
  size_t b = tiled_group_bytes({&model.output()}, tokens);
  for (int il = 0; il < model.n_layer(); ++il) {
    const LayerWeights& L = model.layer(il);
    b = std::max({b, tiled_group_bytes({&L.wq, &L.wk, &L.wv}, tokens), tiled_group_bytes({&L.wo}, tokens),
                  tiled_group_bytes({&L.ffn_gate, &L.ffn_up}, ffn_tokens), tiled_group_bytes({&L.ffn_down}, ffn_tokens)});
  }
  return b;
}

}  // namespace

struct ForwardPass::Sizes {
  size_t x, xn, q, k, v, attn, gate, up, xq, xt, rope, scores, out_rows, query_blocks;
  size_t attn_per_thread;  // floats
  size_t entries_scores;   // floats: decode's scores [g, n_ctx] in a thread's area, before its int8 queries
  size_t entries_weights;  // floats: where decode's int8 V weights start in that area (0: none)
  int64_t scores_stride;
  int32_t query_block_tokens;
  Sizes(const Model& model, int32_t n_batch, int32_t n_ctx, TensorType kv_type_v, int max_threads) {
    const HParams& hp = model.hparams();
    const int64_t B = n_batch;
    x = float_bytes(B * hp.n_embd);
    xn = float_bytes(B * std::max(hp.n_embd, hp.n_embd_q()));
    q = attn = float_bytes(B * hp.n_embd_q());
    k = v = float_bytes(B * hp.n_embd_kv());
    const int64_t ffn_tokens = std::min<int64_t>(B, ffn_slice_tokens(model));
    gate = up = float_bytes(ffn_tokens * hp.n_ff);
    const QuantizedInputBytes qb = quantized_input_bytes_per_token(model);
    xq = std::max(static_cast<size_t>(B) * qb.attention, static_cast<size_t>(ffn_tokens) * qb.ffn);
    xt = tiled_input_bytes(model, B, ffn_tokens);
    rope = float_bytes(B * hp.n_rot / 2);
    // Attention scratch of one thread: the scores [g, n_ctx] of its query heads, rounded to 16
    // floats (64 bytes) so each thread's area is aligned. K/V blocks are read in place in their
    // cache type (kernels/attention.h) and the output accumulates in attn, so the KV block size
    // no longer matters here.
    // Prefill query blocks (attention_blocks) need scores for up to query_block_tokens x g queries
    // plus their queries / outputs and one widened K/V tile.
    const int64_t g = hp.n_gqa();
    scores_stride = (static_cast<int64_t>(n_ctx) + 15) / 16 * 16;
    query_block_tokens = prefill_block_tokens(g, scores_stride, n_batch);
    // Decode with Q8_0 / Q4_0 K also keeps its g query heads quantized to int8 after the scores
    // (kernels::QueryBlockQ8, 40 bytes per 32 dims).
    entries_scores = static_cast<size_t>((g * n_ctx + 15) / 16 * 16);
    const size_t query_q8 = static_cast<size_t>((g * (hp.head_dim / 32) * 10 + 15) / 16 * 16);
    // Q4_0 V: the int8 weights of the V sum for kWeightedRows rows (kernels/attention.h), after
    // the int8 queries. Sized whether or not this ISA has the kernel, so the memory plan does not
    // depend on the CPU.
    const bool weighted = kv_type_v == TensorType::Q4_0 && hp.head_dim % 32 == 0;
    entries_weights = weighted ? entries_scores + query_q8 : 0;
    const size_t weights =
        weighted ? static_cast<size_t>((kernels::value_weights_bytes(kWeightedRows, g, hp.head_dim) / 4 + 15) / 16 * 16)
                 : 0;
    const size_t entries_area = entries_scores + query_q8 + weights;
    const size_t blocks_area =
        query_block_tokens >= 2 ? block_scratch(g, hp.head_dim, scores_stride, query_block_tokens).total : 0;
    attn_per_thread = std::max(entries_area, blocks_area);
    scores = static_cast<size_t>(std::max(1, max_threads)) * attn_per_thread * sizeof(float);
    out_rows = static_cast<size_t>(B) * sizeof(int32_t);
    query_blocks = static_cast<size_t>(std::max<int64_t>(1, B)) * sizeof(QueryBlock);
  }
  size_t total() const {
    return x + xn + q + k + v + attn + gate + up + xq + xt + 2 * rope + scores + out_rows + query_blocks;
  }
};

int32_t ForwardPass::ffn_slice_tokens(const Model& model) {
  if (model.n_layer() == 0) return kFfnTokens;
  const WeightView& gate = model.layer(0).ffn_gate;
  return kernels::tiled_activation_bytes(gate.type, gate.n_in, kFfnTokensTiled) > 0 ? kFfnTokensTiled : kFfnTokens;
}

int32_t ForwardPass::prefill_block_tokens(int64_t g, int64_t scores_stride, int32_t n_batch) {
  const int64_t per_token = g * scores_stride * static_cast<int64_t>(sizeof(float));
  const int64_t fit = static_cast<int64_t>(kBlockScoresBudget) / std::max<int64_t>(1, per_token);
  return static_cast<int32_t>(std::clamp<int64_t>(fit, 1, std::min<int64_t>(kMaxBlockTokens, std::max(1, n_batch))));
}

ForwardPass::BlockScratch ForwardPass::block_scratch(int64_t g, int64_t hd, int64_t scores_stride,
                                                     int32_t query_block_tokens) {
  const auto round16 = [](int64_t n) { return static_cast<size_t>((n + 15) / 16 * 16); };
  BlockScratch s{};
  s.queries = round16(query_block_tokens * g * scores_stride);
  s.tile = s.queries + round16(query_block_tokens * g * hd);
  s.total = s.tile + round16(hd * kAttnTileRows);
  return s;
}

size_t ForwardPass::scratch_bytes(const Model& model, int32_t n_batch, int32_t n_ctx, TensorType kv_type_v,
                                  int max_threads) {
  return Sizes(model, n_batch, n_ctx, kv_type_v, max_threads).total();
}

ForwardPass::ForwardPass(const Model& model, int32_t n_batch, int32_t n_ctx, TensorType kv_type_v, int max_threads)
    : model_(model), hp_(model.hparams()), n_batch_(n_batch), n_ctx_(n_ctx), max_threads_(std::max(1, max_threads)),
      ffn_tokens_(ffn_slice_tokens(model)) {
  const Sizes sz(model, n_batch, n_ctx, kv_type_v, max_threads_);
  attn_scratch_floats_ = sz.attn_per_thread;
  entries_scores_floats_ = sz.entries_scores;
  entries_weights_floats_ = sz.entries_weights;
  scores_stride_ = sz.scores_stride;
  query_block_tokens_ = sz.query_block_tokens;
  blocks_.reserve(static_cast<size_t>(std::max(1, n_batch)));
  x_ = AlignedBuffer(sz.x, "the residual stream");
  xn_ = AlignedBuffer(sz.xn, "normed activations");
  q_ = AlignedBuffer(sz.q, "queries");
  k_ = AlignedBuffer(sz.k, "keys");
  v_ = AlignedBuffer(sz.v, "values");
  attn_ = AlignedBuffer(sz.attn, "attention output");
  gate_ = AlignedBuffer(sz.gate, "ffn gate");
  up_ = AlignedBuffer(sz.up, "ffn up");
  xq_ = AlignedBuffer(sz.xq, "quantized matmul inputs");
  xt_ = AlignedBuffer(sz.xt, "tiled matmul inputs", AlignedBuffer::Uninitialized{});
  cos_ = AlignedBuffer(sz.rope, "rope cos table");
  sin_ = AlignedBuffer(sz.rope, "rope sin table");
  scores_ = AlignedBuffer(sz.scores, "attention scores");
  out_rows_.reserve(static_cast<size_t>(n_batch));
}

size_t ForwardPass::allocated_bytes() const {
  return x_.size() + xn_.size() + q_.size() + k_.size() + v_.size() + attn_.size() + gate_.size() + up_.size() +
         xq_.size() + xt_.size() + cos_.size() + sin_.size() + scores_.size() + out_rows_.capacity() * sizeof(int32_t) +
         blocks_.capacity() * sizeof(QueryBlock);
}

template <typename Fn>
void ForwardPass::for_entries(int32_t n, Fn&& fn) {
  if (n < kParallelRowsMin || n_threads_ == 1) {
    for (int32_t i = 0; i < n; ++i) fn(i);
    return;
  }
  pool_->parallel_for(n, [&](int64_t i, int) { fn(static_cast<int32_t>(i)); }, n_threads_);
}

void ForwardPass::matmuls(const MatmulJob* jobs, int n_jobs, int32_t n_tokens) {
  if (observer_ != nullptr) {
    for (int j = 0; j < n_jobs; ++j) observer_->on_matmul_input(jobs[j].w->name, jobs[j].x, n_tokens, jobs[j].w->n_in);
  }
  run_matmul_group(jobs, n_jobs, n_tokens, xq_, xt_, *pool_, n_threads_);
}

void ForwardPass::rope_tables(const BatchEntry* entries, int32_t n) {
  const int32_t half = hp_.n_rot / 2;
  const float* ff = model_.rope_freqs().data;
  for (int32_t e = 0; e < n; ++e) {
    rope_angles(hp_, ff, static_cast<float>(entries[e].pos), cos_.as<float>() + e * half, sin_.as<float>() + e * half);
  }
}

void ForwardPass::apply_rope(float* h, int32_t entry) const {
  const int32_t half = hp_.n_rot / 2;
  rope_rotate(hp_.rope_style, hp_.n_rot, cos_.as<float>() + entry * half, sin_.as<float>() + entry * half, h);
}

void ForwardPass::run(const BatchEntry* entries, int32_t n, KvCache& kv, ThreadPool& pool, int n_threads,
                      const AbortCheck& abort, MatmulObserver* observer, float* logits, bool hidden_out,
                      bool stepwise) {
  if (n <= 0) return;
  if (n > n_batch_) throw Error(ErrorCode::kInternal, "forward: chunk larger than n_batch");
  pool_ = &pool;
  observer_ = observer;
  n_threads_ = std::clamp(n_threads, 1, std::min(max_threads_, pool.max_threads()));

  const int64_t E = hp_.n_embd, Q = hp_.n_embd_q(), KV = hp_.n_embd_kv(), F = hp_.n_ff, hd = hp_.head_dim;
  float* x = x_.as<float>();
  float* xn = xn_.as<float>();
  float* q = q_.as<float>();
  float* k = k_.as<float>();
  float* v = v_.as<float>();
  float* attn = attn_.as<float>();
  float* gate = gate_.as<float>();
  float* up = up_.as<float>();
  const float eps = hp_.rms_eps;

  // Embeddings: dequantized rows of token_embd ([n_vocab rows, n_embd]).
  const WeightView& emb = model_.token_embd();
  // A tied head repacked at load serves the lookups too (model_repack.cpp): one row gathered
  // from its 16-row group.
  for_entries(n, [&](int32_t e) {
    if (kernels::is_packed_type(emb.type)) {
      kernels::dequantize_packed_row(emb.type, emb.data, E, entries[e].token, x + e * E);
    } else {
      kernels::dequantize_row(emb.type, emb.row(entries[e].token), x + e * E, E);
    }
  });
  rope_tables(entries, n);
  plan_query_blocks(entries, n, stepwise);

  for (int il = 0; il < hp_.n_layer; ++il) {
    if (abort()) throw Error(ErrorCode::kCancelled, "forward pass aborted before layer " + std::to_string(il));
    const LayerWeights& L = model_.layer(il);
    for_entries(n, [&](int32_t e) { kernels::rms_norm(x + e * E, L.attn_norm.data, xn + e * E, E, eps); });
    const MatmulJob qkv[3] = {{&L.wq, xn, q}, {&L.wk, xn, k}, {&L.wv, xn, v}};
    matmuls(qkv, 3, n);

    for_entries(n, [&](int32_t e) {
      float* qe = q + e * Q;
      float* ke = k + e * KV;
      float* ve = v + e * KV;
      if (L.bq.present()) {
        kernels::add_f32(qe, L.bq.data, qe, Q);
        kernels::add_f32(ke, L.bk.data, ke, KV);
        kernels::add_f32(ve, L.bv.data, ve, KV);
      }
      for (int32_t h = 0; h < hp_.n_head; ++h) {
        float* qh = qe + h * hd;
        if (L.q_norm.present()) kernels::rms_norm(qh, L.q_norm.data, qh, hd, eps);
        apply_rope(qh, e);
      }
      for (int32_t h = 0; h < hp_.n_head_kv; ++h) {
        float* kh = ke + h * hd;
        if (L.k_norm.present()) kernels::rms_norm(kh, L.k_norm.data, kh, hd, eps);
        apply_rope(kh, e);
        kv.store_k_row(kh, kv.k_row(entries[e].seq_id, il, h, entries[e].pos));
        kv.store_v_row(ve + h * hd, kv.v_row(entries[e].seq_id, il, h, entries[e].pos));
      }
    });

    attention(entries, n, il, kv);

    const MatmulJob wo[1] = {{&L.wo, attn, xn}};
    matmuls(wo, 1, n);
    for_entries(n, [&](int32_t e) {
      kernels::add_f32(x + e * E, xn + e * E, x + e * E, E);
      kernels::rms_norm(x + e * E, L.ffn_norm.data, xn + e * E, E, eps);
    });
    // The FFN in slices of ffn_tokens_ tokens (forward.h): gate and up hold one slice. Each
    // slice's down projection overwrites only its own rows of xn, already consumed.
    for (int32_t t0 = 0; t0 < n; t0 += ffn_tokens_) {
      const int32_t m = std::min(ffn_tokens_, n - t0);
      float* xs = xn + static_cast<int64_t>(t0) * E;
      const MatmulJob gu[2] = {{&L.ffn_gate, xs, gate}, {&L.ffn_up, xs, up}};
      matmuls(gu, 2, m);
      for_entries(m, [&](int32_t e) { kernels::silu_mul(gate + e * F, up + e * F, gate + e * F, F); });
      const MatmulJob down[1] = {{&L.ffn_down, gate, xs}};
      matmuls(down, 1, m);
    }
    for_entries(n, [&](int32_t e) { kernels::add_f32(x + e * E, xn + e * E, x + e * E, E); });
  }

  // Output head only for the entries that want logits, gathered into consecutive rows.
  out_rows_.clear();
  for (int32_t e = 0; e < n; ++e) {
    if (entries[e].want_logits) out_rows_.push_back(e);
  }
  if (!out_rows_.empty()) {
    const int32_t n_out = static_cast<int32_t>(out_rows_.size());
    float* normed = hidden_out ? logits : xn;
    for_entries(n_out, [&](int32_t j) {
      kernels::rms_norm(x + out_rows_[static_cast<size_t>(j)] * E, model_.output_norm().data, normed + j * E, E, eps);
    });
    if (!hidden_out) {
      const MatmulJob head[1] = {{&model_.output(), xn, logits}};
      matmuls(head, 1, n_out);
    }
  }
  pool_ = nullptr;
  observer_ = nullptr;
}

}  // namespace edgellm
