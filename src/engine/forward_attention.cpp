// Attention of one layer over the paged KV cache, two ways (forward.h has the pass around it):
//
//  - attention_entries (decode, and chunks without runs of consecutive tokens): one task per
//    (entry, KV head), the g query heads of the GQA group together. K/V rows are read in place in
//    the cache type by the attention kernels (kernels/attention.h), which widen each row once for
//    all g heads. Q4_0 V is summed with int8 weights where the ISA has that kernel (AVX-512 VNNI
//    with VBMI: 64 multiply-adds per instruction on the codes as bytes, against 16 F32 FMAs;
//    the F32 sum bounded decode at depth).
//  - attention_blocks (prefill): one task per (query block, KV head), where a query block is up to
//    query_block_tokens_ consecutive positions of one sequence. Its nq = tokens x g queries meet every
//    K/V tile of kAttnTileRows positions at once, as two F32 GEMMs (kernels::gemm_f32):
//      scores [nq, n_pos] = scale * Q [nq, hd] . K^T [hd, n_pos]
//      out    [nq, hd]    = P [nq, n_pos] . V [n_pos, hd]       (P = causal row-wise softmax)
//    Why: per query and K row the entry-wise kernel spends as many shuffles and conversions as
//    FMAs (each 16-row tile is widened and transposed for only g queries); here one widened tile
//    serves up to 16 x g queries, so the work is FMAs from L1. Causality: query (token t, pos p)
//    takes the softmax of its first p + 1 scores (the scores GEMM computes the block's later
//    positions too, unread); P . V runs the positions all tokens see as one GEMM per tile and
//    the block's own later positions token by token.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/forward.h"
#include "engine/row_parallel.h"
#include "kernels/attention.h"
#include "kernels/kernels.h"
#include "kv/kv_cache.h"
#include "platform/thread_pool.h"

namespace edgellm {

namespace {

}  // namespace

void ForwardPass::plan_query_blocks(const BatchEntry* entries, int32_t n, bool stepwise) {
  blocks_.clear();
  for (int32_t e = 0; e < n; ++e) {
    if (!blocks_.empty()) {
      QueryBlock& b = blocks_.back();
      const BatchEntry& last = entries[b.first + b.count - 1];
      if (entries[e].seq_id == last.seq_id && entries[e].pos == last.pos + 1 && b.count < query_block_tokens_) {
        ++b.count;
        continue;
      }
    }
    blocks_.push_back({e, 1});
  }
  // Blocks pay a widened tile per kAttnTileRows positions: worth it from 2 tokens per block on
  // average (a prompt chunk), not for a batch of single-token decode steps.
  // A stepwise batch (Batch::set_stepwise) keeps the decode arithmetic.
  use_blocks_ = !stepwise && query_block_tokens_ >= 2 && n >= 2 * static_cast<int32_t>(blocks_.size());
}

void ForwardPass::attention(const BatchEntry* entries, int32_t n, int layer, const KvCache& kv) {
  if (use_blocks_) {
    attention_blocks(entries, layer, kv);
  } else {
    attention_entries(entries, n, layer, kv);
  }
}

void ForwardPass::attention_blocks(const BatchEntry* entries, int layer, const KvCache& kv) {
  const int32_t hd = hp_.head_dim, n_q = hp_.n_embd_q(), g = hp_.n_gqa(), n_kv = hp_.n_head_kv;
  const int32_t T = kv.params().block_tokens;
  const size_t k_row_bytes = kv.k_row_bytes(), v_row_bytes = kv.v_row_bytes();
  const TensorType v_type = kv.params().type_v;
  const kernels::AttentionKernels k_kern = kernels::attention_kernels(kv.params().type_k, hd);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const int64_t ss = scores_stride_;
  const BlockScratch layout = block_scratch(g, hd, ss, query_block_tokens_);
  static_assert(kMaxBlockTokens <= kAttnTileRows, "a block's own later positions fit one V tile");

  auto task = [&](int64_t t, int thread) {
    const QueryBlock& qb = blocks_[static_cast<size_t>(t / n_kv)];
    const int32_t hkv = static_cast<int32_t>(t % n_kv);
    const BatchEntry& first = entries[qb.first];
    const std::vector<int32_t>& table = kv.block_table(first.seq_id);
    const int64_t nq = static_cast<int64_t>(qb.count) * g;
    const int32_t n_pos = first.pos + qb.count;  // positions 0 .. the block's last
    float* area = scores_.as<float>() + static_cast<size_t>(thread) * attn_scratch_floats_;
    float* scores = area;                  // [nq, ss]
    float* qo = area + layout.queries;     // [nq, hd]: the queries, then the outputs
    float* tile = area + layout.tile;      // K^T [hd, kAttnTileRows] or V [kAttnTileRows, hd]

    // Query i = token c x g + head j of this KV head's group.
    for (int32_t c = 0; c < qb.count; ++c) {
      std::memcpy(qo + static_cast<int64_t>(c) * g * hd,
                  q_.as<float>() + static_cast<int64_t>(qb.first + c) * n_q + static_cast<int64_t>(hkv) * g * hd,
                  float_bytes(static_cast<int64_t>(g) * hd));
    }
    // fn(rows, s, m): rows s .. s+m-1 of the tile [s0, s0 + cnt), m <= the rest of one KV block.
    const auto for_block_pieces = [&](int32_t s0, int32_t cnt, bool values, auto&& fn) {
      for (int32_t s = s0; s < s0 + cnt;) {
        const int32_t b = s / T, off = s % T;
        const int32_t m = std::min(T - off, s0 + cnt - s);
        const int32_t id = table[static_cast<size_t>(b)];
        const uint8_t* rows = values ? kv.v_rows(id, layer, hkv) : kv.k_rows(id, layer, hkv);
        fn(rows + static_cast<size_t>(off) * (values ? v_row_bytes : k_row_bytes), s, m);
        s += m;
      }
    };

    // scores = scale * Q . K^T, one tile of positions at a time.
    for (int32_t s0 = 0; s0 < n_pos; s0 += kAttnTileRows) {
      const int32_t cnt = std::min<int32_t>(kAttnTileRows, n_pos - s0);
      for_block_pieces(s0, cnt, false, [&](const uint8_t* rows, int32_t s, int32_t m) {
        k_kern.widen_transposed(rows, k_row_bytes, m, hd, tile + (s - s0), kAttnTileRows);
      });
      kernels::gemm_f32(nq, cnt, hd, scale, qo, hd, tile, kAttnTileRows, false, scores + s0, ss);
    }
    // Causal softmax: token c sees positions 0 .. first.pos + c (its later scores are never read).
    for (int32_t c = 0; c < qb.count; ++c) {
      for (int32_t j = 0; j < g; ++j)
        kernels::softmax(scores + (static_cast<int64_t>(c) * g + j) * ss, first.pos + c + 1);
    }
    // out = P . V, accumulated into qo (the queries are no longer needed): the positions every
    // token of the block sees (0 .. first.pos) as one GEMM per tile for all nq queries, then the
    // block's later positions (at most count - 1) token by token over its own positions only, so
    // a V row a query must not see never meets it (not even as 0 x inf). gemm_f32 continues each
    // element's FMA chain from C, so every query's sum is one chain over its positions in order
    // however they are split: prompt chunking does not change the result.
    // A piece's rows are contiguous (the cache's V row is one packed row of hd values), so one
    // dequantize_row call widens them all.
    const auto widen_values = [&](int32_t s0, int32_t cnt) {
      for_block_pieces(s0, cnt, true, [&](const uint8_t* rows, int32_t s, int32_t m) {
        kernels::dequantize_row(v_type, rows, tile + static_cast<int64_t>(s - s0) * hd, static_cast<int64_t>(m) * hd);
      });
    };
    std::memset(qo, 0, float_bytes(nq * hd));
    const int32_t shared = first.pos + 1;
    for (int32_t s0 = 0; s0 < shared; s0 += kAttnTileRows) {
      const int32_t cnt = std::min<int32_t>(kAttnTileRows, shared - s0);
      widen_values(s0, cnt);
      kernels::gemm_f32(nq, hd, cnt, 1.0f, scores + s0, ss, tile, hd, true, qo, hd);
    }
    if (qb.count > 1) {
      widen_values(shared, qb.count - 1);       // < kMaxBlockTokens <= kAttnTileRows rows
      for (int32_t c = 1; c < qb.count; ++c) {  // token c's positions shared .. shared + c - 1
        kernels::gemm_f32(g, hd, c, 1.0f, scores + static_cast<int64_t>(c) * g * ss + shared, ss, tile, hd, true,
                          qo + static_cast<int64_t>(c) * g * hd, hd);
      }
    }
    for (int32_t c = 0; c < qb.count; ++c) {
      std::memcpy(attn_.as<float>() + static_cast<int64_t>(qb.first + c) * n_q + static_cast<int64_t>(hkv) * g * hd,
                  qo + static_cast<int64_t>(c) * g * hd, float_bytes(static_cast<int64_t>(g) * hd));
    }
  };
  pool_->parallel_for(static_cast<int64_t>(blocks_.size()) * n_kv, task, n_threads_);
}

void ForwardPass::attention_entries(const BatchEntry* entries, int32_t n, int layer, const KvCache& kv) {
  const int32_t hd = hp_.head_dim, n_q = hp_.n_embd_q(), g = hp_.n_gqa();
  const int32_t T = kv.params().block_tokens;
  const size_t k_row_bytes = kv.k_row_bytes(), v_row_bytes = kv.v_row_bytes();
  // Kernels that read the K and the V rows in their cache types (F32/F16/Q8_0/Q4_0) in place,
  // resolved once.
  const kernels::AttentionKernels k_kern = kernels::attention_kernels(kv.params().type_k, hd);
  const kernels::AttentionKernels v_kern = kernels::attention_kernels(kv.params().type_v, hd);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  // Q8_0 / Q4_0 K: the scores as integer dot products against the query quantized to int8 once
  // per task (kernels/attention.h; where the ISA has them). Every entry that comes this way:
  // decode, and the prompt tokens of chunks that run entry by entry (see above); prompt tokens
  // in query blocks (attention_blocks) keep F32 queries. So with a quantized K cache, a prompt's
  // later-layer KV can differ slightly (query rounding) with how it was chunked.
  const bool int8_scores = k_kern.scores_q8 != nullptr;
  // Q4_0 V: the V sum with int8 weights where the ISA has it (and this pass sized their scratch).
  // Needs whole 16-row tiles inside each KV block (block_tokens a multiple of 16; default 16).
  const bool weighted_values = v_kern.accumulate_weighted != nullptr && entries_weights_floats_ != 0 &&
                               T % kernels::kValueTileRows == 0;
  const int64_t q_blocks = hd / 32;

  // Normally one task per (entry, KV head): the g query heads sharing that KV head go together,
  // so each K/V row is read and widened once for all of them (GQA, kernels/attention.h).
  // A decode step of one sequence has only n_head_kv such tasks: when that is fewer than the
  // threads, the query heads of a group are split over several tasks (each re-reading the
  // blocks) so every thread has work. Split no further than needed: with a prime group size
  // (Qwen2.5: 7) any split falls to one head per task, which reads each block 7 times over.
  int32_t hpt = g;  // query heads per task, a divisor of g
  while (hpt > 1 && static_cast<int64_t>(n) * hp_.n_head / hpt < static_cast<int64_t>(n_threads_)) {
    int32_t d = hpt - 1;
    while (g % d != 0) --d;
    hpt = d;
  }
  const int32_t subgroups = g / hpt;
  auto task = [&](int64_t t, int thread) {
    const int32_t e = static_cast<int32_t>(t / (static_cast<int64_t>(hp_.n_head_kv) * subgroups));
    const int32_t rem = static_cast<int32_t>(t % (static_cast<int64_t>(hp_.n_head_kv) * subgroups));
    const int32_t hkv = rem / subgroups;
    const int32_t h0 = hkv * g + (rem % subgroups) * hpt;  // first query head of this task
    const int32_t n_pos = entries[e].pos + 1;
    const std::vector<int32_t>& table = kv.block_table(entries[e].seq_id);
    const int64_t head_off = static_cast<int64_t>(e) * n_q + static_cast<int64_t>(h0) * hd;
    const float* q = q_.as<float>() + head_off;                                                // [hpt, hd]
    float* scores = scores_.as<float>() + static_cast<size_t>(thread) * attn_scratch_floats_;  // [hpt, n_ctx]
    float* out = attn_.as<float>() + head_off;                                                 // [hpt, hd]

    // Runs of consecutive block ids are consecutive rows in each plane of the cache (kv_cache.h).
    // A run is computed in pieces of kPieceRows rows; before each piece, the rows kAheadBytes
    // further on are prefetched, running on into the next run's first rows where a run ends.
    // Why: the cache is cold (the weights streamed since this layer's last token evict it) and the
    // hardware prefetcher restarts at every 4 KiB page. Qwen2.5-0.5B at 4096 positions, one
    // layer's attention (both threads): 255-300 us with whole blocks side by side and the next
    // block prefetched, 200-208 us with planes and 8 KiB ahead (2, 4, 12, 16 KiB and 32- or
    // 64-row pieces measured slower).
    const int32_t n_blk = (n_pos + T - 1) / T;
    const auto run_end = [&](int32_t b) {  // one past the last block of the run starting at b
      int32_t end = b + 1;
      while (end < n_blk && table[static_cast<size_t>(end)] == table[static_cast<size_t>(end - 1)] + 1) ++end;
      return end;
    };
    // fn(b, end, cnt): each run of blocks [b, end), cnt of its positions in use.
    const auto for_each_run = [&](auto&& fn) {
      for (int32_t b = 0; b < n_blk;) {
        const int32_t end = run_end(b);
        fn(b, end, std::min(end * T, n_pos) - b * T);
        b = end;
      }
    };
    constexpr int32_t kPieceRows = 16;
    constexpr size_t kAheadBytes = 8192;
    const auto for_runs = [&](auto rows_of, size_t row_bytes, auto&& fn) {
      for_each_run([&](int32_t b, int32_t end, int32_t cnt) {
        const uint8_t* base = rows_of(b);
        const size_t run_bytes = static_cast<size_t>(cnt) * row_bytes;
        const uint8_t* next = end < n_blk ? rows_of(end) : nullptr;
        const size_t next_bytes = next ? static_cast<size_t>(std::min(T, n_pos - end * T)) * row_bytes : 0;
        for (int32_t s0 = 0; s0 < cnt; s0 += kPieceRows) {
          const int32_t m = std::min(kPieceRows, cnt - s0);
          const size_t from = static_cast<size_t>(s0) * row_bytes + kAheadBytes;
          const size_t to = from + static_cast<size_t>(m) * row_bytes;
          for (size_t off = from; off < to; off += 64) {
            if (off < run_bytes) {
              __builtin_prefetch(base + off, 0, 3);
            } else if (off - run_bytes < next_bytes) {
              __builtin_prefetch(next + (off - run_bytes), 0, 3);
            }
          }
          fn(base + static_cast<size_t>(s0) * row_bytes, b * T + s0, m);
        }
      });
    };
    auto k_rows = [&](int32_t b) { return kv.k_rows(table[static_cast<size_t>(b)], layer, hkv); };
    auto v_rows = [&](int32_t b) { return kv.v_rows(table[static_cast<size_t>(b)], layer, hkv); };

    // scores[h][p] = scale * q_h . k_p.
    if (int8_scores) {
      // After the scores in this thread's area (Sizes in forward.cpp): [hpt, hd / 32] blocks.
      auto* qq = reinterpret_cast<kernels::QueryBlockQ8*>(scores + entries_scores_floats_);
      for (int32_t h = 0; h < hpt; ++h) kernels::quantize_query(q + static_cast<int64_t>(h) * hd, hd, scale, qq + h * q_blocks);
      for_runs(k_rows, k_row_bytes, [&](const uint8_t* rows, int32_t p0, int32_t cnt) {
        k_kern.scores_q8(rows, k_row_bytes, cnt, hd, qq, q_blocks, hpt, scores + p0, n_ctx_);
      });
    } else {
      for_runs(k_rows, k_row_bytes, [&](const uint8_t* rows, int32_t p0, int32_t cnt) {
        k_kern.scores(rows, k_row_bytes, cnt, hd, q, hd, hpt, scale, scores + p0, n_ctx_);
      });
    }
    for (int32_t h = 0; h < hpt; ++h) kernels::softmax(scores + static_cast<int64_t>(h) * n_ctx_, n_pos);
    // out[h] = sum_p softmax[h][p] * v_p, accumulated run by run.
    std::memset(out, 0, float_bytes(static_cast<int64_t>(hpt) * hd));
    if (weighted_values) {
      // Q4_0 V with int8 weights (kernels/attention.h): the weights of up to kWeightedRows
      // positions, then their sum, so the sum reads weights stored long before (not still in
      // flight) and each call covers many rows. Calls start at multiples of kWeightedRows and the
      // rows go as 16-row tiles, so the kernel's 64-row groups are fixed positions whatever blocks
      // hold them (same result for a sequence however the cache is laid out). value_weights is
      // the first pass over those rows and prefetches them itself.
      auto* w = reinterpret_cast<uint8_t*>(scores + entries_weights_floats_);  // kWeightedRows rows' weights
      static_assert(kWeightedRows % kernels::kValueWeightGroupRows == 0 && kWeightedRows % kernels::kValueTileRows == 0,
                    "calls must start at group and tile boundaries");
      constexpr int32_t kTiles = kWeightedRows / kernels::kValueTileRows;
      const uint8_t* tiles[kTiles];
      for (int32_t p0 = 0; p0 < n_pos; p0 += kWeightedRows) {
        const int32_t m = std::min(kWeightedRows, n_pos - p0);
        for (int32_t t = 0; t * kernels::kValueTileRows < m; ++t) {
          const int32_t pos = p0 + t * static_cast<int32_t>(kernels::kValueTileRows);
          tiles[t] = v_rows(pos / T) + static_cast<size_t>(pos % T) * v_row_bytes;
        }
        v_kern.value_weights(tiles, v_row_bytes, m, hd, scores + p0, n_ctx_, hpt, w);
        v_kern.accumulate_weighted(tiles, v_row_bytes, m, hd, w, hpt, out, hd);
      }
    } else {
      for_runs(v_rows, v_row_bytes, [&](const uint8_t* rows, int32_t p0, int32_t cnt) {
        v_kern.accumulate(rows, v_row_bytes, cnt, hd, scores + p0, n_ctx_, hpt, out, hd);
      });
    }
  };
  pool_->parallel_for(static_cast<int64_t>(n) * hp_.n_head_kv * subgroups, task, n_threads_);
}

}  // namespace edgellm
