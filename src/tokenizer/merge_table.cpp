#include "tokenizer/merge_table.h"

#include "core/error.h"

namespace edgellm {

void MergeTable::reserve(size_t n) {
  size_t cap = 16;
  while (cap * 3 < n * 5) cap *= 2;  // load n / cap <= 0.6
  slots_.assign(cap, Slot{kEmpty, {0, 0}});
  size_ = 0;
  limit_ = cap * 3 / 5;
}

void MergeTable::insert_if_absent(int32_t left, int32_t right, Merge m) {
  if (size_ >= limit_) throw Error(ErrorCode::kInternal, "merge table: more merges than reserved");
  if (left < 0 || right < 0) throw Error(ErrorCode::kInternal, "merge table: negative token id");
  const uint64_t key = key_of(left, right);
  const size_t mask = slots_.size() - 1;
  for (size_t at = home(key, mask);; at = (at + 1) & mask) {
    Slot& s = slots_[at];
    if (s.key == key) return;
    if (s.key == kEmpty) {
      s = Slot{key, m};
      ++size_;
      return;
    }
  }
}

const MergeTable::Merge* MergeTable::find(int32_t left, int32_t right) const {
  if (slots_.empty()) return nullptr;
  const uint64_t key = key_of(left, right);
  const size_t mask = slots_.size() - 1;
  for (size_t at = home(key, mask);; at = (at + 1) & mask) {
    const Slot& s = slots_[at];
    if (s.key == kEmpty) return nullptr;  // first: the pair (-1, -1) has the empty key
    if (s.key == key) return &s.merge;
  }
}

}  // namespace edgellm
