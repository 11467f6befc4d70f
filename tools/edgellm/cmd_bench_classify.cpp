// `edgellm bench-classify`: what scoring N labels costs against one (generation/label_scorer.h).
// Per repetition, a fresh random prompt of --prompt tokens and --labels labels of --label-tokens
// random tokens each; score_labels runs the prompt with 1 label and with all of them, in
// alternating order (paired, one process), each in a Context sized to the call (the
// scorer's cost alone; Runtime::classify runs the same scorer in the service's Context). Reports the medians and their ratio: with the prompt's KV shared, N labels cost one prefill
// plus one forward over N x (label tokens - 1) entries, not N prefills.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli_args.h"
#include "command.h"
#include "core/error.h"
#include "engine/context.h"
#include "engine/memory_plan.h"
#include "generation/label_scorer.h"
#include "generation_options.h"
#include "kv/kv_cache.h"
#include "model/model.h"

namespace edgellm::cli {
namespace {

// Milliseconds of one score_labels call in a Context made for it (made outside the timing).
double time_labels(const Model& model, ContextParams cp, const std::vector<int32_t>& prompt,
                   const std::vector<std::vector<int32_t>>& labels) {
  size_t longest = 0;
  for (const auto& l : labels) longest = std::max(longest, l.size());
  cp.n_ctx = static_cast<int32_t>(prompt.size() + longest);
  cp.n_seq_max = static_cast<int32_t>(labels.size()) + 1;
  cp.kv_budget_fraction = 0;
  cp.kv_budget_bytes =
      static_cast<size_t>(label_scoring_blocks(cp.kv_block_tokens, static_cast<int32_t>(prompt.size()), labels)) *
      KvCache::block_bytes(kv_cache_params(model.hparams(), cp));
  Context ctx(model, cp);
  const auto t0 = std::chrono::steady_clock::now();
  (void)score_labels(ctx, prompt, labels);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

int bench_classify_command(const std::vector<std::string>& args) {
  ModelOptions model_opt;
  int32_t n_prompt = 128;
  int32_t n_labels = 8;
  int32_t label_tokens = 3;
  int32_t reps = 5;
  int64_t seed = 1234;
  ContextOptions co;
  ArgParser ap("bench-classify", "-m MODEL [--prompt N] [--labels N] [--label-tokens N] [-r N] [options]");
  add_model_options(ap, &model_opt);
  ap.add_int("--prompt", &n_prompt, "N", "prompt tokens (default 128)", 1, 1 << 16);
  ap.add_int("--labels", &n_labels, "N", "labels scored at once (default 8)", 1, 64);
  ap.add_int("--label-tokens", &label_tokens, "N", "tokens per label (default 3)", 1, 256);
  ap.add_int("-r,--repetitions", &reps, "N", "repetitions, each with a new prompt (default 5)", 1, 100);
  ap.add_custom(
      shared_option("seed"), [&](const std::string& v) { seed = parse_int(v, "--seed", 0, INT64_MAX); },
      "of the random token ids; default 1234");
  add_context_options(ap, &co, /*with_ctx_size=*/false);
  add_kv_type_options(ap, &co.kv);
  if (!ap.parse(args)) return 0;
  const std::string model_path = resolve_model_path(model_opt);
  const ContextParams cp = context_params(co);
  std::shared_ptr<const Model> model = Model::load(model_path, model_load_params(co));
  const int32_t n_vocab = model->hparams().n_vocab;

  uint64_t state = static_cast<uint64_t>(seed) * 0x9e3779b97f4a7c15ULL + 1;
  auto next_id = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int32_t>((state >> 33) % static_cast<uint64_t>(n_vocab));
  };
  auto tokens = [&](int32_t n) {
    std::vector<int32_t> t(static_cast<size_t>(n));
    for (auto& id : t) id = next_id();
    return t;
  };
  {  // warm-up: first-touch faults of the weights go to no measurement
    const std::vector<int32_t> p = tokens(n_prompt);
    (void)time_labels(*model, cp, p, {tokens(label_tokens)});
  }
  std::vector<double> one, many;
  for (int32_t rep = 0; rep < reps; ++rep) {
    const std::vector<int32_t> prompt = tokens(n_prompt);
    std::vector<std::vector<int32_t>> labels;
    for (int32_t i = 0; i < n_labels; ++i) labels.push_back(tokens(label_tokens));
    const std::vector<std::vector<int32_t>> first(labels.begin(), labels.begin() + 1);
    double a = 0, b = 0;
    if (rep % 2 == 0) {
      a = time_labels(*model, cp, prompt, first);
      b = time_labels(*model, cp, prompt, labels);
    } else {
      b = time_labels(*model, cp, prompt, labels);
      a = time_labels(*model, cp, prompt, first);
    }
    one.push_back(a);
    many.push_back(b);
    std::fprintf(stderr, "rep %d: 1 label %.1f ms, %d labels %.1f ms (%.2fx)\n", rep, a, n_labels, b, b / a);
  }
  const double a = median_of(one), b = median_of(many);
  std::printf("| model | prompt | label tokens | 1 label ms | %d labels ms | ratio |\n", n_labels);
  std::printf("|---|---:|---:|---:|---:|---:|\n");
  std::printf("| %s | %d | %d | %.1f | %.1f | %.2fx |\n", model_path.substr(model_path.rfind('/') + 1).c_str(),
              n_prompt, label_tokens, a, b, a > 0 ? b / a : 0.0);
  return 0;
}

const CommandRegistration kBenchClassifyRegistration("bench-classify",
                                                     "cost of scoring N classify labels vs one (shared prompt KV)",
                                                     bench_classify_command);

}  // namespace
}  // namespace edgellm::cli
