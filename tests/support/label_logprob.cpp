#include "support/label_logprob.h"

#include <algorithm>
#include <cmath>

#include "engine/context.h"
#include "model/model.h"

namespace edgellm::test {

double naive_label_logprob(const Model& model, const std::vector<int32_t>& prompt, const std::vector<int32_t>& label) {
  ContextParams cp;
  cp.n_ctx = 512;
  cp.n_threads = 1;
  cp.kv_type = TensorType::F32;
  Context ctx(model, cp);
  std::vector<int32_t> all = prompt;
  all.insert(all.end(), label.begin(), label.end());
  Batch b;
  const auto n_prompt = static_cast<int32_t>(prompt.size());
  const auto n_all = static_cast<int32_t>(all.size());
  for (int32_t i = 0; i < n_all; ++i) b.add(0, all[static_cast<size_t>(i)], i, i >= n_prompt - 1 && i < n_all - 1);
  ctx.decode(b);
  const int32_t n_vocab = model.hparams().n_vocab;
  double sum = 0;
  for (size_t j = 0; j < label.size(); ++j) {
    const float* row = ctx.logits(static_cast<int32_t>(j));
    double max = row[0];
    for (int32_t v = 1; v < n_vocab; ++v) max = std::max(max, static_cast<double>(row[v]));
    double z = 0;
    for (int32_t v = 0; v < n_vocab; ++v) z += std::exp(static_cast<double>(row[v]) - max);
    sum += static_cast<double>(row[label[j]]) - (max + std::log(z));
  }
  return sum;
}

}  // namespace edgellm::test
