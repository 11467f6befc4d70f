// The row operations of the encoder (encoder_pass.h) that the decoder's kernels do not have:
// LayerNorm with a bias and BERT's GELU. O(n) per token next to O(n^2) matmuls, so plain loops
// the compiler vectorizes rather than per-ISA kernels.
#pragma once

#include <cstdint>

namespace edgellm {

// y = (x - mean(x)) / sqrt(var(x) + eps) * w + b (y may alias x); moments in double, as
// ggml_norm computes them (the mean, then the mean square of the centred values).
void layer_norm(const float* x, const float* w, const float* b, float* y, int64_t n, float eps);

// erf(x) as x * P(x^2) / Q(x^2) on [-4, 4] (clamped outside, where erf rounds to +-1 in float):
// the rational approximation of Eigen's / XLA's float erf. Worst absolute error against
// std::erf in double over [-6, 6]: see tests/engine/test_encoder_ops.cpp.
float erf_approx(float x);

// BERT's GELU, 0.5 x (1 + erf(x / sqrt 2)) (the exact form, not the tanh approximation), in place.
void gelu_erf(float* x, int64_t n);

}  // namespace edgellm
