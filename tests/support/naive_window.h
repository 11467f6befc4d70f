// The naive reference of the context-shift tests (tests/kv/test_context_shift*.cpp): the logits a
// fresh Context computes for a token list prefilled from scratch at positions 0, 1, ... — what
// a shifted sequence holding those ids (kept prefix + surviving window) is compared with.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/batch.h"
#include "engine/context.h"
#include "model/model.h"

namespace edgellm::test {

// One thread, one sequence, the given KV type and context size.
inline ContextParams window_context_params(TensorType kv_type, int32_t n_ctx) {
  ContextParams cp;
  cp.n_ctx = n_ctx;
  cp.n_batch = 512;
  cp.n_threads = 1;
  cp.kv_type = kv_type;
  return cp;
}

// Logits (n_vocab) of the last of `ids`, prefilled in `ref` (cleared first) at positions 0...
inline std::vector<float> naive_window_logits(Context& ref, const std::vector<int32_t>& ids) {
  ref.clear();
  Batch b;
  b.add_sequence(0, ids, 0);
  ref.decode(b);
  const float* l = ref.logits(0);
  return std::vector<float>(l, l + ref.model().hparams().n_vocab);
}

}  // namespace edgellm::test
