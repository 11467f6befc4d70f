// The logits a model computes for a fixed token script, for tests that compare two loads of one
// model (repacked vs file layout, pack file vs repacked at load): a 21-token prompt run as two
// chunks (16-token tiles and a 5-token remainder, n_batch 16) on 2 threads with an F32 KV cache,
// then `steps` single-token decode steps. Returns the prompt's last logits and each step's,
// concatenated (n_vocab x (1 + steps) floats).
#pragma once

#include <vector>

namespace edgellm {
class Model;
}

namespace edgellm::test {

std::vector<float> prompt_and_step_logits(const Model& model, int steps);

}  // namespace edgellm::test
