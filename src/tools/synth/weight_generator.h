// Deterministic pseudo-random weights for synthetic models. Counter-based: the value of element
// i of a tensor is a pure function of (seed, tensor stream id, i), so any row range can be made
// by any thread in any order and the file bytes never depend on the thread count.
#pragma once

#include <cstdint>
#include <string_view>

namespace edgellm::synth {

// The stream id of a tensor: a 64-bit FNV-1a hash of its name.
uint64_t tensor_stream_id(std::string_view tensor_name);

// out[k] = mean + stddev * g(seed, stream, first + k) for k in [0, n), where g is approximately
// standard normal (an Irwin-Hall sum of four 16-bit uniforms, scaled to unit variance: values in
// [-2*sqrt(3), 2*sqrt(3)], no outliers that would make quantization scales unrepresentative).
void fill_gaussian(uint64_t seed, uint64_t stream, uint64_t first, float mean, float stddev, float* out, int64_t n);

}  // namespace edgellm::synth
