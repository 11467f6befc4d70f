// The independent reference of classification by label likelihood (generation/label_scorer,
// Runtime::classify, POST /v1/classify): log P(label | prompt) the slow obvious way, prompt and
// label through a fresh Context in one forward (F32 KV, 1 thread), logits at every position from
// the prompt's last, each label token's log-softmax in double, summed.
#pragma once

#include <cstdint>
#include <vector>

namespace edgellm {
class Model;
}

namespace edgellm::test {

// prompt + label must fit 512 positions.
double naive_label_logprob(const Model& model, const std::vector<int32_t>& prompt, const std::vector<int32_t>& label);

}  // namespace edgellm::test
