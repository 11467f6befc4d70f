// The paged KV cache: a BlockPool plus one block table per sequence.
//
// Storage layout (bytes), for n_blocks blocks of block_tokens = T, head_dim = D, row = one head's
// D values in the K type (type_k) or the V type (type_v), which may differ:
//   [n_layer][K: [n_head_kv][n_blocks][T][K row], V: [n_head_kv][n_blocks][T][V row]]
// One plane per (layer, K/V, head); block b is rows [b T, b T + T) of every plane. Position p of
// a sequence lives in block table[p / T], slot p % T.
// Why planes and not whole blocks side by side: the pool hands out ids in order, so the blocks of
// a sequence are mostly consecutive ids, and then its keys (or values) for one head are one run of
// consecutive rows that attention reads in one kernel call and the hardware prefetcher follows.
// With blocks side by side, one head's 16 rows (2 KiB at D = 64, F16) were followed by the next
// block's 192 KiB further on (Qwen2.5-0.5B), each a fresh DRAM miss: one core, one layer's
// attention at 4096 positions took 230-260 us, against 155 us with planes and runs.
//
// Invariant: a sequence's partial last block is never shared, so writes never touch a block
// another sequence sees (fork copies the partial block; growing after a truncation into a shared
// block copies it first).
//
// Prefix cache: the cache records the token id of every position (Context::decode calls
// seq_set_token) and, once a block is full, registers it in the pool under its chained hash
// (block_hash.h; seed = prefix_seed mixed with the K and V types and the block size). A registered block is
// immutable: growing into a registered partial block copies it when it is shared and
// unregisters it when it is not. When the last sequence releases it the block stays cached
// (BlockPool LRU) until the pool needs it. seq_reuse_prefix maps the longest prefix of a new
// prompt that either the sequence itself or the cache holds into the sequence's table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/tensor_type.h"
#include "kv/block_pool.h"

namespace edgellm {

struct KvCacheParams {
  int32_t n_layer = 0;
  int32_t n_head_kv = 0;
  int32_t head_dim = 0;
  // Element types of the K and V rows: F32, F16, Q8_0 or Q4_0 (the last two: head_dim a multiple of 32).
  TensorType type_k = TensorType::F16;
  TensorType type_v = TensorType::F16;
  int32_t block_tokens = 16;
  int32_t n_seq_max = 1;
  int32_t n_ctx = 0;      // positions per sequence
  int32_t n_blocks = 0;   // pool size
  uint64_t prefix_seed = 0;  // extra keys of the prefix cache (the model's fingerprint)
};

class KvCache {
 public:
  // Validates (kInvalidArgument / kUnsupported naming the field) and allocates the pool once.
  explicit KvCache(const KvCacheParams& params);

  // Bytes of one block / of one token (all layers, K and V) for these parameters.
  static size_t block_bytes(const KvCacheParams& params);
  static size_t bytes_per_token(const KvCacheParams& params);

  const KvCacheParams& params() const { return params_; }
  BlockPool& pool() { return pool_; }
  const BlockPool& pool() const { return pool_; }
  // One K / V row of head_dim values in its type, unpadded (tensor_row_bytes): the rows of a run
  // of slots are contiguous.
  size_t k_row_bytes() const { return k_row_bytes_; }
  size_t v_row_bytes() const { return v_row_bytes_; }

  int32_t seq_length(int32_t seq) const;
  const std::vector<int32_t>& block_table(int32_t seq) const;

  // Extends `seq` to hold positions [0, new_length), allocating blocks. Throws kContextFull when
  // new_length > n_ctx or the pool runs out; the sequence is then unchanged.
  void seq_grow(int32_t seq, int32_t new_length);
  // Blocks seq_grow(seq, new_length) would take from the pool (new blocks plus the copy of a
  // shared partial last block); 0 when new_length <= seq_length. Does not check n_ctx.
  int32_t blocks_needed(int32_t seq, int32_t new_length) const;
  void seq_truncate(int32_t seq, int32_t n_keep);  // n_keep >= length: no-op
  void seq_clear(int32_t seq);
  // Context shift (docs/context-shift.md): removes positions [n_keep, n_keep + n_discard) of
  // `seq`; the rows of the positions after them move down by n_discard (K as stored: the caller
  // re-rotates them), the freed tail blocks go back to the pool. Blocks the moved rows land in
  // are made this sequence's own first (a shared block is copied, a registered one unregistered),
  // and the blocks from the one holding position n_keep on are never registered for the prefix
  // cache again (their rows were computed with the dropped positions in view, so they are not
  // what a fresh prefill of their token ids gives). Throws kInvalidArgument for a bad range and
  // kContextFull when copying shared blocks needs more free blocks than the pool has; the
  // sequence is then unchanged.
  void seq_drop(int32_t seq, int32_t n_keep, int32_t n_discard);
  // Leading positions of `seq` whose rows are what a prefill of their token ids gives: all of them
  // unless a context shift moved rows (seq_drop), then the positions before the block that held
  // its n_keep. Sessions record it (kv/session_file.h).
  int32_t seq_exact_length(int32_t seq) const;
  // Positions from `pos` on carry another history (a restored session of a shifted sequence): as
  // after seq_drop, the blocks from the one holding `pos` on are never registered for the prefix
  // cache, until a truncation back to a length <= their start. Call before seq_publish.
  void seq_mark_inexact_from(int32_t seq, int32_t pos);
  // dst (cleared first) shares src's full blocks; src's partial last block is copied.
  // Throws kContextFull (dst left empty) when no block is free for the copy.
  void seq_fork(int32_t src, int32_t dst);
  void clear();

  // ---- prefix cache
  // Records the token id at `pos` (< seq_length) of `seq`, for hashing and prefix matching.
  void seq_set_token(int32_t seq, int32_t pos, int32_t token);
  // Registers the blocks of `seq` that are full (and whose token ids are all known) and not yet
  // registered; called once their K/V rows are written.
  void seq_publish(int32_t seq);
  // The token ids of `seq`'s positions (-1 where none was recorded).
  const std::vector<int32_t>& seq_tokens(int32_t seq) const;
  // Makes `seq` hold the longest prefix of tokens[0, n_tokens), at most n_max positions, that is
  // available: what `seq` already holds (its common prefix with the tokens) or the full blocks
  // the cache holds, whichever is longer (cached blocks are mapped into the table with a
  // reference each; the sequence's other blocks are released). Returns the positions held,
  // whose K/V need not be computed again. Allocates no block.
  int32_t seq_reuse_prefix(int32_t seq, const int32_t* tokens, int32_t n_tokens, int32_t n_max);
  // Positions of tokens[0, n_tokens) the cache holds in registered full blocks (in use or
  // cached), counted from the start.
  int32_t cached_prefix_length(const int32_t* tokens, int32_t n_tokens) const;
  // Drops every cached (unreferenced) block from the cache; blocks in use are kept.
  void drop_cached() { pool_.drop_cached(); }

  // Row of head `head` at position `pos` of `seq` (pos < seq_length).
  uint8_t* k_row(int32_t seq, int32_t layer, int32_t head, int32_t pos);
  uint8_t* v_row(int32_t seq, int32_t layer, int32_t head, int32_t pos);
  // The block_tokens consecutive rows of one head in one block; the rows of block + 1 follow them.
  const uint8_t* k_rows(int32_t block, int32_t layer, int32_t head) const;
  const uint8_t* v_rows(int32_t block, int32_t layer, int32_t head) const;

  // Converts n = head_dim floats into the K / V type (attention reads the rows in place).
  void store_k_row(const float* src, uint8_t* dst) const { store_row(params_.type_k, src, dst); }
  void store_v_row(const float* src, uint8_t* dst) const { store_row(params_.type_v, src, dst); }

 private:
  struct Sequence {
    int32_t length = 0;
    std::vector<int32_t> blocks;
    std::vector<int32_t> tokens;    // [length] ids, -1 unknown
    std::vector<uint64_t> hashes;   // chain hashes of the leading full blocks whose ids are known
    int32_t publish_limit = INT32_MAX;  // blocks from this index on are never registered (seq_drop)
  };
  // Walks the cache along tokens' full blocks (at most max_blocks); appends the found blocks and
  // their hashes. Const: takes no reference.
  void match_cached(const int32_t* tokens, int32_t n_tokens, int32_t max_blocks, std::vector<int32_t>* blocks,
                    std::vector<uint64_t>* hashes) const;
  void check_seq(int32_t seq) const;
  // Start of `block`'s rows in the plane of (layer, kv, head).
  size_t offset(int32_t block, int32_t layer, int32_t kv, int32_t head) const;
  int32_t copy_block(int32_t block);  // -1 when the pool is empty
  size_t row_bytes(int32_t kv) const { return kv == 0 ? k_row_bytes_ : v_row_bytes_; }
  void store_row(TensorType type, const float* src, uint8_t* dst) const;

  KvCacheParams params_;
  size_t k_row_bytes_ = 0, v_row_bytes_ = 0;
  BlockPool pool_;
  std::vector<Sequence> seqs_;
  uint64_t seed_ = 0;                  // hash chain start: prefix_seed + K, V types + block size
  std::vector<int32_t> block_ids_;     // [n_blocks][block_tokens] token ids of registered blocks
  std::vector<uint64_t> block_parent_;  // [n_blocks] parent hash of registered blocks
  std::vector<int32_t> scratch_blocks_;
  std::vector<uint64_t> scratch_hashes_;
};

}  // namespace edgellm
