// The planner: given a device and candidate models, recommends the model, context, KV type,
// batch and threads that fit the device's memory budget, and shows the arithmetic (the terms of
// engine/memory_plan.h against the budget). `edgellm plan` prints it; edgellm_plan_json() in the
// C ABI returns it as JSON.
//
// Search (docs/device-fitness.md): candidates are ranked by task score when every one has one,
// else by the bytes of weights they read (a bigger model of a family is the better one). For
// each, configurations are tried from the most capable down — context from the wanted one
// halving to min_ctx; K/V types F16, Q8_0, Q8_0 K with Q4_0 V, then Q4_0 (each step less KV
// memory for a measured quality cost, docs/quantization.md); batch 512 / 256 / 128 — and the first that fits the
// budget and is not marked unfit by the crash-loop guard is that candidate's best. The choice is
// the best-ranked candidate that has one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "device/device_profile.h"
#include "device/power_mode.h"
#include "engine/embedder.h"
#include "engine/memory_plan.h"

namespace edgellm {

class CrashLoopGuard;

struct PlanCandidate {
  std::string label;  // a registry key ("name@version") or the file path
  std::string path;   // the GGUF file
  std::optional<double> task_score;
  // Measured on this device (the registry manifest, `edgellm registry bench`); 0: not measured.
  double prefill_tokens_per_second = 0;
  double decode_tokens_per_second = 0;
};

// A model that runs beside the planned one in the same app: an embedder or a reranker (its own
// Runtime, role embed; docqa uses both). Its memory (plan_embedder_memory) comes off the budget
// before the candidates are fitted.
struct PlanCompanion {
  std::string label;        // shown in the plan
  std::string path;         // the GGUF file
  EmbedderParams embedder;  // its n_ctx / n_batch / threads (defaults: the model's, as the runtime)
};

struct PlanOptions {
  int32_t max_ctx = 4096;  // the context wanted (capped at the model's training context)
  int32_t min_ctx = 512;   // a configuration below this is not offered
  int32_t n_parallel = 1;  // sequences decoded at once (each gets n_ctx of KV)
  double headroom = 0.15;  // fraction of the budget kept free
  PowerMode power = PowerMode::kBalanced;
  const CrashLoopGuard* guard = nullptr;  // configurations it marks unfit are skipped
  // A candidate measured to decode slower than this (tok/s) is not offered (0: no floor; an
  // unmeasured candidate is never rejected for speed).
  double min_decode_tokens_per_second = 0;
  // The request the time estimates are for: prompt tokens prefilled, answer tokens decoded.
  int32_t estimate_prompt_tokens = 512;
  int32_t estimate_answer_tokens = 128;
  std::vector<PlanCompanion> companions;  // models held beside the candidate (counted first)
  // A draft model for speculative decoding held beside every candidate (`edgellm plan -md`):
  // counted per configuration (MemoryPlan::draft), since its KV follows the candidate's n_ctx;
  // n_parallel draft contexts (the service keeps one per sequence slot), its weights once.
  // It must share the candidates' vocabulary to be used (not checked here). Empty: none.
  std::string draft_model;
};

// A companion's memory, or why it could not be planned (it then counts as 0 and the plan says so).
struct CompanionPlan {
  std::string label, path;
  MemoryPlan memory;
  std::string error;
};

struct PlanOption {
  std::string label, path;
  std::string weight_type;               // dominant matrix type of the file
  double prefill_tokens_per_second = 0;  // measured (PlanCandidate); 0: not measured
  double decode_tokens_per_second = 0;
  int32_t n_ctx = 0;
  TensorType kv_type = TensorType::F16;    // K cache type
  TensorType kv_type_v = TensorType::F16;  // V cache type
  int32_t n_batch = 0;
  MemoryPlan memory;
  bool fits = false;
  std::string rejected;   // why this candidate has no configuration ("" when fits)
  std::string guard_key;  // the crash-loop guard's key for this configuration
};

struct Plan {
  DeviceProfile device;
  double headroom = 0;
  int32_t estimate_prompt_tokens = 0, estimate_answer_tokens = 0;
  uint64_t budget_bytes = 0;  // the device's budget; candidates get it less companion_bytes
  std::vector<CompanionPlan> companions;
  uint64_t companion_bytes = 0;
  std::string draft_model;  // PlanOptions::draft_model
  PowerMode power = PowerMode::kBalanced;
  ThreadPlan threads;
  std::optional<PlanOption> choice;
  std::vector<PlanOption> considered;  // every candidate, ranked, with its best or why none

  Json to_json() const;
  std::string to_text() const;  // the arithmetic, term by term in MiB
};

// Key of a configuration for the crash-loop guard: "<label>/ctx=<n>/kv=<type>" (K = V) or
// "<label>/ctx=<n>/kv=<K type>-<V type>", with the label's characters outside [A-Za-z0-9._@=-]
// replaced by '_'.
std::string plan_guard_key(const std::string& label, int32_t n_ctx, TensorType kv_type, TensorType kv_type_v);
inline std::string plan_guard_key(const std::string& label, int32_t n_ctx, TensorType kv_type) {
  return plan_guard_key(label, n_ctx, kv_type, kv_type);
}
// The K/V types the planner tries at each context, most capable first.
struct KvTypePair {
  TensorType k, v;
};
const std::vector<KvTypePair>& plan_kv_ladder();

// Never throws for a candidate that cannot be loaded (it is listed with the reason); throws
// Error(kInvalidArgument) for bad options or no candidates, and the load's error (naming the
// file) for a draft model that cannot be loaded.
Plan make_plan(const DeviceProfile& device, const std::vector<PlanCandidate>& candidates, const PlanOptions& options);

}  // namespace edgellm
