// `edgellm eval -m MODEL -f TASKS.jsonl [--base BASE] [-o DIR] [--registry DIR] [options]`:
// task quality of a model (ROUGE, BLEU, exact match / F1, accuracy: src/tools/eval/), and with
// --base the same cases on a base model (a quantized file against its original): score deltas,
// the cases whose output changed, every case's outputs. docs/eval.md.
//
//   -o DIR      writes DIR/report.json (everything; scripts/eval-chart.py draws DIR/report.png
//               from it) and DIR/report.md
//   --registry  -m / --base may name installed models (NAME or NAME@VERSION, verified before
//               use); the scores of -m are then recorded in its manifest (task file SHA-256,
//               metric, value, cases, date), which `registry list` shows and `plan` ranks by
// Exit status: 0, 1 on an error or when a case's generation failed (the report is written and
// names it), 130 after Ctrl-C.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <fstream>
#include <string>
#include <vector>

#include "cli_args.h"
#include "command.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/json.h"
#include "generation_options.h"
#include "interrupt.h"
#include "registry/model_registry.h"
#include "tools/eval/eval_report.h"
#include "tools/eval/task_runner.h"

namespace edgellm::cli {
namespace {

struct ModelChoice {
  std::string path;
  std::optional<ModelManifest> manifest;  // set when resolved from the registry
};

// A path, or with a registry an installed NAME / NAME@VERSION (the rule `edgellm plan` uses: no
// '/' and no ".gguf" in it).
ModelChoice resolve_model(const std::string& what, ModelRegistry* registry) {
  ModelChoice c;
  if (registry != nullptr && what.find('/') == std::string::npos && what.find(".gguf") == std::string::npos) {
    c.manifest = registry->resolve(what);
    require(c.manifest.has_value(), ErrorCode::kInvalidArgument,
            "'" + what + "' is not installed in the registry '" + registry->root() + "'");
    c.path = registry->path_for_load(c.manifest->key());
    return c;
  }
  c.path = what;
  return c;
}

eval::ModelEvaluation evaluate(const std::string& label, const std::string& path, const eval::TaskFile& tasks,
                               const eval::GenerationSettings& settings, eval::BleuSmoothing smoothing) {
  const bool tty = isatty(STDERR_FILENO) != 0;
  size_t finished = 0;  // the scheduler thread's only (on_done runs there)
  std::fprintf(stderr, "eval: %s: %s, %zu cases\n", label.c_str(), path.c_str(), tasks.cases.size());
  eval::ModelEvaluation m;
  m.label = label;
  m.run = eval::run_cases(path, tasks.cases, settings, [&](size_t, const eval::CaseOutput&) {
    ++finished;
    if (tty) std::fprintf(stderr, "\r  %zu / %zu", finished, tasks.cases.size());
  });
  if (tty) std::fprintf(stderr, "\r\033[K");
  std::fprintf(stderr, "  %lld tokens generated in %.2f s (%.1f tok/s), %d errors\n",
               static_cast<long long>(m.run.completion_tokens), m.run.generate_seconds,
               m.run.generate_seconds > 0 ? static_cast<double>(m.run.completion_tokens) / m.run.generate_seconds : 0.0,
               m.run.errors);
  std::vector<std::string> texts;
  std::vector<std::optional<std::string>> classified;
  texts.reserve(m.run.outputs.size());
  classified.reserve(m.run.outputs.size());
  for (const eval::CaseOutput& o : m.run.outputs) {
    texts.push_back(o.text);
    classified.push_back(o.classified_label);
  }
  m.scores = eval::score_outputs(tasks.cases, texts, smoothing, classified);
  return m;
}

void print_summary(const eval::EvalReport& r) {
  const auto find = [](const eval::ScoreSet& s, const std::string& name) -> const eval::MetricValue* {
    for (const auto& v : s.metrics) {
      if (v.name == name) return &v;
    }
    return nullptr;
  };
  if (r.base) {
    std::printf("%-12s %6s %10s %10s %10s\n", "metric", "cases", "base", "model", "delta");
  } else {
    std::printf("%-12s %6s %10s\n", "metric", "cases", "model");
  }
  for (const auto& v : r.model.scores.metrics) {
    if (r.base) {
      const eval::MetricValue* b = find(r.base->scores, v.name);
      std::printf("%-12s %6lld %10.4f %10.4f %+10.4f\n", v.name.c_str(), static_cast<long long>(v.cases),
                  b ? b->value : 0.0, v.value, b ? v.value - b->value : 0.0);
    } else {
      std::printf("%-12s %6lld %10.4f\n", v.name.c_str(), static_cast<long long>(v.cases), v.value);
    }
  }
  if (r.base) {
    const auto changed = eval::changed_cases(r);
    size_t worse = 0;
    for (const auto& c : changed) worse += c.delta() < 0 ? 1 : 0;
    std::printf("changed outputs: %zu of %zu cases (%zu scored lower)\n", changed.size(), r.tasks.cases.size(), worse);
  }
}

int eval_command(const std::vector<std::string>& args) {
  std::string model, base, tasks_path, out_dir, registry_dir, smoothing = "method1";
  eval::GenerationSettings settings;
  ContextOptions ctx;
  int64_t seed = 0;
  int32_t max_rows = 200;
  bool json = false, redact = false;
  ArgParser ap("eval", "-m MODEL -f TASKS.jsonl [--base BASE] [-o DIR] [--registry DIR] [options]");
  ap.add_string(shared_option("model"), &model, "the model to evaluate; with --registry NAME[@VERSION]");
  ap.add_string("-f,--tasks", &tasks_path, "FILE", "task file (JSON Lines, docs/eval.md)");
  ap.add_string("--base", &base, "MODEL", "also evaluate this model and compare (e.g. the unquantized original)");
  ap.add_string("-o,--output", &out_dir, "DIR", "write DIR/report.json and DIR/report.md");
  ap.add_string(shared_option("registry"), &registry_dir, "the scores of -m are recorded in its manifest");
  ap.add_int("-n,--max-tokens", &settings.max_tokens, "N", "tokens per case unless the case says (default 128)", 1,
             32768);
  ap.add_strings("--stop", &settings.stop, "STR", "stop string unless the case gives its own (repeatable)");
  ap.add_int(shared_option("parallel"), &settings.parallel, 1, 256, "cases decoded at once; default 4");
  ap.add_float("--temp", &settings.sampling.temperature, "T", "temperature; 0 = greedy (default 0)", 0.0);
  ap.add_custom(
      shared_option("seed"), [&](const std::string& v) { seed = parse_int(v, "--seed", 0, static_cast<int64_t>(UINT32_MAX)); },
      "when --temp > 0; default 0");
  ap.add_string("--bleu-smoothing", &smoothing, "M", "NLTK SmoothingFunction method0..method3 (default method1)");
  ap.add_int("--max-rows", &max_rows, "N", "rows of the Markdown case tables (default 200)", 1);
  add_context_options(ap, &ctx);
  add_kv_type_options(ap, &ctx.kv);
  ap.add_flag("--redact-inputs", &redact, "report prompts and references as SHA-256 prefixes, not text");
  ap.add_flag(shared_option("json"), &json, "the report instead of the summary");
  if (!ap.parse(args)) return 0;
  require(!model.empty(), ErrorCode::kInvalidArgument, "-m MODEL is required");
  require(!tasks_path.empty(), ErrorCode::kInvalidArgument, "-f TASKS.jsonl is required");
  settings.sampling.seed = static_cast<uint64_t>(seed);
  const eval::BleuSmoothing bleu_smoothing = eval::parse_bleu_smoothing(smoothing);
  settings.context = context_params(ctx);
  settings.load = model_load_params(ctx);
  settings.cancel = interrupt_flag();

  // Everything that can be refused is checked before the first model loads.
  const eval::TaskFile tasks = eval::read_task_file(tasks_path);
  std::optional<ModelRegistry> registry;
  if (!registry_dir.empty()) {
    require_registry(registry_dir);  // read, never created, by a command that evaluates from it
    registry.emplace(registry_dir);
  }
  const ModelChoice target = resolve_model(model, registry ? &*registry : nullptr);
  std::optional<ModelChoice> base_choice;
  if (!base.empty()) base_choice = resolve_model(base, registry ? &*registry : nullptr);
  if (!out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(out_dir, ec);
    require(!ec, ErrorCode::kIo, "cannot create the output folder '" + out_dir + "': " + ec.message());
  }

  eval::EvalReport report;
  report.tasks = tasks;
  report.settings = settings;
  report.smoothing = bleu_smoothing;
  report.redact_inputs = redact;
  try {
    const SigintScope sigint;  // Ctrl-C cancels the generation in flight
    if (base_choice) report.base = evaluate("base", base_choice->path, tasks, settings, bleu_smoothing);
    report.model = evaluate("model", target.path, tasks, settings, bleu_smoothing);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kCancelled && interrupt_flag()->load()) {
      std::fprintf(stderr, "edgellm eval: cancelled\n");
      return 130;
    }
    throw;
  }
  report.date = eval::utc_timestamp();

  const Json j = eval::report_json(report);
  if (!out_dir.empty()) {
    write_file_atomic(out_dir + "/report.json", j.dump(2) + "\n");
    write_file_atomic(out_dir + "/report.md", eval::report_markdown(report, static_cast<size_t>(max_rows)));
    std::fprintf(stderr,
                 "eval: wrote %s/report.json and %s/report.md (chart: python3 scripts/eval-chart.py %s/report.json)\n",
                 out_dir.c_str(), out_dir.c_str(), out_dir.c_str());
  }
  if (target.manifest) {
    std::vector<TaskScore> scores;
    const std::string file_name = std::filesystem::path(tasks.path).filename().string();
    for (const eval::MetricValue& v : report.model.scores.metrics) {
      scores.push_back({file_name, tasks.sha256, v.name, v.value, v.cases, report.date});
    }
    registry->record_task_scores(target.manifest->name, target.manifest->version, scores);
    std::fprintf(stderr, "eval: recorded %zu task scores for %s in %s\n", scores.size(), target.manifest->key().c_str(),
                 registry_dir.c_str());
  }
  if (json) {
    std::printf("%s\n", j.dump().c_str());
  } else {
    print_summary(report);
  }
  std::fflush(stdout);
  const int errors = report.model.run.errors + (report.base ? report.base->run.errors : 0);
  if (errors > 0) {
    std::fprintf(stderr, "edgellm eval: %d case(s) failed to generate (their errors are in the report)\n", errors);
    return 1;
  }
  return 0;
}

const CommandRegistration kEvalRegistration("eval", "task quality (ROUGE, BLEU, EM/F1, accuracy), a model vs its base",
                                        eval_command);

}  // namespace
}  // namespace edgellm::cli
