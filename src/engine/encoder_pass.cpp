#include "engine/encoder_pass.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/error.h"
#include "engine/encoder_ops.h"
#include "engine/matmul_group.h"
#include "engine/row_parallel.h"
#include "kernels/kernels.h"
#include "platform/thread_pool.h"

namespace edgellm {

namespace {

size_t round16(size_t n) {
  return (n + 15) / 16 * 16;
}

void add_bias(float* y, const VectorView& b, int64_t n) {
  if (b.present()) kernels::add_f32(y, b.data, y, n);
}

}  // namespace

struct EncoderPass::Sizes {
  size_t x, q, kv, up, xq, xt, scratch, row;
  size_t attn_per_thread;  // floats
  Sizes(const Model& model, int32_t max_tokens, int32_t max_seq, int max_threads) {
    const HParams& hp = model.hparams();
    const int64_t T = std::max(1, max_tokens);
    x = float_bytes(T * hp.n_embd);
    q = float_bytes(T * hp.n_embd_q());
    kv = float_bytes(T * hp.n_embd_kv());
    const int64_t ffn_tokens = std::min<int64_t>(T, kFfnTokens);
    up = float_bytes(ffn_tokens * hp.n_ff);
    size_t attn_in = 0, ffn_in = 0, tiled = 0;
    for (int il = 0; il < model.n_layer(); ++il) {
      const LayerWeights& L = model.layer(il);
      attn_in = std::max(
          {attn_in,
           3 * std::max({matmul_input_row_bytes(L.wq), matmul_input_row_bytes(L.wk), matmul_input_row_bytes(L.wv)}),
           matmul_input_row_bytes(L.wo)});
      ffn_in = std::max({ffn_in, matmul_input_row_bytes(L.ffn_up), matmul_input_row_bytes(L.ffn_down)});
      tiled = std::max({tiled, tiled_group_bytes({&L.wq, &L.wk, &L.wv}, T), tiled_group_bytes({&L.wo}, T),
                        tiled_group_bytes({&L.ffn_up}, ffn_tokens), tiled_group_bytes({&L.ffn_down}, ffn_tokens)});
    }
    xq = std::max(static_cast<size_t>(T) * attn_in, static_cast<size_t>(ffn_tokens) * ffn_in);
    xt = tiled;
    // Per thread: K^T [hd, max_seq], then the scores [kQueryRows, max_seq], each 64-byte aligned.
    const int64_t seq = std::max(1, max_seq);
    attn_per_thread = round16(static_cast<size_t>(hp.head_dim * seq)) + round16(static_cast<size_t>(kQueryRows * seq));
    scratch = static_cast<size_t>(std::max(1, max_threads)) * attn_per_thread * sizeof(float);
    row = static_cast<size_t>(std::max(1, max_threads)) * round16(static_cast<size_t>(hp.n_embd)) * sizeof(float);
  }
  size_t total() const { return 2 * x + 2 * q + 2 * kv + up + xq + xt + scratch + row; }
};

size_t EncoderPass::scratch_bytes(const Model& model, int32_t max_tokens, int32_t max_seq, int max_threads) {
  return Sizes(model, max_tokens, max_seq, max_threads).total();
}

EncoderPass::EncoderPass(const Model& model, int32_t max_tokens, int32_t max_seq, int max_threads)
    : model_(model),
      hp_(model.hparams()),
      n_embd_(model.hparams().n_embd),
      max_tokens_(max_tokens),
      max_seq_(max_seq),
      max_threads_(std::max(1, max_threads)) {
  require(hp_.encoder, ErrorCode::kInvalidArgument,
          "EncoderPass: " + hp_.arch + " is not an encoder architecture (decoders run in a Context)");
  require(max_seq >= 1 && max_seq <= hp_.n_ctx_train, ErrorCode::kInvalidArgument,
          "encoder: the longest input (" + std::to_string(max_seq) + " tokens) must be in [1, " +
              std::to_string(hp_.n_ctx_train) + "], the model's positions");
  require(max_tokens >= max_seq, ErrorCode::kInvalidArgument,
          "encoder: tokens per forward (" + std::to_string(max_tokens) + ") must hold the longest input (" +
              std::to_string(max_seq) + "): an encoder sees a whole sequence at once");
  const Sizes sz(model, max_tokens, max_seq, max_threads_);
  attn_scratch_floats_ = sz.attn_per_thread;
  x_ = AlignedBuffer(sz.x, "encoder residual stream");
  xn_ = AlignedBuffer(sz.x, "encoder projection outputs");
  q_ = AlignedBuffer(sz.q, "encoder queries");
  k_ = AlignedBuffer(sz.kv, "encoder keys");
  v_ = AlignedBuffer(sz.kv, "encoder values");
  attn_ = AlignedBuffer(sz.q, "encoder attention output");
  up_ = AlignedBuffer(sz.up, "encoder ffn up");
  xq_ = AlignedBuffer(sz.xq, "encoder quantized matmul inputs");
  xt_ = AlignedBuffer(sz.xt, "encoder tiled matmul inputs", AlignedBuffer::Uninitialized{});
  scratch_ = AlignedBuffer(sz.scratch, "encoder attention scratch");
  row_ = AlignedBuffer(sz.row, "encoder embedding rows");
  seq_tasks_.reserve(static_cast<size_t>(std::max(1, max_tokens)));  // at most one sequence per token
}

size_t EncoderPass::allocated_bytes() const {
  return x_.size() + xn_.size() + q_.size() + k_.size() + v_.size() + attn_.size() + up_.size() + xq_.size() +
         xt_.size() + scratch_.size() + row_.size();
}

template <typename Fn>
void EncoderPass::for_tokens(int32_t n, Fn&& fn) {
  if (n < kParallelRowsMin || n_threads_ == 1) {
    for (int32_t i = 0; i < n; ++i) fn(i, 0);
    return;
  }
  pool_->parallel_for(
      n, [&](int64_t i, int thread) { fn(static_cast<int32_t>(i), thread); }, n_threads_);
}

void EncoderPass::embed(const EncoderSequence* seqs, int32_t n_seqs) {
  const int64_t E = n_embd_;
  const WeightView& tok = model_.token_embd();
  const WeightView& pos = model_.position_embd();
  const WeightView& types = model_.token_types();
  const size_t row_stride = round16(static_cast<size_t>(E));
  float* x = x_.as<float>();
  int32_t t0 = 0;
  for (int32_t s = 0; s < n_seqs; ++s) {
    const EncoderSequence& seq = seqs[s];
    for_tokens(seq.n, [&](int32_t i, int thread) {
      float* xt = x + static_cast<int64_t>(t0 + i) * E;
      float* row = row_.as<float>() + static_cast<size_t>(thread) * row_stride;
      kernels::dequantize_row(tok.type, tok.row(seq.tokens[i]), xt, E);
      if (types.present()) {
        kernels::dequantize_row(types.type, types.row(seq.types ? seq.types[i] : 0), row, E);
        kernels::add_f32(xt, row, xt, E);
      }
      kernels::dequantize_row(pos.type, pos.row(i), row, E);
      kernels::add_f32(xt, row, xt, E);
      layer_norm(xt, model_.embd_norm().data, model_.embd_norm_b().data, xt, E, hp_.norm_eps);
    });
    t0 += seq.n;
  }
}

void EncoderPass::attention(const EncoderSequence* seqs, int32_t n_seqs) {
  const int64_t hd = hp_.head_dim, Q = hp_.n_embd_q(), KV = hp_.n_embd_kv();
  const int32_t n_head = hp_.n_head, g = hp_.n_gqa();
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  // Tasks: (sequence, head, block of kQueryRows queries), sequence by sequence; seq_tasks_[s]
  // holds where sequence s starts, in tokens and in tasks.
  seq_tasks_.clear();
  int64_t n_tasks = 0;
  int32_t t = 0;
  for (int32_t s = 0; s < n_seqs; ++s) {
    const int32_t blocks = (seqs[s].n + kQueryRows - 1) / kQueryRows;
    seq_tasks_.push_back({t, seqs[s].n, blocks, n_tasks});
    n_tasks += static_cast<int64_t>(blocks) * n_head;
    t += seqs[s].n;
  }
  const float* q = q_.as<float>();
  const float* k = k_.as<float>();
  const float* v = v_.as<float>();
  float* attn = attn_.as<float>();
  auto task = [&](int64_t task_id, int thread) {
    const auto it = std::upper_bound(seq_tasks_.begin(), seq_tasks_.end(), task_id,
                                     [](int64_t id, const SeqTasks& st) { return id < st.first_task; });
    const SeqTasks& st = *(it - 1);
    const int64_t local = task_id - st.first_task;
    const int32_t h = static_cast<int32_t>(local / st.blocks);
    const int32_t q0 = static_cast<int32_t>(local % st.blocks) * kQueryRows;
    const int32_t m = std::min(kQueryRows, st.n - q0);
    const int32_t len = st.n;
    const int64_t hkv = h / g;
    float* area = scratch_.as<float>() + static_cast<size_t>(thread) * attn_scratch_floats_;
    float* kt = area;                                                    // K^T [hd, len]
    float* scores = area + round16(static_cast<size_t>(hd * max_seq_));  // [m, len]
    // K^T of this KV head over the sequence: column j is key j.
    for (int32_t j = 0; j < len; ++j) {
      const float* kj = k + static_cast<int64_t>(st.t0 + j) * KV + hkv * hd;
      for (int64_t d = 0; d < hd; ++d) kt[d * len + j] = kj[d];
    }
    const float* qh = q + static_cast<int64_t>(st.t0 + q0) * Q + static_cast<int64_t>(h) * hd;
    kernels::gemm_f32(m, len, hd, scale, qh, Q, kt, len, false, scores, len);
    for (int32_t r = 0; r < m; ++r) kernels::softmax(scores + static_cast<int64_t>(r) * len, len);
    const float* vh = v + static_cast<int64_t>(st.t0) * KV + hkv * hd;
    float* out = attn + static_cast<int64_t>(st.t0 + q0) * Q + static_cast<int64_t>(h) * hd;
    kernels::gemm_f32(m, hd, len, 1.0f, scores, len, vh, KV, false, out, Q);
  };
  if (n_threads_ == 1) {
    for (int64_t i = 0; i < n_tasks; ++i) task(i, 0);
  } else {
    pool_->parallel_for(n_tasks, task, n_threads_);
  }
}

void EncoderPass::run(const EncoderSequence* seqs, int32_t n_seqs, ThreadPool& pool, int n_threads,
                      const AbortCheck& abort) {
  // Validate everything before computing anything.
  int64_t total = 0;
  for (int32_t s = 0; s < n_seqs; ++s) {
    const EncoderSequence& seq = seqs[s];
    require(seq.n >= 1 && seq.tokens != nullptr, ErrorCode::kInvalidArgument,
            "encoder: input " + std::to_string(s) + " has no tokens");
    require(seq.n <= max_seq_, ErrorCode::kInvalidArgument, [&] {
      return "encoder: input " + std::to_string(s) + " has " + std::to_string(seq.n) + " tokens, more than the " +
             std::to_string(max_seq_) + " this encoder takes";
    });
    for (int32_t i = 0; i < seq.n; ++i) {
      require(seq.tokens[i] >= 0 && seq.tokens[i] < hp_.n_vocab, ErrorCode::kInvalidArgument, [&] {
        return "encoder: input " + std::to_string(s) + " token " + std::to_string(i) + ": id " +
               std::to_string(seq.tokens[i]) + " is outside [0, " + std::to_string(hp_.n_vocab) + ")";
      });
      if (seq.types != nullptr) {
        const int32_t n_types = std::max(1, hp_.n_token_types);
        require(seq.types[i] >= 0 && seq.types[i] < n_types, ErrorCode::kInvalidArgument, [&] {
          return "encoder: input " + std::to_string(s) + " token " + std::to_string(i) + ": token type " +
                 std::to_string(seq.types[i]) + " is outside [0, " + std::to_string(n_types) + ")";
        });
      }
    }
    total += seq.n;
  }
  require(total <= max_tokens_, ErrorCode::kInvalidArgument, [&] {
    return "encoder: " + std::to_string(total) + " tokens in one forward, more than " + std::to_string(max_tokens_);
  });
  if (total == 0) return;
  const auto n = static_cast<int32_t>(total);
  pool_ = &pool;
  n_threads_ = std::clamp(n_threads, 1, std::min(max_threads_, pool.max_threads()));
  const int64_t E = n_embd_, Q = hp_.n_embd_q(), KV = hp_.n_embd_kv(), F = hp_.n_ff;
  float* x = x_.as<float>();
  float* xn = xn_.as<float>();
  float* q = q_.as<float>();
  float* k = k_.as<float>();
  float* v = v_.as<float>();
  float* up = up_.as<float>();
  const float eps = hp_.norm_eps;

  embed(seqs, n_seqs);
  for (int il = 0; il < hp_.n_layer; ++il) {
    if (abort()) {
      pool_ = nullptr;
      throw Error(ErrorCode::kCancelled, "encoder pass aborted before layer " + std::to_string(il));
    }
    const LayerWeights& L = model_.layer(il);
    const MatmulJob qkv[3] = {{&L.wq, x, q}, {&L.wk, x, k}, {&L.wv, x, v}};
    run_matmul_group(qkv, 3, n, xq_, xt_, pool, n_threads_);
    for_tokens(n, [&](int32_t t, int) {
      add_bias(q + t * Q, L.bq, Q);
      add_bias(k + t * KV, L.bk, KV);
      add_bias(v + t * KV, L.bv, KV);
    });
    attention(seqs, n_seqs);

    const MatmulJob wo[1] = {{&L.wo, attn_.as<float>(), xn}};
    run_matmul_group(wo, 1, n, xq_, xt_, pool, n_threads_);
    for_tokens(n, [&](int32_t t, int) {
      float* xt = x + t * E;
      float* yt = xn + t * E;
      add_bias(yt, L.bo, E);
      kernels::add_f32(yt, xt, yt, E);
      layer_norm(yt, L.attn_out_norm.data, L.attn_out_norm_b.data, xt, E, eps);
    });
    // The FFN in slices of kFfnTokens tokens: up holds one slice. Each slice reads its rows of x
    // and writes them back only after its down projection.
    for (int32_t t0 = 0; t0 < n; t0 += kFfnTokens) {
      const int32_t m = std::min(kFfnTokens, n - t0);
      float* xs = x + static_cast<int64_t>(t0) * E;
      float* ys = xn + static_cast<int64_t>(t0) * E;
      const MatmulJob u[1] = {{&L.ffn_up, xs, up}};
      run_matmul_group(u, 1, m, xq_, xt_, pool, n_threads_);
      for_tokens(m, [&](int32_t t, int) {
        float* ut = up + t * F;
        add_bias(ut, L.ffn_up_b, F);
        gelu_erf(ut, F);
      });
      const MatmulJob d[1] = {{&L.ffn_down, up, ys}};
      run_matmul_group(d, 1, m, xq_, xt_, pool, n_threads_);
      for_tokens(m, [&](int32_t t, int) {
        float* xt = xs + t * E;
        float* yt = ys + t * E;
        add_bias(yt, L.ffn_down_b, E);
        kernels::add_f32(yt, xt, yt, E);
        layer_norm(yt, L.layer_out_norm.data, L.layer_out_norm_b.data, xt, E, eps);
      });
    }
  }
  pool_ = nullptr;
}

}  // namespace edgellm
