#include "support/prompt_logits.h"

#include "engine/context.h"
#include "model/model.h"

namespace edgellm::test {

std::vector<float> prompt_and_step_logits(const Model& model, int steps) {
  ContextParams p;
  p.n_ctx = 64;
  p.n_batch = 16;
  p.n_threads = 2;
  p.kv_type = TensorType::F32;
  Context ctx(model, p);
  const int32_t nv = model.hparams().n_vocab;
  std::vector<int32_t> prompt;
  for (int i = 0; i < 21; ++i) prompt.push_back((i * 37 + 5) % nv);
  Batch b;
  b.add_sequence(0, prompt, 0);
  ctx.decode(b);
  std::vector<float> out(ctx.logits(0), ctx.logits(0) + nv);
  int32_t pos = static_cast<int32_t>(prompt.size());
  for (int step = 0; step < steps; ++step) {
    Batch one;
    one.add(0, (step * 11 + 3) % nv, pos++, true);
    ctx.decode(one);
    out.insert(out.end(), ctx.logits(0), ctx.logits(0) + nv);
  }
  return out;
}

}  // namespace edgellm::test
