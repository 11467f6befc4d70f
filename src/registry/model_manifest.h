// One model of the registry: what the file is (name, version, size, SHA-256, weight type) and
// what it was measured to do on this device. Stored as JSON, one file per model version
// (docs/device-fitness.md, "The registry"):
//   {"name": "qwen2.5-0.5b-instruct", "version": "3", "file": "qwen2.5-0.5b-instruct@3.gguf",
//    "size_bytes": 409600000, "sha256": "<64 hex>", "weight_type": "q4_0", "tier": "4GB",
//    "prefill_tokens_per_second": 640.5, "decode_tokens_per_second": 80.1,
//    "task_score": 0.71, "source": "https://example.com/q.gguf",
//    "task_scores": [{"task_file": "summaries.jsonl", "task_file_sha256": "<64 hex>",
//                     "metric": "rougeL", "value": 0.4123, "cases": 300,
//                     "date": "2026-12-06T10:20:30Z"}]}
// Measurements are 0 and task_score null until measured. task_scores are written by
// `edgellm eval --registry DIR --model NAME@VERSION` (docs/eval.md); a manifest without the field
// (written before it existed) reads as having none, and one with it still has every old field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"

namespace edgellm {

// One measured task score: a metric of `edgellm eval` over a task file, identified by the file's
// SHA-256 (two task sets with the same name are not the same measurement).
struct TaskScore {
  std::string task_file;         // the file's name when measured (for a reader; not an identity)
  std::string task_file_sha256;  // 64 lower-case hex digits
  std::string metric;            // rouge1, rouge2, rougeL, bleu, exact_match, f1, accuracy ([A-Za-z0-9._-])
  double value = 0;              // finite
  int64_t cases = 0;             // cases the value is computed over
  std::string date;              // ISO 8601 UTC of the evaluation

  Json to_json() const;
  static TaskScore from_json(const Json& j);  // Error kInvalidFile naming the field
};

inline constexpr size_t kMaxTaskScores = 256;  // per manifest: older entries are dropped beyond it

struct ModelManifest {
  std::string name;     // [A-Za-z0-9._-], 1-64 characters, not starting with '.'
  std::string version;  // the same alphabet
  std::string file;     // file name inside the registry's models/ folder
  uint64_t size_bytes = 0;
  std::string sha256;       // 64 lower-case hex digits
  std::string weight_type;  // the file's dominant tensor type (tensor_type_name: "q4_0", "q4_K", "f32", ...)
  std::string tier;         // device tier it is meant for ("4GB", "8GB", ...); may be empty
  double prefill_tokens_per_second = 0;  // measured here; 0: not measured
  double decode_tokens_per_second = 0;
  std::optional<double> task_score;      // a hand-typed score in [0, 1] (`registry add --task-score`)
  std::vector<TaskScore> task_scores;    // measured by `edgellm eval`, oldest first
  std::string source;                    // where it was downloaded from; may be empty

  // Adds or replaces (same task file SHA-256 and metric) measured scores; keeps the newest
  // kMaxTaskScores.
  void record_task_scores(const std::vector<TaskScore>& scores);
  // The measured value of (task file SHA-256, metric), if any.
  std::optional<double> task_score_for(const std::string& task_file_sha256, const std::string& metric) const;

  // "name@version": the key of this model version in the registry and the crash-loop guard.
  std::string key() const { return name + "@" + version; }

  Json to_json() const;
  // Validates every field (Error kInvalidFile naming the field).
  static ModelManifest from_json(const Json& j);
};

// The scores the planner ranks these manifests by (device/planner.h ranks by task score only
// when every candidate has one): when one (task file SHA-256, metric) was measured on every
// manifest, its values (the pair measured most recently if several; ties by metric name), each
// manifest's hand-typed task_score otherwise. One entry per manifest, in order.
std::vector<std::optional<double>> ranking_task_scores(const std::vector<ModelManifest>& manifests);

// True when s is a valid name or version (see above).
bool is_registry_identifier(std::string_view s);

}  // namespace edgellm
