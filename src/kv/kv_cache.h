// The paged KV cache: a BlockPool plus one block table per sequence.
//
// Storage layout (bytes), for n_blocks blocks of block_tokens = T, head_dim = D, row = one head's
// D values in `type`:
//   [n_layer][2 (K, V)][n_head_kv][n_blocks][T][row]
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
  TensorType type = TensorType::F16;  // F32, F16 or Q8_0 (head_dim a multiple of 32)
  int32_t block_tokens = 16;
  int32_t n_seq_max = 1;
  int32_t n_ctx = 0;      // positions per sequence
  int32_t n_blocks = 0;   // pool size
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
  // One row of head_dim values in the cache type, unpadded (tensor_row_bytes): the rows of a run
  // of slots are contiguous.
  size_t row_bytes() const { return row_bytes_; }

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
  // dst (cleared first) shares src's full blocks; src's partial last block is copied.
  // Throws kContextFull (dst left empty) when no block is free for the copy.
  void seq_fork(int32_t src, int32_t dst);
  void clear();

  // Row of head `head` at position `pos` of `seq` (pos < seq_length).
  uint8_t* k_row(int32_t seq, int32_t layer, int32_t head, int32_t pos);
  uint8_t* v_row(int32_t seq, int32_t layer, int32_t head, int32_t pos);
  // The block_tokens consecutive rows of one head in one block; the rows of block + 1 follow them.
  const uint8_t* k_rows(int32_t block, int32_t layer, int32_t head) const;
  const uint8_t* v_rows(int32_t block, int32_t layer, int32_t head) const;

  // Converts n = head_dim floats into the cache type (attention reads the rows in place).
  void store_row(const float* src, uint8_t* dst) const;

 private:
  struct Sequence {
    int32_t length = 0;
    std::vector<int32_t> blocks;
  };
  void check_seq(int32_t seq) const;
  // Start of `block`'s rows in the plane of (layer, kv, head).
  size_t offset(int32_t block, int32_t layer, int32_t kv, int32_t head) const;
  int32_t copy_block(int32_t block);  // -1 when the pool is empty

  KvCacheParams params_;
  size_t row_bytes_ = 0;
  BlockPool pool_;
  std::vector<Sequence> seqs_;
};

}  // namespace edgellm
