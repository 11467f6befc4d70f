// Generates the outputs of a task file's cases with one model, through the InferenceService
// (service/inference_service.h): every case is submitted at once and up to `parallel` of them
// are decoded in the same forward passes (continuous batching), greedy by default. A case's
// output does not depend on which others share its batch (service_test_batching_exact; the eval
// test checks --parallel 1 against 3), so a run is deterministic.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/context.h"
#include "engine/sampler.h"
#include "generation/generate.h"
#include "model/model.h"
#include "tools/eval/task_file.h"

namespace edgellm::eval {

struct GenerationSettings {
  int32_t max_tokens = 128;       // a case's max_tokens overrides it
  std::vector<std::string> stop;  // a case's stop overrides it
  SamplerParams sampling = greedy_sampling();
  int32_t parallel = 4;       // sequences decoded at once
  int32_t step_tokens = 256;  // batch entries per scheduler step
  ContextParams context;      // n_ctx 0: the model's (capped at 4096)
  ModelLoadParams load;
  const std::atomic<bool>* cancel = nullptr;  // set: every request is cancelled, run_cases throws kCancelled

  static SamplerParams greedy_sampling() {
    SamplerParams s;
    s.temperature = 0;
    s.seed = 0;
    return s;
  }
};

struct CaseOutput {
  std::string text;
  FinishReason finish_reason = FinishReason::kError;
  std::string error;  // set when finish_reason is kError (the case then scores as an empty output)
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;
  // Accuracy cases with labels (classification.h's classify_request): the label the classify
  // chose by likelihood, which scores the case; the greedy text above is kept for the report.
  std::optional<std::string> classified_label;
};

struct ModelRun {
  std::string model_path;
  std::vector<CaseOutput> outputs;  // one per case, in task-file order
  double load_seconds = 0;
  double generate_seconds = 0;  // first submit to last result
  int64_t prompt_tokens = 0, completion_tokens = 0;
  size_t peak_rss_bytes = 0;
  int32_t errors = 0;
};

// Loads `model_path`, runs every case (and classifies the accuracy cases with labels through
// the service: InferenceService::submit_classify), shuts the service down. on_done(i, output) runs on the
// service's scheduler thread as case i finishes (progress display; must not block). Throws what
// InferenceService::open throws, and Error(kCancelled) when settings.cancel was set.
ModelRun run_cases(const std::string& model_path, const std::vector<EvalCase>& cases,
                   const GenerationSettings& settings,
                   const std::function<void(size_t index, const CaseOutput& output)>& on_done = {});

}  // namespace edgellm::eval
