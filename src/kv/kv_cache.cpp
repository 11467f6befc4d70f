#include "kv/kv_cache.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/error.h"
#include "core/fp16.h"
#include "kernels/kernels.h"
#include "kv/block_hash.h"

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
  for (const TensorType t : {p.type_k, p.type_v}) {
    require(t == TensorType::F32 || t == TensorType::F16 || t == TensorType::Q8_0 || t == TensorType::Q4_0,
            ErrorCode::kUnsupported,
            std::string("KV cache type ") + tensor_type_name(t) + " is not supported (f32, f16, q8_0, q4_0)");
    require(p.head_dim % tensor_block_size(t) == 0, ErrorCode::kUnsupported, [&] {
      return std::string("KV cache type ") + tensor_type_name(t) + " needs head_dim a multiple of " +
             std::to_string(tensor_block_size(t)) + ", the model has " + std::to_string(p.head_dim);
    });
  }
  return p;
}

}  // namespace

size_t KvCache::block_bytes(const KvCacheParams& p) {
  return static_cast<size_t>(p.block_tokens) * bytes_per_token(p);
}

size_t KvCache::bytes_per_token(const KvCacheParams& p) {
  return static_cast<size_t>(p.n_layer) * static_cast<size_t>(p.n_head_kv) *
         (tensor_row_bytes(p.type_k, p.head_dim) + tensor_row_bytes(p.type_v, p.head_dim));
}

KvCache::KvCache(const KvCacheParams& params)
    : params_(validated(params)),
      k_row_bytes_(tensor_row_bytes(params.type_k, params.head_dim)),
      v_row_bytes_(tensor_row_bytes(params.type_v, params.head_dim)),
      pool_(params.n_blocks, block_bytes(params)),
      seqs_(static_cast<size_t>(params.n_seq_max)) {
  // Block tables never reallocate afterwards: growing a sequence in a decode step stays off the heap.
  const size_t max_blocks = static_cast<size_t>((params_.n_ctx + params_.block_tokens - 1) / params_.block_tokens);
  for (auto& s : seqs_) {
    s.blocks.reserve(max_blocks);
    s.tokens.reserve(static_cast<size_t>(params_.n_ctx));
    s.hashes.reserve(max_blocks);
  }
  // Both types are extra keys: a block of Q4_0 V rows must not serve a cache expecting Q8_0 ones.
  seed_ = hash_combine(hash_combine(hash_combine(hash_mix(params_.prefix_seed), static_cast<uint64_t>(params_.type_k)),
                                    static_cast<uint64_t>(params_.type_v)),
                       static_cast<uint64_t>(params_.block_tokens));
  block_ids_.assign(static_cast<size_t>(params_.n_blocks) * static_cast<size_t>(params_.block_tokens), -1);
  block_parent_.assign(static_cast<size_t>(params_.n_blocks), 0);
  scratch_blocks_.reserve(max_blocks);
  scratch_hashes_.reserve(max_blocks);
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
  uint8_t* base = pool_.storage();
  for (int32_t layer = 0; layer < params_.n_layer; ++layer) {
    for (int32_t kv = 0; kv < 2; ++kv) {
      const size_t slot = static_cast<size_t>(params_.block_tokens) * row_bytes(kv);  // T rows of one plane
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
  // A partial last block shared with another sequence (possible after seq_truncate or a prefix
  // reuse) is copied before anything is written into it; one only this sequence holds but the
  // prefix cache registered is unregistered (its content is about to change).
  const bool partial = s.length % T != 0;
  const bool cow = partial && pool_.refcount(s.blocks.back()) > 1;
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
  } else if (partial) {
    pool_.unregister_block(s.blocks.back());
  }
  while (s.blocks.size() < need) s.blocks.push_back(pool_.allocate());
  s.length = new_length;
  s.tokens.resize(static_cast<size_t>(new_length), -1);
}

void KvCache::seq_truncate(int32_t seq, int32_t n_keep) {
  check_seq(seq);
  require(n_keep >= 0, ErrorCode::kInvalidArgument, "seq_truncate: n_keep " + std::to_string(n_keep) + " < 0");
  Sequence& s = seqs_[static_cast<size_t>(seq)];
  const int32_t T = params_.block_tokens;
  // Cut back to before the first shifted row: what is written from here on is a fresh prefill.
  // Also when nothing is cut (an empty sequence left by seq_drop must publish again).
  const bool back_to_exact = std::min(n_keep, s.length) <= static_cast<int64_t>(s.publish_limit) * T;
  if (back_to_exact) s.publish_limit = INT32_MAX;
  if (n_keep >= s.length) return;
  const size_t keep_blocks = static_cast<size_t>((n_keep + T - 1) / T);
  while (s.blocks.size() > keep_blocks) {
    pool_.release(s.blocks.back());
    s.blocks.pop_back();
  }
  s.length = n_keep;
  s.tokens.resize(static_cast<size_t>(n_keep));
  s.hashes.resize(std::min(s.hashes.size(), static_cast<size_t>(n_keep / T)));
}

void KvCache::seq_drop(int32_t seq, int32_t n_keep, int32_t n_discard) {
  check_seq(seq);
  Sequence& s = seqs_[static_cast<size_t>(seq)];
  if (n_keep < 0 || n_discard < 1 || static_cast<int64_t>(n_keep) + n_discard > s.length) {
    throw Error(ErrorCode::kInvalidArgument, "seq_drop: cannot drop positions [" + std::to_string(n_keep) + ", " +
                                                 std::to_string(static_cast<int64_t>(n_keep) + n_discard) +
                                                 ") of sequence " + std::to_string(seq) + " holding " +
                                                 std::to_string(s.length));
  }
  const int32_t T = params_.block_tokens;
  const int32_t new_length = s.length - n_discard;
  const auto first = static_cast<size_t>(n_keep / T);                       // first block written
  const auto kept = static_cast<size_t>((new_length + T - 1) / T);          // blocks after the drop
  // Blocks [first, kept) receive rows: each must be this sequence's own. Count the copies first
  // so that a failure changes nothing.
  int32_t copies = 0;
  for (size_t i = first; i < kept; ++i) copies += pool_.refcount(s.blocks[i]) > 1 ? 1 : 0;
  if (copies > pool_.n_free()) {
    throw Error(ErrorCode::kContextFull, "KV cache is full: shifting sequence " + std::to_string(seq) + " needs " +
                                             std::to_string(copies) + " blocks to copy shared blocks, " +
                                             std::to_string(pool_.n_free()) + " are free");
  }
  for (size_t i = first; i < kept; ++i) {
    const int32_t b = s.blocks[i];
    if (pool_.refcount(b) > 1) {
      s.blocks[i] = copy_block(b);
      pool_.release(b);
    } else {
      pool_.unregister_block(b);
    }
  }
  // Move rows down, ascending (source > destination, so no row is overwritten before it moves).
  // A row of block i' may be read after block i' was copied above: the copy holds the same bytes.
  for (int32_t layer = 0; layer < params_.n_layer; ++layer) {
    for (int32_t kv = 0; kv < 2; ++kv) {
      const size_t rb = row_bytes(kv);
      for (int32_t head = 0; head < params_.n_head_kv; ++head) {
        for (int32_t dst = n_keep; dst < new_length; ++dst) {
          const int32_t src = dst + n_discard;
          uint8_t* base = pool_.storage();
          std::memcpy(base + offset(s.blocks[static_cast<size_t>(dst / T)], layer, kv, head) +
                          static_cast<size_t>(dst % T) * rb,
                      base + offset(s.blocks[static_cast<size_t>(src / T)], layer, kv, head) +
                          static_cast<size_t>(src % T) * rb,
                      rb);
        }
      }
    }
  }
  while (s.blocks.size() > kept) {
    pool_.release(s.blocks.back());
    s.blocks.pop_back();
  }
  s.tokens.erase(s.tokens.begin() + n_keep, s.tokens.begin() + n_keep + n_discard);
  s.length = new_length;
  s.hashes.resize(std::min(s.hashes.size(), first));
  s.publish_limit = std::min(s.publish_limit, static_cast<int32_t>(first));
}

void KvCache::seq_clear(int32_t seq) { seq_truncate(seq, 0); }

int32_t KvCache::seq_exact_length(int32_t seq) const {
  check_seq(seq);
  const Sequence& s = seqs_[static_cast<size_t>(seq)];
  const int64_t limit = static_cast<int64_t>(s.publish_limit) * params_.block_tokens;
  return static_cast<int32_t>(std::min<int64_t>(s.length, limit));
}

void KvCache::seq_mark_inexact_from(int32_t seq, int32_t pos) {
  check_seq(seq);
  require(pos >= 0, ErrorCode::kInvalidArgument, "seq_mark_inexact_from: negative position " + std::to_string(pos));
  Sequence& s = seqs_[static_cast<size_t>(seq)];
  const int32_t first = pos / params_.block_tokens;  // the block holding pos
  s.publish_limit = std::min(s.publish_limit, first);
  s.hashes.resize(std::min(s.hashes.size(), static_cast<size_t>(first)));
}

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
  d.tokens = s.tokens;
  d.hashes = s.hashes;
  d.publish_limit = s.publish_limit;
}

void KvCache::clear() {
  for (auto& s : seqs_) {
    s.blocks.clear();  // keeps the reserved capacity
    s.tokens.clear();
    s.hashes.clear();
    s.length = 0;
    s.publish_limit = INT32_MAX;
  }
  pool_.reset();
}

size_t KvCache::offset(int32_t block, int32_t layer, int32_t kv, int32_t head) const {
  // A plane holds n_blocks x T rows; a layer is n_head_kv K planes, then n_head_kv V planes.
  const size_t rows_per_plane = static_cast<size_t>(pool_.n_blocks()) * static_cast<size_t>(params_.block_tokens);
  const size_t k_planes = static_cast<size_t>(params_.n_head_kv) * rows_per_plane * k_row_bytes_;
  const size_t layer_bytes = k_planes + static_cast<size_t>(params_.n_head_kv) * rows_per_plane * v_row_bytes_;
  const size_t rb = row_bytes(kv);
  return static_cast<size_t>(layer) * layer_bytes + (kv == 0 ? 0 : k_planes) +
         (static_cast<size_t>(head) * rows_per_plane + static_cast<size_t>(block) * params_.block_tokens) * rb;
}

uint8_t* KvCache::k_row(int32_t seq, int32_t layer, int32_t head, int32_t pos) {
  const Sequence& s = seqs_[static_cast<size_t>(seq)];
  const int32_t T = params_.block_tokens;
  return pool_.storage() + offset(s.blocks[static_cast<size_t>(pos / T)], layer, 0, head) +
         static_cast<size_t>(pos % T) * k_row_bytes_;
}

uint8_t* KvCache::v_row(int32_t seq, int32_t layer, int32_t head, int32_t pos) {
  const Sequence& s = seqs_[static_cast<size_t>(seq)];
  const int32_t T = params_.block_tokens;
  return pool_.storage() + offset(s.blocks[static_cast<size_t>(pos / T)], layer, 1, head) +
         static_cast<size_t>(pos % T) * v_row_bytes_;
}

const uint8_t* KvCache::k_rows(int32_t block, int32_t layer, int32_t head) const {
  return pool_.storage() + offset(block, layer, 0, head);
}

const uint8_t* KvCache::v_rows(int32_t block, int32_t layer, int32_t head) const {
  return pool_.storage() + offset(block, layer, 1, head);
}

void KvCache::store_row(TensorType type, const float* src, uint8_t* dst) const {
  switch (type) {
    case TensorType::F32:
      std::memcpy(dst, src, sizeof(float) * static_cast<size_t>(params_.head_dim));
      break;
    case TensorType::F16:
      kernels::fp32_to_fp16_row(src, reinterpret_cast<uint16_t*>(dst), params_.head_dim);
      break;
    default:
      kernels::quantize_row(type, src, dst, params_.head_dim);
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

// ---------------------------------------------------------------------------- prefix cache

void KvCache::seq_set_token(int32_t seq, int32_t pos, int32_t token) {
  check_seq(seq);
  Sequence& s = seqs_[static_cast<size_t>(seq)];
  if (pos < 0 || pos >= s.length) {
    throw Error(ErrorCode::kInternal, "KvCache::seq_set_token: position " + std::to_string(pos) +
                                          " outside the sequence's " + std::to_string(s.length));
  }
  s.tokens[static_cast<size_t>(pos)] = token;
}

const std::vector<int32_t>& KvCache::seq_tokens(int32_t seq) const {
  check_seq(seq);
  return seqs_[static_cast<size_t>(seq)].tokens;
}

void KvCache::seq_publish(int32_t seq) {
  check_seq(seq);
  Sequence& s = seqs_[static_cast<size_t>(seq)];
  const size_t T = static_cast<size_t>(params_.block_tokens);
  const size_t n_full = std::min(static_cast<size_t>(s.length) / T, static_cast<size_t>(s.publish_limit));
  while (s.hashes.size() < n_full) {
    const size_t i = s.hashes.size();
    const int32_t* ids = s.tokens.data() + i * T;
    if (std::find(ids, ids + T, -1) != ids + T) return;  // an unknown id ends the chain
    const uint64_t parent = i == 0 ? seed_ : s.hashes[i - 1];
    const uint64_t h = block_chain_hash(parent, ids, T);
    const int32_t b = s.blocks[i];
    if (pool_.register_block(b, h)) {
      std::copy(ids, ids + T, block_ids_.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(b) * T));
      block_parent_[static_cast<size_t>(b)] = parent;
    }
    s.hashes.push_back(h);
  }
}

void KvCache::match_cached(const int32_t* tokens, int32_t n_tokens, int32_t max_blocks, std::vector<int32_t>* blocks,
                           std::vector<uint64_t>* hashes) const {
  const size_t T = static_cast<size_t>(params_.block_tokens);
  uint64_t parent = seed_;
  for (int32_t i = 0; i < max_blocks && static_cast<int64_t>(i + 1) * params_.block_tokens <= n_tokens; ++i) {
    const int32_t* ids = tokens + static_cast<size_t>(i) * T;
    const uint64_t h = block_chain_hash(parent, ids, T);
    const int32_t b = pool_.lookup(h);
    if (b < 0 || block_parent_[static_cast<size_t>(b)] != parent ||
        !std::equal(ids, ids + T, block_ids_.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(b) * T))) {
      return;
    }
    blocks->push_back(b);
    hashes->push_back(h);
    parent = h;
  }
}

int32_t KvCache::cached_prefix_length(const int32_t* tokens, int32_t n_tokens) const {
  std::vector<int32_t> blocks;
  std::vector<uint64_t> hashes;
  match_cached(tokens, n_tokens, n_tokens / params_.block_tokens, &blocks, &hashes);
  return static_cast<int32_t>(blocks.size()) * params_.block_tokens;
}

int32_t KvCache::seq_reuse_prefix(int32_t seq, const int32_t* tokens, int32_t n_tokens, int32_t n_max) {
  check_seq(seq);
  require(n_tokens >= 0 && (n_tokens == 0 || tokens != nullptr), ErrorCode::kInvalidArgument,
          "seq_reuse_prefix: bad token list");
  Sequence& s = seqs_[static_cast<size_t>(seq)];
  n_max = std::max<int32_t>(0, std::min({n_max, n_tokens, params_.n_ctx}));
  // What the sequence holds itself.
  int32_t own = 0;
  while (own < n_max && own < s.length && s.tokens[static_cast<size_t>(own)] >= 0 &&
         s.tokens[static_cast<size_t>(own)] == tokens[own]) {
    ++own;
  }
  // What the cache holds: full blocks up to the one containing position n_max - 1.
  const int32_t T = params_.block_tokens;
  scratch_blocks_.clear();
  scratch_hashes_.clear();
  match_cached(tokens, n_tokens, (n_max + T - 1) / T, &scratch_blocks_, &scratch_hashes_);
  const int32_t cached = std::min<int32_t>(n_max, static_cast<int32_t>(scratch_blocks_.size()) * T);
  if (cached <= own) {
    seq_truncate(seq, own);
    return own;
  }
  // Take the references before releasing the sequence's own blocks (which may be among them).
  for (const int32_t b : scratch_blocks_) pool_.acquire(b);
  seq_clear(seq);
  s.blocks.assign(scratch_blocks_.begin(), scratch_blocks_.end());
  s.hashes.assign(scratch_hashes_.begin(), scratch_hashes_.end());
  s.length = static_cast<int32_t>(scratch_blocks_.size()) * T;
  s.tokens.assign(tokens, tokens + s.length);
  seq_truncate(seq, cached);  // into the last block when n_max ends inside it: copied on growth
  return cached;
}

}  // namespace edgellm
