// A group of matmuls over the same tokens run in one parallel region: the forward passes'
// projections (Q/K/V together, gate/up together, then one at a time). Shared by the decoder's
// ForwardPass and the encoder's EncoderPass.
//
//   1. each distinct (input, activation type) is quantized once into `xq` (Q/K/V read one input,
//      possibly in up to three activation formats in a mixed-quant file); on a tile ISA (AMX)
//      also tiled once into `xt` (kernels.h: tile_activations);
//   2. the rows of all jobs form one range that threads claim from a shared cursor in guided
//      chunks (1/(2 x threads) of what is left, whole 16-row granules, never across two jobs).
// y of a job is [n_tokens, w->n_out], x is [n_tokens, w->n_in].
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "model/model.h"
#include "platform/memory_stats.h"

namespace edgellm {

class ThreadPool;

struct MatmulJob {
  const WeightView* w;
  const float* x;  // [n_tokens, w->n_in]
  float* y;        // [n_tokens, w->n_out]
};

// Quantized-input slots of one group: Q/K/V may use up to three different activation formats
// (e.g. an F16 wq, a Q4_0 wk and a Q6_K wv in a mixed-quant file).
inline constexpr int kMaxMatmulInputs = 3;

// Bytes of one token's quantized input for `w` (its activation row, rounded to 64).
size_t matmul_input_row_bytes(const WeightView& w);
// Bytes of the tiled copies of one group's inputs for `tokens` tokens: one per distinct
// activation type some weight of the group has a tiled form for (Q6_K and Q6_K_X16 share Q8_K,
// only the latter is tiled). 0 on a CPU without tile kernels (all but AMX).
size_t tiled_group_bytes(std::initializer_list<const WeightView*> group, int64_t tokens);

// Runs jobs[0, n_jobs) (1 to kMaxMatmulInputs) on n_tokens rows. `xq` must hold n_slots x
// n_tokens x the widest matmul_input_row_bytes of the group, `xt` the group's tiled bytes
// (else the tiled copy is skipped). Throws Error(kInternal) when xq is too small.
void run_matmul_group(const MatmulJob* jobs, int n_jobs, int32_t n_tokens, AlignedBuffer& xq, AlignedBuffer& xt,
                      ThreadPool& pool, int n_threads);

}  // namespace edgellm
