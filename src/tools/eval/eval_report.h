// The report of `edgellm eval` (docs/eval.md): one model's scores, or a model against a base
// (e.g. a quantized file against its F32 / F16 original) on the same cases: score deltas, the
// cases whose output changed (sorted by the change of their primary score, worst first), every
// case's outputs and scores. As JSON (report_json: everything, and what
// scripts/eval-chart.py draws) and Markdown (report_markdown: for a reader).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "tools/eval/task_file.h"
#include "tools/eval/task_runner.h"
#include "tools/eval/task_scores.h"

namespace edgellm::eval {

struct ModelEvaluation {
  std::string label;  // what the report calls it: "base" or "model"
  ModelRun run;
  ScoreSet scores;
};

struct EvalReport {
  std::string date;  // ISO 8601 UTC, when the evaluation ended
  TaskFile tasks;
  GenerationSettings settings;
  BleuSmoothing smoothing = BleuSmoothing::kMethod1;
  std::optional<ModelEvaluation> base;
  ModelEvaluation model;
  // Prompts, messages and references are written as "sha256:<first 16 hex> (<N> bytes)"
  // instead of their text (outputs stay): for a report published next to code when the task
  // text may not be (docs/eval-example/ is built from test data that stays outside the repo).
  bool redact_inputs = false;
};

struct ChangedCase {
  size_t index = 0;  // into tasks.cases
  double base_primary = 0, model_primary = 0;
  double delta() const { return model_primary - base_primary; }
};
// Cases whose generated text differs between base and model (empty without a base), sorted by
// delta ascending (the largest loss first), then by index.
std::vector<ChangedCase> changed_cases(const EvalReport& report);

Json report_json(const EvalReport& report);
// max_rows bounds the changed-case and per-case tables (the JSON has every case).
std::string report_markdown(const EvalReport& report, size_t max_rows = 200);

// "2026-12-06T10:20:30Z" for now.
std::string utc_timestamp();

}  // namespace edgellm::eval
