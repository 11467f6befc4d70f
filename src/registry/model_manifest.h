// One model of the registry: what the file is (name, version, size, SHA-256, weight type) and
// what it was measured to do on this device. Stored as JSON, one file per model version
// (docs/device-fitness.md, "The registry"):
//   {"name": "qwen2.5-0.5b-instruct", "version": "3", "file": "qwen2.5-0.5b-instruct@3.gguf",
//    "size_bytes": 409600000, "sha256": "<64 hex>", "weight_type": "q4_0", "tier": "4GB",
//    "prefill_tokens_per_second": 640.5, "decode_tokens_per_second": 80.1,
//    "task_score": 0.71, "source": "https://example.com/q.gguf"}
// Measurements are 0 and task_score null until measured.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/json.h"

namespace edgellm {

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
  std::optional<double> task_score;      // e.g. ROUGE-L of a task set, in [0, 1]
  std::string source;                    // where it was downloaded from; may be empty

  // "name@version": the key of this model version in the registry and the crash-loop guard.
  std::string key() const { return name + "@" + version; }

  Json to_json() const;
  // Validates every field (Error kInvalidFile naming the field).
  static ModelManifest from_json(const Json& j);
};

// True when s is a valid name or version (see above).
bool is_registry_identifier(std::string_view s);

}  // namespace edgellm
