#include "kv/block_pool.h"

#include <algorithm>
#include <limits>
#include <string>

#include "core/error.h"

namespace edgellm {

namespace {
constexpr int32_t kEmpty = -1;
constexpr int32_t kTomb = -2;
}  // namespace

BlockPool::BlockPool(int32_t n_blocks, size_t block_bytes) : block_bytes_(block_bytes) {
  require(n_blocks >= 1, ErrorCode::kInvalidArgument, "KV block pool needs at least one block, got " + std::to_string(n_blocks));
  require(block_bytes > 0, ErrorCode::kInvalidArgument, "KV block size is 0 bytes");
  require(block_bytes <= std::numeric_limits<size_t>::max() / static_cast<size_t>(n_blocks), ErrorCode::kOutOfMemory,
          "KV block pool of " + std::to_string(n_blocks) + " blocks overflows size_t");
  storage_ = AlignedBuffer(block_bytes * static_cast<size_t>(n_blocks), "the KV block pool");
  const size_t n = static_cast<size_t>(n_blocks);
  refcount_.assign(n, 0);
  registered_.assign(n, 0);
  hash_.assign(n, 0);
  prev_.assign(n, -1);
  next_.assign(n, -1);
  size_t cap = 8;
  while (cap < 2 * n) cap *= 2;
  slots_.assign(cap, -1);
  reset();
}

void BlockPool::reset() {
  free_.clear();
  free_.reserve(refcount_.size());
  for (int32_t b = n_blocks() - 1; b >= 0; --b) free_.push_back(b);
  std::fill(refcount_.begin(), refcount_.end(), 0);
  std::fill(registered_.begin(), registered_.end(), 0);
  std::fill(prev_.begin(), prev_.end(), -1);
  std::fill(next_.begin(), next_.end(), -1);
  std::fill(slots_.begin(), slots_.end(), -1);
  n_tombs_ = 0;
  lru_head_ = lru_tail_ = -1;
  n_cached_ = 0;
}

void BlockPool::lru_push_back(int32_t b) {
  const size_t i = static_cast<size_t>(b);
  prev_[i] = lru_tail_;
  next_[i] = -1;
  if (lru_tail_ >= 0) {
    next_[static_cast<size_t>(lru_tail_)] = b;
  } else {
    lru_head_ = b;
  }
  lru_tail_ = b;
  ++n_cached_;
}

void BlockPool::lru_remove(int32_t b) {
  const size_t i = static_cast<size_t>(b);
  if (prev_[i] >= 0) {
    next_[static_cast<size_t>(prev_[i])] = next_[i];
  } else {
    lru_head_ = next_[i];
  }
  if (next_[i] >= 0) {
    prev_[static_cast<size_t>(next_[i])] = prev_[i];
  } else {
    lru_tail_ = prev_[i];
  }
  prev_[i] = next_[i] = -1;
  --n_cached_;
}

int32_t BlockPool::allocate() {
  if (free_.empty()) {
    if (lru_head_ < 0) return -1;
    unregister_block(lru_head_);  // the least recently released cached block becomes free
    ++evictions_;
  }
  const int32_t b = free_.back();
  free_.pop_back();
  refcount_[static_cast<size_t>(b)] = 1;
  return b;
}

void BlockPool::check(int32_t block, const char* op) const {
  if (block < 0 || block >= n_blocks() || refcount_[static_cast<size_t>(block)] <= 0) {
    throw Error(ErrorCode::kInternal, std::string("KV block pool: ") + op + " of block " + std::to_string(block) +
                                          " which is not in use");
  }
}

void BlockPool::retain(int32_t block) {
  check(block, "retain");
  ++refcount_[static_cast<size_t>(block)];
}

void BlockPool::acquire(int32_t block) {
  if (block >= 0 && block < n_blocks() && refcount_[static_cast<size_t>(block)] == 0 &&
      registered_[static_cast<size_t>(block)] != 0) {
    lru_remove(block);
    refcount_[static_cast<size_t>(block)] = 1;
    return;
  }
  retain(block);
}

void BlockPool::release(int32_t block) {
  check(block, "release");
  if (--refcount_[static_cast<size_t>(block)] > 0) return;
  if (registered_[static_cast<size_t>(block)] != 0) {
    lru_push_back(block);
  } else {
    free_.push_back(block);
  }
}

int32_t BlockPool::refcount(int32_t block) const {
  if (block < 0 || block >= n_blocks()) return 0;
  return refcount_[static_cast<size_t>(block)];
}

bool BlockPool::register_block(int32_t block, uint64_t hash) {
  check(block, "register");
  const size_t i = static_cast<size_t>(block);
  if (registered_[i] != 0 || lookup(hash) >= 0) return false;
  registered_[i] = 1;
  hash_[i] = hash;
  index_insert(block);
  return true;
}

void BlockPool::unregister_block(int32_t block) {
  if (!registered(block)) return;
  const size_t i = static_cast<size_t>(block);
  registered_[i] = 0;  // before the erase: a rebuild it triggers must not re-insert the block
  index_erase(block);
  if (refcount_[i] == 0) {  // cached -> free
    lru_remove(block);
    free_.push_back(block);
  }
}

bool BlockPool::registered(int32_t block) const {
  return block >= 0 && block < n_blocks() && registered_[static_cast<size_t>(block)] != 0;
}

uint64_t BlockPool::block_hash(int32_t block) const { return registered(block) ? hash_[static_cast<size_t>(block)] : 0; }

int32_t BlockPool::lookup(uint64_t hash) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = static_cast<size_t>(hash) & mask;; i = (i + 1) & mask) {
    const int32_t s = slots_[i];
    if (s == kEmpty) return -1;
    if (s >= 0 && hash_[static_cast<size_t>(s)] == hash) return s;
  }
}

void BlockPool::index_insert(int32_t block) {
  const size_t mask = slots_.size() - 1;
  size_t i = static_cast<size_t>(hash_[static_cast<size_t>(block)]) & mask;
  while (slots_[i] >= 0) i = (i + 1) & mask;
  if (slots_[i] == kTomb) --n_tombs_;
  slots_[i] = block;
}

void BlockPool::index_erase(int32_t block) {
  const size_t mask = slots_.size() - 1;
  size_t i = static_cast<size_t>(hash_[static_cast<size_t>(block)]) & mask;
  while (slots_[i] != block) i = (i + 1) & mask;  // present: the caller checked registered()
  slots_[i] = kTomb;
  // Tombstones lengthen probes and an all-occupied table would never end one: rebuild early.
  if (++n_tombs_ > static_cast<int32_t>(slots_.size() / 4)) index_rebuild();
}

void BlockPool::index_rebuild() {
  std::fill(slots_.begin(), slots_.end(), kEmpty);
  n_tombs_ = 0;
  for (int32_t b = 0; b < n_blocks(); ++b) {
    if (registered_[static_cast<size_t>(b)] != 0) index_insert(b);
  }
}

void BlockPool::drop_cached() {
  while (lru_head_ >= 0) unregister_block(lru_head_);
}

size_t BlockPool::discard_storage() {
  if (n_in_use() != 0) {
    throw Error(ErrorCode::kInternal, "BlockPool::discard_storage with blocks in use");
  }
  drop_cached();
  return storage_.discard_pages();
}

}  // namespace edgellm
