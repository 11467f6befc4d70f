// A fixed pool of equally sized KV blocks, allocated once: block ids, their reference counts (so
// that sequences forked from one another share their common full blocks) and the storage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/memory_stats.h"

namespace edgellm {

class BlockPool {
 public:
  // Throws Error(kInvalidArgument) for n_blocks < 1 or block_bytes == 0, kOutOfMemory when the
  // allocation fails.
  BlockPool(int32_t n_blocks, size_t block_bytes);

  int32_t n_blocks() const { return static_cast<int32_t>(refcount_.size()); }
  int32_t n_free() const { return static_cast<int32_t>(free_.size()); }
  size_t block_bytes() const { return block_bytes_; }
  size_t total_bytes() const { return storage_.size(); }

  // Takes a free block (refcount 1); -1 when none is left (the caller reports kContextFull).
  int32_t allocate();
  // Adds a reference to a block in use.
  void retain(int32_t block);
  // Drops a reference; the block returns to the free list at zero.
  void release(int32_t block);
  int32_t refcount(int32_t block) const;

  // The storage of all blocks (total_bytes, 64-byte aligned). Where a block's bytes lie in it is
  // the owner's layout (KvCache stores each block as one slot in every layer/head plane).
  uint8_t* storage() { return storage_.data(); }
  const uint8_t* storage() const { return storage_.data(); }

  // Returns every block to the free list.
  void reset();
  // Gives the storage's pages back to the system (they read as zeros when next touched); only
  // while no block is in use. Returns the bytes released (whole pages).
  size_t discard_storage();

 private:
  void check(int32_t block, const char* op) const;

  size_t block_bytes_ = 0;
  AlignedBuffer storage_;
  std::vector<int32_t> refcount_;
  std::vector<int32_t> free_;  // stack; lowest ids handed out first after reset()
};

}  // namespace edgellm
