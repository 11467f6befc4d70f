// A fixed pool of equally sized KV blocks, allocated once: block ids, their reference counts (so
// that sequences share their common full blocks) and the storage, plus the prefix cache's
// registry of full blocks by content hash.
//
// A block is in one of three states:
//   in use     refcount > 0 (in one or more block tables); may be registered (full, immutable)
//   cached     refcount 0 and registered: its content is kept for a later sequence with the same
//              prefix, in an LRU list; allocate() evicts the least recently released one when no
//              block is free
//   free       refcount 0, not registered
// n_free() counts free + cached: both can be handed out, so admission arithmetic over n_free()
// never overcommits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "platform/memory_stats.h"

namespace edgellm {

class BlockPool {
 public:
  // Throws Error(kInvalidArgument) for n_blocks < 1 or block_bytes == 0, kOutOfMemory when the
  // allocation fails.
  BlockPool(int32_t n_blocks, size_t block_bytes);

  int32_t n_blocks() const { return static_cast<int32_t>(refcount_.size()); }
  // Blocks allocate() can hand out: free + cached.
  int32_t n_free() const { return static_cast<int32_t>(free_.size()) + n_cached_; }
  int32_t n_cached() const { return n_cached_; }        // refcount 0, content kept
  int32_t n_in_use() const { return n_blocks() - n_free(); }
  size_t block_bytes() const { return block_bytes_; }
  size_t total_bytes() const { return storage_.size(); }
  uint64_t evictions() const { return evictions_; }     // cached blocks reused for new content

  // Takes a free block (refcount 1), else evicts the least recently released cached block
  // (unregistering it); -1 when every block is in use (the caller reports kContextFull).
  int32_t allocate();
  // Adds a reference to a block in use.
  void retain(int32_t block);
  // Adds a reference to a block in use or cached (a cached block leaves the LRU list).
  void acquire(int32_t block);
  // Drops a reference; at zero a registered block becomes cached (most recently released end of
  // the LRU list), an unregistered one free.
  void release(int32_t block);
  int32_t refcount(int32_t block) const;

  // ---- prefix cache registry: content hash -> block (at most one block per hash)
  // Registers a block in use under `hash`; false (nothing changes) when it is registered already
  // or another block holds this hash.
  bool register_block(int32_t block, uint64_t hash);
  // Drops a block's registration (before its content changes). No-op when not registered.
  void unregister_block(int32_t block);
  bool registered(int32_t block) const;
  uint64_t block_hash(int32_t block) const;  // valid when registered
  // The block registered under `hash` (in use or cached), -1 when none.
  int32_t lookup(uint64_t hash) const;
  // Unregisters every cached block (they become free); blocks in use keep their registration.
  void drop_cached();

  // The storage of all blocks (total_bytes, 64-byte aligned). Where a block's bytes lie in it is
  // the owner's layout (KvCache stores each block as one slot in every layer/head plane).
  uint8_t* storage() { return storage_.data(); }
  const uint8_t* storage() const { return storage_.data(); }

  // Returns every block to the free list and forgets every registration.
  void reset();
  // Gives the storage's pages back to the system (they read as zeros when next touched); only
  // while no block is in use. Cached blocks are dropped first (their content is lost). Returns
  // the bytes released (whole pages).
  size_t discard_storage();

 private:
  void check(int32_t block, const char* op) const;
  void lru_push_back(int32_t block);
  void lru_remove(int32_t block);
  // The hash index: open addressing over block ids (kEmpty / kTomb otherwise), at most half full,
  // allocated once so that registering a block in a decode step stays off the heap.
  void index_insert(int32_t block);
  void index_erase(int32_t block);
  void index_rebuild();

  size_t block_bytes_ = 0;
  AlignedBuffer storage_;
  std::vector<int32_t> refcount_;
  std::vector<int32_t> free_;  // stack; lowest ids handed out first after reset()
  // Registry.
  std::vector<uint8_t> registered_;
  std::vector<uint64_t> hash_;
  std::vector<int32_t> slots_;  // [power of two >= 2 n_blocks]
  int32_t n_tombs_ = 0;
  // LRU list of cached blocks (intrusive, -1 terminated): head = evicted first.
  std::vector<int32_t> prev_, next_;
  int32_t lru_head_ = -1, lru_tail_ = -1;
  int32_t n_cached_ = 0;
  uint64_t evictions_ = 0;
};

}  // namespace edgellm
