// The InferenceService's record of one accepted request, from submit() to on_finish: shared by
// the files that implement the service (inference_service.cpp: submit and the callers' calls;
// inference_scheduler.cpp: the loop; inference_admission.cpp; inference_step.cpp: the step;
// inference_finish.cpp: the end). Private to src/service. Scheduler thread only once queued.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/sampler.h"
#include "generation/sequence_generator.h"
#include "service/classify_job.h"
#include "service/inference_service.h"
#include "service/request.h"
#include "service/sequence_speculation.h"

namespace edgellm {

using Clock = std::chrono::steady_clock;

struct InferenceService::Live {
  RequestId id = 0;
  ServiceRequest req;
  Clock::time_point submitted;
  Clock::time_point deadline = Clock::time_point::max();
  Clock::time_point admitted;
  Clock::time_point first_token;
  std::unique_ptr<Sampler> sampler;  // built (validated) at submit
  std::vector<int32_t> prompt;       // tokenized at admission
  bool prepared = false;
  std::unique_ptr<SequenceGenerator> gen;
  int32_t seq = -1;
  int32_t reserved_blocks = 0;
  int32_t cached_tokens = 0;  // prompt positions taken from the prefix cache
  int32_t events = 0;
  size_t sanitized_chars = 0;  // characters the input policy's kStrip changed
  ErrorCode error_code = ErrorCode::kInternal;
  std::string error_message;
  // Speculative decoding (sequence_speculation.h): the drafter and back-off of a request that
  // speculates (null otherwise), why a request that asked for it does not, and the decode
  // phase's counters (every request: tokens per forward is 1 without speculation).
  std::unique_ptr<SequenceSpeculation> spec;
  std::string spec_off_reason;
  SpeculationStats spec_stats;
  // A classify request (submit_classify): no sampler, generator or sequence of its own.
  std::unique_ptr<ClassifyJob> classify;
};

}  // namespace edgellm
