// The prefix cache's block identity: a chained 64-bit hash. A full block's hash covers its parent
// block's hash and its token ids, so equal hashes mean equal whole prefixes (the KV of a
// position depends on every token before it). The chain starts from a seed that carries the
// extra keys (model fingerprint, KV type, block size), so blocks of another model or KV type
// never match. 64 bits: a collision is astronomically unlikely, and KvCache still compares the
// parent hash and the token ids of a found block before it uses it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/hash.h"

namespace edgellm {

// Hash of a block: parent hash, then its n token ids in order.
inline uint64_t block_chain_hash(uint64_t parent, const int32_t* tokens, size_t n) {
  uint64_t h = hash_combine(parent, n);
  for (size_t i = 0; i < n; ++i) h = hash_combine(h, static_cast<uint32_t>(tokens[i]));
  return h;
}

}  // namespace edgellm
