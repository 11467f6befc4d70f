// A 64-bit non-cryptographic hash mixer (identity of model files, prefix-cache blocks, session
// checksums): splitmix64's finaliser, a bijection with full avalanche.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace edgellm {

inline uint64_t hash_mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

inline uint64_t hash_combine(uint64_t h, uint64_t v) { return hash_mix(h ^ hash_mix(v + 0x632be59bd9b4e019ULL)); }

// Hash of n bytes (length included), continuing from h.
inline uint64_t hash_bytes(uint64_t h, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  h = hash_combine(h, n);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v = 0;
    std::memcpy(&v, p + i, 8);
    h = hash_combine(h, v);
  }
  uint64_t tail = 0;
  if (n > i) std::memcpy(&tail, p + i, n - i);
  return hash_combine(h, tail);
}

}  // namespace edgellm
