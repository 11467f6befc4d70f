// `edgellm bench-prefix`: what the KV prefix cache saves. Per repetition, a fresh random prefix of
// --prefix tokens: request A (prefix + its own suffix) runs cold, then request B (the same prefix
// + another suffix) finds the prefix cached; B also runs in a second service without that
// prefix cached, and its greedy tokens must be identical there (exit 1 otherwise). Reports the
// median TTFT (submit -> first token, RequestStats::ttft_ms) of the cold and the cached request
// and their ratio. Requests go through the InferenceService, as an app's do.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "tools/bench/service_request.h"
#include "tools/bench/ttft_bench.h"
#include "cli_args.h"
#include "command.h"
#include "generation_options.h"
#include "core/error.h"
#include "model/model.h"
#include "service/inference_service.h"

namespace edgellm::cli {
namespace {

using bench::median;
using bench::run_greedy_request;
using Run = bench::ServiceRun;

int bench_prefix_command(const std::vector<std::string>& args) {
  ModelOptions model_opt;
  int32_t n_prefix = 1000;
  int32_t n_suffix = 16;
  int32_t n_gen = 16;
  int32_t reps = 3;
  int64_t seed = 1234;
  ContextOptions co;
  ArgParser ap("bench-prefix", "-m MODEL [--prefix N] [--suffix N] [-n N] [-r N] [options]");
  add_model_options(ap, &model_opt);
  ap.add_int("--prefix", &n_prefix, "N", "shared prefix tokens (default 1000)", 1, 1 << 20);
  ap.add_int("--suffix", &n_suffix, "N", "tokens after the prefix, different per request (default 16)", 1, 4096);
  ap.add_int("-n,--n-gen", &n_gen, "N", "tokens generated per request (default 16)", 1, 4096);
  ap.add_int("-r,--repetitions", &reps, "N", "repetitions, each with a new prefix (default 3)", 1, 100);
  ap.add_custom(shared_option("seed"), [&](const std::string& v) { seed = parse_int(v, "--seed", 0, INT64_MAX); },
                "of the random token ids; default 1234");
  // No -c: the context is sized from --prefix, --suffix and -n.
  add_context_options(ap, &co, /*with_ctx_size=*/false);
  add_kv_type_options(ap, &co.kv);
  if (!ap.parse(args)) return 0;
  const std::string model_path = resolve_model_path(model_opt);

  ServiceParams sp;
  sp.context = context_params(co);
  sp.context.n_seq_max = 1;
  sp.context.n_ctx = n_prefix + n_suffix + n_gen + 1;
  sp.step_tokens = std::max<int32_t>(sp.context.n_batch, 2);
  sp.max_queued = 1;
  sp.load = model_load_params(co);
  std::shared_ptr<const Model> model = Model::load(model_path, sp.load);
  InferenceService cached(model, sp);
  InferenceService reference(model, sp);  // never sees B's prefix before B
  const int32_t n_vocab = model->hparams().n_vocab;

  uint64_t state = static_cast<uint64_t>(seed) * 0x9e3779b97f4a7c15ULL + 1;
  auto next_id = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int32_t>((state >> 33) % static_cast<uint64_t>(n_vocab));
  };
  // A warm-up request in both services so that neither cold TTFT pays for first-touch faults.
  std::vector<int32_t> warm(static_cast<size_t>(n_prefix + n_suffix));
  for (auto& t : warm) t = next_id();
  (void)run_greedy_request(cached, warm, 1);
  (void)run_greedy_request(reference, warm, 1);

  std::vector<double> cold, hit, ref;
  bool identical = true;
  int32_t cached_tokens = 0;
  for (int32_t rep = 0; rep < reps; ++rep) {
    std::vector<int32_t> prefix(static_cast<size_t>(n_prefix));
    for (auto& t : prefix) t = next_id();
    std::vector<int32_t> a = prefix, b = prefix;
    for (int32_t i = 0; i < n_suffix; ++i) a.push_back(next_id());
    for (int32_t i = 0; i < n_suffix; ++i) b.push_back(next_id());
    const Run ra = run_greedy_request(cached, a, n_gen);
    const Run rb = run_greedy_request(cached, b, n_gen);
    const Run rr = run_greedy_request(reference, b, n_gen);
    cold.push_back(ra.stats.ttft_ms);
    hit.push_back(rb.stats.ttft_ms);
    ref.push_back(rr.stats.ttft_ms);
    cached_tokens = rb.stats.cached_tokens;
    identical = identical && rb.tokens == rr.tokens && rr.stats.cached_tokens == 0;
    std::fprintf(stderr, "rep %d: cold %.1f ms, cached %.1f ms (%d tokens reused), reference %.1f ms, %s\n", rep,
                 ra.stats.ttft_ms, rb.stats.ttft_ms, rb.stats.cached_tokens, rr.stats.ttft_ms,
                 rb.tokens == rr.tokens ? "identical" : "DIFFERENT");
  }
  const double c = median(cold), h = median(hit);
  std::printf("| model | prefix | suffix | cold TTFT ms | cached TTFT ms | ratio | reused tokens | greedy output |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---|\n");
  std::printf("| %s | %d | %d | %.1f | %.1f | %.1f %% | %d | %s |\n", model_path.substr(model_path.rfind('/') + 1).c_str(),
              n_prefix, n_suffix, c, h, c > 0 ? 100.0 * h / c : 0.0, cached_tokens,
              identical ? "identical" : "DIFFERENT");
  if (!identical) std::fprintf(stderr, "bench-prefix: the cached request's output differs from the cold one\n");
  return identical ? 0 : kExitVerifyFailed;
}

const CommandRegistration kBenchPrefixRegistration("bench-prefix",
                                        "TTFT of a request whose prefix is in the KV prefix cache vs cold",
                                        bench_prefix_command);

}  // namespace
}  // namespace edgellm::cli
