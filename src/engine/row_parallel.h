#pragma once
// Shared by the decoder and encoder passes (forward.cpp, forward_attention.cpp, encoder_pass.cpp,
// matmul_group.cpp): when a row-wise op is worth a parallel region, and buffer sizes in bytes.
#include <cstddef>
#include <cstdint>

namespace edgellm {

// Below this many rows (tokens) a row-wise op (norm, rope, bias, residual, activation) is not
// worth a parallel region: the fork/join costs more than the work.
inline constexpr int32_t kParallelRowsMin = 4;

// Bytes of `n` floats (arena sizes, memset lengths).
constexpr size_t float_bytes(int64_t n) { return static_cast<size_t>(n) * sizeof(float); }

}  // namespace edgellm
