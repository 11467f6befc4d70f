#include "tools/synth/weight_generator.h"

#include <cmath>

// The file bytes must not depend on the compiler contracting mean + x * scale into an FMA (clang
// does by default when FMA is enabled, e.g. with EDGELLM_NATIVE); GCC never contracts in ISO mode.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

namespace edgellm::synth {
namespace {

// SplitMix64's output function: a bijective avalanche mix of a 64-bit counter.
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

uint64_t tensor_stream_id(std::string_view tensor_name) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a 64 offset basis
  for (const char c : tensor_name) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;  // FNV-1a 64 prime
  }
  return h;
}

void fill_gaussian(uint64_t seed, uint64_t stream, uint64_t first, float mean, float stddev, float* out, int64_t n) {
  // Sum of four U(0,1) has mean 2 and variance 4/12; the 16-bit lanes are summed as integers
  // (mean 2 * 65535, variance 4 * 65536^2 / 12) and scaled once.
  constexpr double kLaneMax = 65535.0;
  const float scale = static_cast<float>(stddev * std::sqrt(3.0) / kLaneMax);
  const float center = static_cast<float>(2.0 * kLaneMax);
  const uint64_t key = mix64(seed ^ mix64(stream + 0x9e3779b97f4a7c15ULL));
  for (int64_t k = 0; k < n; ++k) {
    const uint64_t r = mix64(key + (first + static_cast<uint64_t>(k)) * 0x9e3779b97f4a7c15ULL);
    const uint32_t sum = static_cast<uint32_t>(r & 0xffff) + static_cast<uint32_t>((r >> 16) & 0xffff) +
                         static_cast<uint32_t>((r >> 32) & 0xffff) + static_cast<uint32_t>(r >> 48);
    out[k] = mean + (static_cast<float>(sum) - center) * scale;
  }
}

}  // namespace edgellm::synth
