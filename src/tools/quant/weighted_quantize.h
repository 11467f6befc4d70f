// Quantization with an importance matrix: the block search minimises the rounding error weighted
// per element, as ggml's quantize_row_*_impl do when llama-quantize is given --imatrix, so a file
// we write from an imatrix is the file llama.cpp writes from it (the same searches, constants and
// rounding; see docs/quantization.md for how close the bytes are):
//   Q4_0 / Q5_0  symmetric scale, 19 candidate inverse scales around nmax / max (make_qx_quants),
//                each refitted by weighted least squares; w = imp * sqrt(sigma2 + x^2) with
//                sigma2 the row's mean square;
//   Q4_1 / Q5_1  scale and min, 37 candidates (make_qkx3_quants: rmin -0.9, rdelta 0.05), same w;
//   Q4_K / Q5_K  the same per 32-element sub-block with sigma2 = 2 x the super-block's mean
//                square, then the 6-bit sub-block scales and mins themselves chosen by a
//                weighted search (make_qp_quants, weights = each sub-block's total w);
//   Q6_K         per 16 elements make_qx_quants weighted by imp alone.
// `imp` is the row's column importance (Imatrix::importance: mean x^2 per input column). Q8_0
// and the float types ignore it (ggml has no weighted search for them). Without an importance
// vector every function here is kernels::quantize_row: the bytes of a run without --imatrix do
// not change.
#pragma once

#include <cstdint>

#include "kernels/tensor_type.h"

namespace edgellm::quant {

// True for the types whose quantizer uses the importance (Q4_0 Q4_1 Q5_0 Q5_1 Q4_K Q5_K Q6_K).
bool uses_importance(TensorType type);

// Quantizes one row x[0, n) (n a multiple of the type's block size) into dst. `imp`: n weights,
// one per column, or null for the unweighted reference quantizer.
void quantize_row_weighted(TensorType type, const float* x, void* dst, int64_t n, const float* imp);

// The searches themselves, exposed for the brute-force tests (tests/quant/test_weighted_quantize.cpp).
// make_qx_quants: x ~ scale * (L - nmax), L in [0, 2 nmax); returns scale.
float make_qx_quants_weighted(int n, int nmax, const float* x, int8_t* L, const float* w);
// make_qkx3_quants: x ~ scale * L - min_out, L in [0, nmax]; returns scale, *min_out >= 0.
float make_qkx3_quants(int n, int nmax, const float* x, const float* w, uint8_t* L, float* min_out, float rmin,
                       float rdelta, int nstep);
// make_qp_quants: x (>= 0) ~ scale * L, L in [0, nmax]; returns scale.
float make_qp_quants(int n, int nmax, const float* x, uint8_t* L, const float* w);

}  // namespace edgellm::quant
