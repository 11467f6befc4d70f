// `edgellm plan [MODEL.gguf | NAME[@VERSION] ...]`: which model and configuration fit a device,
// with the memory arithmetic (device/planner.h). Candidates are GGUF files or registry entries
// (--registry DIR; with no candidate given, every installed model); --device this (default), a
// built-in tier (phone-4gb, phone-8gb, phone-12gb, phone-16gb), --all-tiers for the four, or a
// JSON profile file. --with FILE counts an embedder / reranker held beside the model (docqa);
// -md/--model-draft FILE a draft model for speculative decoding (its weights and its own KV).
// --json prints the plan(s) as JSON.
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <sys/stat.h>

#include "cli_args.h"
#include "command.h"
#include "generation_options.h"
#include "core/error.h"
#include "core/json.h"
#include "device/device_profile.h"
#include "device/planner.h"
#include "registry/crash_loop_guard.h"
#include "registry/model_registry.h"

namespace edgellm::cli {
namespace {

int run_plan(const std::vector<std::string>& args) {
  std::vector<std::string> positionals;
  std::string device = "this";
  std::string registry_dir;
  std::string power = "balanced";
  PlanOptions o;
  float headroom = 0.15f;
  bool all_tiers = false;
  bool json = false;
  ArgParser ap("plan", "[MODEL.gguf | NAME[@VERSION] ...] [--device this|phone-8gb|FILE] [--registry DIR] [--json]");
  ap.allow_positionals(&positionals, "MODEL");
  ap.add_custom(shared_option("model"), [&](const std::string& v) { positionals.push_back(v); },
                "a candidate; repeatable, or as arguments");
  ap.add_string("--device", &device, "NAME", "this (default), phone-4gb, phone-8gb, phone-12gb, phone-16gb or a JSON file");
  ap.add_flag("--all-tiers", &all_tiers, "plan for the four built-in phone tiers (instead of --device)");
  ap.add_string(shared_option("registry"), &registry_dir, "candidates by name, crash-loop guard marks");
  ap.add_int(shared_option("ctx-size"), &o.max_ctx, 16, 1 << 20, "wanted; default 4096");
  ap.add_int("--min-ctx", &o.min_ctx, "N", "smallest context worth offering (default 512)", 16, 1 << 20);
  ap.add_int(shared_option("parallel"), &o.n_parallel, 1, 256, "default 1");
  ap.add_float("--headroom", &headroom, "F", "fraction of the budget kept free (default 0.15)", 0.0f, 0.9f);
  ap.add_string(shared_option("power"), &power, "of the plan's threads; default balanced");
  float min_tg = 0;
  ap.add_float("--min-decode-tps", &min_tg, "X", "skip candidates measured to decode slower than X tok/s here", 0.0f);
  ap.add_int("--estimate-prompt", &o.estimate_prompt_tokens, "N", "prompt tokens of the time estimate (default 512)", 0);
  ap.add_int("--estimate-answer", &o.estimate_answer_tokens, "N", "answer tokens of the time estimate (default 128)", 0);
  std::vector<std::string> companions;
  ap.add_strings("--with", &companions, "FILE",
                 "an embedding or reranking model the app holds beside it (counted first; repeatable)");
  add_model_draft_option(ap, &o.draft_model,
                         "a draft model for speculative decoding (run / chat -md) held beside each candidate: its "
                         "weights and its own KV (one sequence of the candidate's context) are counted");
  ap.add_flag(shared_option("json"), &json);
  if (!ap.parse(args)) return 0;
  require(!(all_tiers && ap.seen("--device")), ErrorCode::kInvalidArgument,
          "--device and --all-tiers do not combine: --all-tiers plans for the four phone tiers");
  o.headroom = headroom;
  o.power = parse_power_mode(power);
  o.min_decode_tokens_per_second = min_tg;
  for (const std::string& c : companions) o.companions.push_back({c, c, EmbedderParams{}});

  std::optional<ModelRegistry> registry;
  std::optional<CrashLoopGuard> guard;
  if (!registry_dir.empty()) {
    require_registry(registry_dir);
    registry.emplace(registry_dir);
    guard.emplace(registry->guard_dir());
    o.guard = &*guard;
  }
  std::vector<PlanCandidate> candidates;
  // Registry models are collected first so that their task scores are chosen together
  // (ranking_task_scores: a task score measured on every one of them, else the hand-typed ones).
  std::vector<ModelManifest> manifests;
  std::vector<size_t> manifest_slot;  // candidates index of each manifest
  auto add_manifest = [&](const ModelManifest& m) {
    manifest_slot.push_back(candidates.size());
    manifests.push_back(m);
    candidates.push_back(
        {m.key(), registry->model_path(m), std::nullopt, m.prefill_tokens_per_second, m.decode_tokens_per_second});
  };
  if (positionals.empty()) {
    require(registry.has_value(), ErrorCode::kInvalidArgument,
            "plan needs MODEL files or --registry DIR\n" + ap.usage());
    for (const auto& m : registry->list()) add_manifest(m);
    require(!candidates.empty(), ErrorCode::kInvalidArgument, "the registry '" + registry_dir + "' has no models");
  }
  for (const auto& p : positionals) {
    std::optional<ModelManifest> m;
    if (registry && p.find('/') == std::string::npos && p.find(".gguf") == std::string::npos) m = registry->resolve(p);
    if (m) {
      add_manifest(*m);
    } else {
      // A candidate that is no file is a mistake on the command line, not a plan's answer.
      struct stat st {};
      require(::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode), ErrorCode::kIo,
              "cannot open model '" + p + "'" + (registry ? " (and it is not installed in " + registry_dir + ")" : ""));
      candidates.push_back({p, p, std::nullopt});
    }
  }
  const std::vector<std::optional<double>> scores = ranking_task_scores(manifests);
  for (size_t i = 0; i < manifests.size(); ++i) candidates[manifest_slot[i]].task_score = scores[i];

  std::vector<std::string> devices = {device};
  if (all_tiers) devices = builtin_device_names();
  Json all = Json::array();
  int exit_code = 0;
  for (size_t i = 0; i < devices.size(); ++i) {
    const Plan plan = make_plan(load_device_profile(devices[i]), candidates, o);
    if (!plan.choice) exit_code = kExitNoFit;
    if (json) {
      all.push_back(plan.to_json());
    } else {
      std::printf("%s%s", i ? "\n--------\n\n" : "", plan.to_text().c_str());
    }
  }
  if (json) std::printf("%s\n", (devices.size() == 1 ? all.at(0) : all).dump(2).c_str());
  return exit_code;
}

const CommandRegistration kPlanRegistration("plan",
                                        "recommend a model and configuration for a device, with the memory arithmetic",
                                        run_plan);

}  // namespace
}  // namespace edgellm::cli
