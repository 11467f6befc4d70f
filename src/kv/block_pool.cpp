#include "kv/block_pool.h"

#include <algorithm>
#include <limits>
#include <string>

#include "core/error.h"

namespace edgellm {

BlockPool::BlockPool(int32_t n_blocks, size_t block_bytes) : block_bytes_(block_bytes) {
  require(n_blocks >= 1, ErrorCode::kInvalidArgument, "KV block pool needs at least one block, got " + std::to_string(n_blocks));
  require(block_bytes > 0, ErrorCode::kInvalidArgument, "KV block size is 0 bytes");
  require(block_bytes <= std::numeric_limits<size_t>::max() / static_cast<size_t>(n_blocks), ErrorCode::kOutOfMemory,
          "KV block pool of " + std::to_string(n_blocks) + " blocks overflows size_t");
  storage_ = AlignedBuffer(block_bytes * static_cast<size_t>(n_blocks), "the KV block pool");
  refcount_.assign(static_cast<size_t>(n_blocks), 0);
  reset();
}

void BlockPool::reset() {
  free_.clear();
  free_.reserve(refcount_.size());
  for (int32_t b = n_blocks() - 1; b >= 0; --b) free_.push_back(b);
  std::fill(refcount_.begin(), refcount_.end(), 0);
}

int32_t BlockPool::allocate() {
  if (free_.empty()) return -1;
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

void BlockPool::release(int32_t block) {
  check(block, "release");
  if (--refcount_[static_cast<size_t>(block)] == 0) free_.push_back(block);
}

int32_t BlockPool::refcount(int32_t block) const {
  if (block < 0 || block >= n_blocks()) return 0;
  return refcount_[static_cast<size_t>(block)];
}

size_t BlockPool::discard_storage() {
  if (n_free() != n_blocks()) {
    throw Error(ErrorCode::kInternal, "BlockPool::discard_storage with blocks in use");
  }
  return storage_.discard_pages();
}

}  // namespace edgellm
