// BPE merges: (left id, right id) -> (rank, merged id), as one flat open-addressing table.
//
// Why not std::unordered_map<uint64_t, Merge>: one heap node per merge (~48 bytes with the
// allocator's overhead, ~7 MB for Qwen's 151,387 merges plus buckets); here 16 bytes per slot at
// a load of at most 0.6 (4 MiB for Qwen), and a lookup is one or two probes in one array.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace edgellm {

class MergeTable {
 public:
  struct Merge {
    int32_t rank;    // position in the merge list: lower merges first
    int32_t result;  // id of the merged token
  };
  // Sizes the table for up to n merges (no rehashing after).
  void reserve(size_t n);
  // Inserts unless the pair is present (the first-listed merge of a pair wins). Ids must be >= 0.
  void insert_if_absent(int32_t left, int32_t right, Merge m);
  const Merge* find(int32_t left, int32_t right) const;  // nullptr when absent (or an id < 0)
  size_t size() const { return size_; }
  size_t bytes() const { return slots_.capacity() * sizeof(Slot); }

 private:
  struct Slot {
    uint64_t key;  // kEmpty or (left << 32 | right)
    Merge merge;
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};  // ids are < 2^31: no pair has this key
  static uint64_t key_of(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }
  static size_t home(uint64_t key, size_t mask) {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 32) & mask;  // Fibonacci hashing
  }
  std::vector<Slot> slots_;
  size_t size_ = 0;
  size_t limit_ = 0;  // most entries before the load passes 0.6
};

}  // namespace edgellm
