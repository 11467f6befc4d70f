#include "tools/bench/prefill_ops.h"

#include <string>

#include "core/error.h"
#include "model/model.h"

namespace edgellm::bench {

PrefillShape prefill_shape(const Model& model) {
  PrefillShape s;
  const std::vector<const WeightView*> matrices = model.matrices();
  for (size_t i = 0; i < matrices.size(); ++i) {
    const WeightView& w = *matrices[i];
    if (!w.present()) continue;
    s.matrices.push_back({w.n_in, w.n_out, /*head=*/&w == &model.output(), w.type});
  }
  const HParams& hp = model.hparams();
  s.n_layer = hp.n_layer;
  s.n_head = hp.n_head;
  s.head_dim = hp.head_dim;
  return s;
}

PrefillOps count_prefill_ops(const PrefillShape& shape, int64_t n_tokens, int64_t n_logits, int64_t n_depth) {
  require(n_tokens >= 0 && n_depth >= 0 && n_logits >= 0 && n_logits <= n_tokens, ErrorCode::kInvalidArgument,
          "prefill op count needs 0 <= n_logits (" + std::to_string(n_logits) + ") <= n_tokens (" +
              std::to_string(n_tokens) + ") and n_depth >= 0 (" + std::to_string(n_depth) + ")");
  PrefillOps ops;
  ops.int8 = true;
  for (const MatmulShape& m : shape.matrices) {
    const double macs = static_cast<double>(m.n_in) * static_cast<double>(m.n_out);
    if (m.head) {
      ops.head_ops += 2.0 * macs * static_cast<double>(n_logits);
    } else {
      ops.matmul_ops += 2.0 * macs * static_cast<double>(n_tokens);
      ops.int8 = ops.int8 && tensor_type_traits(m.type).is_quantized;
    }
  }
  ops.matmul_ops += ops.head_ops;
  // Token i (0-based) sits at position n_depth + i and attends to n_depth + i + 1 positions.
  const double n = static_cast<double>(n_tokens);
  const double pairs = n * static_cast<double>(n_depth) + n * (n + 1) / 2;
  ops.attention_ops = 2.0 * 2.0 * static_cast<double>(shape.n_layer) * static_cast<double>(shape.n_head) *
                      static_cast<double>(shape.head_dim) * pairs;
  return ops;
}

}  // namespace edgellm::bench
