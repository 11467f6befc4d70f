// `edgellm run --parallel N -f prompts.txt`: every line of the file is one prompt, all submitted
// at once to the InferenceService, which decodes up to N of them per forward pass (continuous
// batching, chunked prefill). Shows from the shell what the C ABI does for an app.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/context.h"
#include "engine/sampler.h"
#include "generation_options.h"
#include "model/model.h"

namespace edgellm::cli {

struct ParallelRunOptions {
  std::string model;
  std::vector<std::string> prompts;
  int32_t parallel = 1;       // sequences decoded at once
  int32_t step_tokens = 256;  // batch entries per scheduler step
  int32_t max_tokens = 256;
  int64_t deadline_ms = 0;    // per request; 0: none
  std::vector<std::string> stop;
  bool ignore_eos = false;
  bool no_bos = false;
  bool json = false;          // one JSON line per prompt + a summary line, on stdout
  ContextParams context;
  ModelLoadParams load;
  SamplerParams sampling;     // request i samples with seed + i (distinct outputs for repeated prompts)
  GrammarOptions grammar;     // constrained output, one compiled grammar shared by every request
  // Speculative decoding per request (--spec / --draft-max), and the service's draft model
  // (-md: one draft context per sequence, docs/speculative-decoding.md "In the service").
  SpeculationParams speculation;
  std::string draft_model;
};

// One prompt per non-empty line (a trailing '\r' is dropped). Throws Error(kInvalidArgument)
// when the file holds no prompt.
std::vector<std::string> prompts_from_lines(const std::string& text);

// Returns the process exit code: 0 when every request finished (stop, length), 1 if any
// ended with an error, 130 after Ctrl-C.
int run_parallel(const ParallelRunOptions& o);

}  // namespace edgellm::cli
