// One benchmark request through the InferenceService, waited for on the calling thread: greedy,
// end-of-generation ignored (so exactly n_gen tokens), no deadline. Used by `bench --ttft` and
// `bench-prefix`.
#pragma once

#include <cstdint>
#include <vector>

#include "service/request.h"

namespace edgellm {
class InferenceService;
}

namespace edgellm::bench {

struct ServiceRun {
  std::vector<int32_t> tokens;  // the sampled ids
  RequestStats stats;
};

// Submits `prompt` (token ids) for n_gen tokens and waits for on_finish. Throws the request's
// Error when it ended with one, and what submit() throws (kBusy, kInvalidArgument, ...).
ServiceRun run_greedy_request(InferenceService& service, const std::vector<int32_t>& prompt, int32_t n_gen);

}  // namespace edgellm::bench
