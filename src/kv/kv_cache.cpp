#include "kv/kv_cache.h"

#include <cstring>
#include <string>

#include "core/error.h"
#include "core/fp16.h"
#include "kernels/kernels.h"

namespace edgellm {

namespace {

const KvCacheParams& validated(const KvCacheParams& p) {
  require(p.n_layer >= 1 && p.n_head_kv >= 1 && p.head_dim >= 1, ErrorCode::kInvalidArgument,
          "KV cache: n_layer, n_head_kv and head_dim must be positive");
  require(p.block_tokens >= 1 && p.block_tokens <= 4096, ErrorCode::kInvalidArgument,
          "KV cache: kv_block_tokens " + std::to_string(p.block_tokens) + " is outside [1, 4096]");
  require(p.n_seq_max >= 1, ErrorCode::kInvalidArgument,
          "KV cache: n_seq_max " + std::to_string(p.n_seq_max) + " must be >= 1");
  require(p.n_ctx >= 1, ErrorCode::kInvalidArgument, "KV cache: n_ctx " + std::to_string(p.n_ctx) + " must be >= 1");
  require(p.type == TensorType::F32 || p.type == TensorType::F16 || p.type == TensorType::Q8_0,
          ErrorCode::kUnsupported,
          std::string("KV cache type ") + tensor_type_name(p.type) + " is not supported (f32, f16, q8_0)");
  require(p.type != TensorType::Q8_0 || p.head_dim % 32 == 0, ErrorCode::kUnsupported,
          "KV cache type q8_0 needs head_dim a multiple of 32, the model has " + std::to_string(p.head_dim));
  return p;
}

}  // namespace

size_t KvCache::block_bytes(const KvCacheParams& p) {
  return static_cast<size_t>(p.block_tokens) * bytes_per_token(p);
}

size_t KvCache::bytes_per_token(const KvCacheParams& p) {
  return static_cast<size_t>(p.n_layer) * 2 * static_cast<size_t>(p.n_head_kv) * tensor_row_bytes(p.type, p.head_dim);
}

KvCache::KvCache(const KvCacheParams& params)
    : params_(validated(params)),
      row_bytes_(tensor_row_bytes(params.type, params.head_dim)),
      pool_(params.n_blocks, block_bytes(params)),
      seqs_(static_cast<size_t>(params.n_seq_max)) {
  // Block tables never reallocate afterwards: growing a sequence in a decode step stays off the heap.
  const size_t max_blocks = static_cast<size_t>((params_.n_ctx + params_.block_tokens - 1) / params_.block_tokens);
  for (auto& s : seqs_) s.blocks.reserve(max_blocks);
}

void KvCache::check_seq(int32_t seq) const {
  if (seq < 0 || seq >= params_.n_seq_max) {
    throw Error(ErrorCode::kInvalidArgument, "sequence id " + std::to_string(seq) + " is outside [0, " +
                                                 std::to_string(params_.n_seq_max) + ") (n_seq_max)");
  }
}

int32_t KvCache::seq_length(int32_t seq) const {
  check_seq(seq);
  return seqs_[static_cast<size_t>(seq)].length;
}

const std::vector<int32_t>& KvCache::block_table(int32_t seq) const {
  check_seq(seq);
  return seqs_[static_cast<size_t>(seq)].blocks;
}

int32_t KvCache::copy_block(int32_t block) {
  const int32_t copy = pool_.allocate();
  if (copy < 0) return copy;
  // One slot of T rows in every plane.
  const size_t slot = static_cast<size_t>(params_.block_tokens) * row_bytes_;
  uint8_t* base = pool_.storage();
  for (int32_t layer = 0; layer < params_.n_layer; ++layer) {
    for (int32_t kv = 0; kv < 2; ++kv) {
      for (int32_t head = 0; head < params_.n_head_kv; ++head) {
        std::memcpy(base + offset(copy, layer, kv, head), base + offset(block, layer, kv, head), slot);
      }
    }
  }
  return copy;
}

void KvCache::seq_grow(int32_t seq, int32_t new_length) {
  check_seq(seq);
  Sequence& s = seqs_[static_cast<size_t>(seq)];
  if (new_length <= s.length) return;
  if (new_length > params_.n_ctx) {
    throw Error(ErrorCode::kContextFull, "sequence " + std::to_string(seq) + " needs " + std::to_string(new_length) +
                                             " positions but the context holds " + std::to_string(params_.n_ctx));
  }
  const int32_t T = params_.block_tokens;
  const size_t need = static_cast<size_t>((new_length + T - 1) / T);
  // A partial last block shared with another sequence (possible after seq_truncate) is copied
  // before anything is written into it.
  const bool cow = s.length % T != 0 && pool_.refcount(s.blocks.back()) > 1;
  const size_t n_new = need - s.blocks.size() + (cow ? 1 : 0);
  if (n_new > static_cast<size_t>(pool_.n_free())) {
    throw Error(ErrorCode::kContextFull,
                "KV cache is full: sequence " + std::to_string(seq) + " needs " + std::to_string(n_new) +
                    " more blocks of " + std::to_string(T) + " tokens, " + std::to_string(pool_.n_free()) + " of " +
                    std::to_string(pool_.n_blocks()) + " are free");
  }
  if (cow) {
    const int32_t copy = copy_block(s.blocks.back());
    pool_.release(s.blocks.back());
    s.blocks.back() = copy;
  }
  while (s.blocks.size() < need) s.blocks.push_back(pool_.allocate());
  s.length = new_length;
}

void KvCache::seq_truncate(int32_t seq, int32_t n_keep) {
  check_seq(seq);
  require(n_keep >= 0, ErrorCode::kInvalidArgument, "seq_truncate: n_keep " + std::to_string(n_keep) + " < 0");
  Sequence& s = seqs_[static_cast<size_t>(seq)];
  if (n_keep >= s.length) return;
  const int32_t T = params_.block_tokens;
  const size_t keep_blocks = static_cast<size_t>((n_keep + T - 1) / T);
  while (s.blocks.size() > keep_blocks) {
    pool_.release(s.blocks.back());
    s.blocks.pop_back();
  }
  s.length = n_keep;
}

void KvCache::seq_clear(int32_t seq) { seq_truncate(seq, 0); }

void KvCache::seq_fork(int32_t src, int32_t dst) {
  check_seq(src);
  check_seq(dst);
  if (src == dst) return;
  seq_clear(dst);
  const Sequence& s = seqs_[static_cast<size_t>(src)];
  Sequence& d = seqs_[static_cast<size_t>(dst)];
  const int32_t T = params_.block_tokens;
  const bool partial = s.length % T != 0;
  if (partial && pool_.n_free() == 0) {
    throw Error(ErrorCode::kContextFull, "KV cache is full: forking sequence " + std::to_string(src) + " into " +
                                             std::to_string(dst) + " needs a block for its partial last block");
  }
  d.blocks = s.blocks;
  for (size_t i = 0; i + (partial ? 1 : 0) < d.blocks.size(); ++i) pool_.retain(d.blocks[i]);
  if (partial) d.blocks.back() = copy_block(s.blocks.back());
  d.length = s.length;
}

void KvCache::clear() {
  for (auto& s : seqs_) {
    s.blocks.clear();  // keeps the reserved capacity
    s.length = 0;
  }
  pool_.reset();
}

size_t KvCache::offset(int32_t block, int32_t layer, int32_t kv, int32_t head) const {
  const size_t plane = (static_cast<size_t>(layer) * 2 + static_cast<size_t>(kv)) * static_cast<size_t>(params_.n_head_kv) +
                       static_cast<size_t>(head);
  return (plane * static_cast<size_t>(pool_.n_blocks()) + static_cast<size_t>(block)) *
         static_cast<size_t>(params_.block_tokens) * row_bytes_;
}

uint8_t* KvCache::k_row(int32_t seq, int32_t layer, int32_t head, int32_t pos) {
  const Sequence& s = seqs_[static_cast<size_t>(seq)];
  const int32_t T = params_.block_tokens;
  return pool_.storage() + offset(s.blocks[static_cast<size_t>(pos / T)], layer, 0, head) +
         static_cast<size_t>(pos % T) * row_bytes_;
}

uint8_t* KvCache::v_row(int32_t seq, int32_t layer, int32_t head, int32_t pos) {
  const Sequence& s = seqs_[static_cast<size_t>(seq)];
  const int32_t T = params_.block_tokens;
  return pool_.storage() + offset(s.blocks[static_cast<size_t>(pos / T)], layer, 1, head) +
         static_cast<size_t>(pos % T) * row_bytes_;
}

const uint8_t* KvCache::k_rows(int32_t block, int32_t layer, int32_t head) const {
  return pool_.storage() + offset(block, layer, 0, head);
}

const uint8_t* KvCache::v_rows(int32_t block, int32_t layer, int32_t head) const {
  return pool_.storage() + offset(block, layer, 1, head);
}

void KvCache::store_row(const float* src, uint8_t* dst) const {
  switch (params_.type) {
    case TensorType::F32:
      std::memcpy(dst, src, sizeof(float) * static_cast<size_t>(params_.head_dim));
      break;
    case TensorType::F16:
      kernels::fp32_to_fp16_row(src, reinterpret_cast<uint16_t*>(dst), params_.head_dim);
      break;
    default:
      kernels::quantize_row(params_.type, src, dst, params_.head_dim);
      break;
  }
}

int32_t KvCache::blocks_needed(int32_t seq, int32_t new_length) const {
  check_seq(seq);
  const Sequence& s = seqs_[static_cast<size_t>(seq)];
  if (new_length <= s.length) return 0;
  const int32_t T = params_.block_tokens;
  const int64_t need = (static_cast<int64_t>(new_length) + T - 1) / T;
  const bool cow = s.length % T != 0 && pool_.refcount(s.blocks.back()) > 1;
  return static_cast<int32_t>(need - static_cast<int64_t>(s.blocks.size()) + (cow ? 1 : 0));
}

}  // namespace edgellm
