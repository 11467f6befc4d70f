// RoPE (rotary position embedding) of one head row, shared by the forward pass (rotating Q and K
// at their positions) and the context shift (rotating cached K rows by a position delta).
//
// Pair i of the first n_rot dims (i < n_rot / 2) is rotated by the angle
//   angle_i(pos) = freq_scale * pos * base^(-2i / n_rot) / rope_freqs[i]
// computed as ggml does (base^(-2i/n_rot) by repeated multiplication in float). Pairs are
// (2i, 2i + 1) for RopeStyle::kNormal (llama) and (i, i + n_rot/2) for kNeox (qwen2/qwen3).
// The angle is linear in pos, so R(angle(p)) R(angle(-d)) = R(angle(p - d)) up to rounding: a K
// row stored at position p and rotated by rope_angles(-d) is the row the model computes at p - d.
#pragma once

#include <cstdint>

#include "model/hparams.h"

namespace edgellm {

// cos / sin of the n_rot / 2 angles at `pos` (may be negative: a rotation backwards).
// rope_freqs: the model's [n_rot / 2] llama3 factors, or null.
void rope_angles(const HParams& hp, const float* rope_freqs, float pos, float* cos_out, float* sin_out);

// Rotates the first n_rot dims of one head row in place by the angles of rope_angles.
void rope_rotate(RopeStyle style, int32_t n_rot, const float* cos_a, const float* sin_a, float* row);

}  // namespace edgellm
