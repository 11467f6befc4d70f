// `edgellm bench`: llama-bench style throughput tests (pp = prompt processing, tg = token
// generation, optionally at a KV depth), with the machine's measured memory bandwidth and the
// fraction of it that decode achieves, and the machine's int8 dot-product peak with the fraction
// of it that prefill achieves; or, with --ttft, time to first token (bench/ttft_bench.h). Results go to stdout in the chosen format; progress goes
// to stderr. With --spec ngram|draft (-md FILE, --draft-max N, as `run`), every tg test gets a
// speculative record beside it, paired with plain greedy decoding in the same run (bench_runner.h);
// the command exits 4 when the two produced different tokens.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tools/bench/bench_report.h"
#include "tools/bench/bench_runner.h"
#include "tools/bench/probe_cache.h"
#include "tools/bench/ttft_bench.h"
#include "cli_args.h"
#include "command.h"
#include "generation_options.h"
#include "progress.h"
#include "core/error.h"
#include "kernels/tensor_type.h"

namespace edgellm::cli {
namespace {

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    const std::string part = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!part.empty()) out.push_back(part);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

TensorType parse_kv(const std::string& name, const char* option) {
  const auto t = tensor_type_from_name(name);
  require(t && (*t == TensorType::F16 || *t == TensorType::F32 || *t == TensorType::Q8_0 || *t == TensorType::Q4_0),
          ErrorCode::kInvalidArgument,
          std::string(option) + " '" + name + "' is not a KV cache type (use f16, q8_0, q4_0 or f32)");
  return *t;
}

// The PNG chart of `--chart`: the JSON records through scripts/bench-chart.py (matplotlib), the
// same script docs/benchmarks.md's charts come from. The script is looked for in
// $EDGELLM_SCRIPTS_DIR, then in <prefix>/share/edgellm/ of an installed CLI, then in the source
// tree it was built from.
void draw_chart(const std::vector<bench::BenchRecord>& records, const bench::BenchMachine& machine,
                const std::string& png) {
  const std::string json_tmp = png + ".json.tmp";
  {
    std::ofstream out(json_tmp, std::ios::binary);
    out << bench::format_report(bench::ReportFormat::kJson, records, machine);
    require(static_cast<bool>(out), ErrorCode::kIo, "--chart: cannot write '" + json_tmp + "'");
  }
  std::vector<std::string> candidates;
  if (const char* dir = std::getenv("EDGELLM_SCRIPTS_DIR"); dir != nullptr && *dir != '\0') {
    candidates.push_back(std::string(dir) + "/bench-chart.py");
  }
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back((exe.parent_path().parent_path() / "share/edgellm/bench-chart.py").string());
  candidates.push_back(EDGELLM_SOURCE_DIR "/scripts/bench-chart.py");
  std::string script;
  for (const auto& c : candidates) {
    if (std::filesystem::exists(c, ec)) {
      script = c;
      break;
    }
  }
  require(!script.empty(), ErrorCode::kIo, "--chart: scripts/bench-chart.py not found (set EDGELLM_SCRIPTS_DIR)");
  const auto quote = [](const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
  };
  const std::string cmd = "python3 " + quote(script) + " --bench " + quote(json_tmp) + " -o " + quote(png);
  const int rc = std::system(cmd.c_str());
  std::remove(json_tmp.c_str());
  require(rc == 0, ErrorCode::kIo, "--chart: " + cmd + " failed (exit status " + std::to_string(rc) + ")");
  std::fprintf(stderr, "bench: chart written to %s\n", png.c_str());
}

int bench_command(const std::vector<std::string>& args) {
  bench::BenchParams p;
  std::string format = "md", json_path;
  bool no_bandwidth = false, no_int8_peak = false;
  int32_t bandwidth_mib = 1024;
  int64_t seed = 1234;
  bool ttft = false;
  bench::TtftParams tp;
  ArgParser ap("bench", "-m MODEL[,MODEL...] [options]");
  ap.add_custom(shared_option("model"), [&](const std::string& v) {
    for (auto& m : split_commas(v)) p.models.push_back(m);
  }, "several: comma-separated or repeated");
  ap.add_custom("-p,--n-prompt", "N[,N]", "prompt lengths of pp tests (default 512; 0 = none)",
                [&](const std::string& v) { p.n_prompt = parse_int_list(v, "-p", 0, 1 << 20); });
  ap.add_custom("-n,--n-gen", "N[,N]", "generated tokens of tg tests (default 128; 0 = none)",
                [&](const std::string& v) { p.n_gen = parse_int_list(v, "-n", 0, 1 << 20); });
  ap.add_custom("-d,--n-depth", "N[,N]", "KV depth before each test (default 0)",
                [&](const std::string& v) { p.n_depth = parse_int_list(v, "-d", 0, 1 << 20); });
  // The shared options take lists here (N[,N]): one test per value, as llama-bench does.
  ap.add_custom(shared_option("threads"), [&](const std::string& v) { p.n_threads = parse_int_list(v, "-t", 1, 4096); },
                "N[,N]: a list; default: hardware threads");
  ap.add_custom(shared_option("batch-size"),
                [&](const std::string& v) { p.n_batch = parse_int_list(v, "-b", 1, 1 << 20); }, "N[,N]; default 512");
  ap.add_custom(shared_option("repack"), [&](const std::string& v) {
    p.repack.clear();
    for (const auto& m : split_commas(v)) p.repack.push_back(parse_repack_mode(m));
  }, "MODE[,MODE]; default auto");
  const auto k_types = [&](const std::string& v) {
    p.kv_types.clear();
    for (const auto& t : split_commas(v)) p.kv_types.push_back(parse_kv(t, "--kv-type-k"));
  };
  ap.add_custom(shared_option("kv-type"), k_types, "TYPE[,TYPE]; default f16");
  ap.add_custom(shared_option("kv-type-k"), k_types, "TYPE[,TYPE]");
  ap.add_custom(shared_option("kv-type-v"), [&](const std::string& v) {
    p.kv_types_v.clear();
    for (const auto& t : split_commas(v)) p.kv_types_v.push_back(parse_kv(t, "--kv-type-v"));
  }, "TYPE[,TYPE], each run with every K type");
  ap.add_int("-r,--repetitions", &p.repetitions, "N", "measured repetitions per test (default 3)", 1, 1000);
  ap.add_flag("--interleave-depths", &p.interleave_depths,
              "tg tests at several -d depths: one sequence per depth, repetitions taken in turns across "
              "the depths, and each depth's paired ratio to the first (median, min, max) reported");
  ap.add_string("-o,--output", &format, "FORMAT", "table, md (default), csv or json");
  bool json = false;
  ap.add_flag(shared_option("json"), &json, "the same as -o json");
  ap.add_string("--json-out", &json_path, "FILE", "also write the JSON records to FILE");
  std::string chart_path;
  ap.add_string("--chart", &chart_path, "FILE.png",
                "also draw the results as a PNG chart (scripts/bench-chart.py; installs python3-matplotlib if missing)");
  ap.add_flag("--no-bandwidth", &no_bandwidth, "skip the memory bandwidth measurement");
  ap.add_flag("--no-int8-peak", &no_int8_peak, "skip the int8 dot-product peak probe (and pp tests' % of it)");
  bool reprobe = false;
  ap.add_flag("--reprobe", &reprobe,
              "measure the bandwidth and int8 peak again instead of using this machine's cached probes");
  ap.add_int("--bandwidth-mib", &bandwidth_mib, "N", "bandwidth buffer size in MiB (default 1024)", 1, 1 << 20);
  ap.add_custom(shared_option("seed"), [&](const std::string& v) { seed = parse_int(v, "--seed", 0, INT64_MAX); },
                "of the random token ids; default 1234");
  ap.add_flag("--ttft", &ttft,
              "time to first token instead of pp/tg tests: cold start (load -> first token) and warm, "
              "with and without a cached system prompt (docs/benchmarks.md)");
  ap.add_custom("--ttft-prompts", "N[,N]", "--ttft: prompt lengths in tokens (default 50,300,1000)",
                [&](const std::string& v) { tp.prompts = parse_int_list(v, "--ttft-prompts", 1, 1 << 20); });
  ap.add_int("--ttft-system", &tp.system_tokens, "N",
             "--ttft: tokens of the shared system prompt of the cached-prefix rows (default 256; 0 = none)", 0, 1 << 20);
  bool warm_only = false;
  ap.add_flag("--ttft-warm-only", &warm_only, "--ttft: skip the cold-start rows");
  SpeculationOptions spec;
  add_speculation_options(ap, &spec);
  ap.add_flag("--drop-caches", &tp.drop_page_cache,
              "--ttft: also run every cold start after posix_fadvise(DONTNEED) on the model file (no root needed)");
  if (!ap.parse(args)) return 0;

  require(!p.models.empty(), ErrorCode::kInvalidArgument, "-m/--model is required");
  require(!p.repack.empty(), ErrorCode::kInvalidArgument, "--repack needs at least one mode");
  require(!p.kv_types.empty(), ErrorCode::kInvalidArgument, "--kv-type needs at least one type");
  if (json) {
    require(!ap.seen("-o") || format == "json", ErrorCode::kInvalidArgument, "--json and -o " + format + " disagree");
    format = "json";
  }
  const bench::ReportFormat fmt = bench::parse_report_format(format);
  // Fail on a missing model before spending seconds on the bandwidth probe.
  for (const auto& m : p.models) {
    require(static_cast<bool>(std::ifstream(m)), ErrorCode::kIo, "cannot open model '" + m + "'");
  }
  p.measure_bandwidth = !no_bandwidth;
  p.measure_int8_peak = !no_int8_peak;
  p.bandwidth_bytes = static_cast<size_t>(bandwidth_mib) << 20;
  p.seed = static_cast<uint64_t>(seed);
  p.speculation = speculation_params(spec);  // checks --spec / -md
  p.draft_model_path = spec.model_draft;
  const bool speculate = p.speculation.mode != SpeculationMode::kOff;
  if (speculate) {
    require(!ttft, ErrorCode::kInvalidArgument, "--spec measures decode (tg tests), not --ttft");
    require(std::any_of(p.n_gen.begin(), p.n_gen.end(), [](int32_t n) { return n > 1; }), ErrorCode::kInvalidArgument,
            "--spec needs a tg test of at least 2 tokens (-n)");
    require(!p.interleave_depths || p.n_depth.size() < 2, ErrorCode::kInvalidArgument,
            "--spec does not combine with --interleave-depths (its records are paired with plain decoding)");
    require(p.draft_model_path.empty() || static_cast<bool>(std::ifstream(p.draft_model_path)), ErrorCode::kIo,
            "cannot open draft model '" + p.draft_model_path + "'");
  }

  if (ttft) {
    tp.models = p.models;
    tp.repetitions = p.repetitions;
    tp.n_threads = p.n_threads.empty() ? 0 : p.n_threads.front();
    tp.repack = p.repack.front();
    tp.kv_type = p.kv_types.front();
    tp.seed = static_cast<uint64_t>(seed);
    tp.cold = !warm_only;
    require(fmt == bench::ReportFormat::kMarkdown || fmt == bench::ReportFormat::kJson, ErrorCode::kInvalidArgument,
            "--ttft writes md or json (-o)");
    const auto records = bench::run_ttft_bench(tp, [](const std::string& line) {
      std::fprintf(stderr, "bench: %s\n", line.c_str());
    });
    const std::string text =
        fmt == bench::ReportFormat::kJson ? bench::format_ttft_json(records) : bench::format_ttft_markdown(records);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    if (!json_path.empty()) {
      std::ofstream out(json_path, std::ios::binary);
      out << bench::format_ttft_json(records);
      require(static_cast<bool>(out), ErrorCode::kIo, "cannot write '" + json_path + "'");
    }
    return 0;
  }
  // The probes are measured once per machine and cached (tools/bench/probe_cache.h); the table
  // of their results is printed once, in the report on stdout.
  std::string probe_note;
  if (p.measure_bandwidth || p.measure_int8_peak) {
    std::fprintf(stderr, "bench: machine probes (memory bandwidth, int8 peak)...\n");
  }
  const bench::BenchMachine machine =
      bench::describe_machine_cached(p, bench::default_probe_cache_path(), reprobe, &probe_note);
  std::fprintf(stderr, "bench: %s\n", probe_note.c_str());
  // Records to come: one per model, repack mode, K and V type, thread count, batch size, depth
  // and pp / tg length (bench_runner.h's loops).
  size_t tests = 0;
  for (int32_t n : p.n_prompt) tests += n > 0 ? 1 : 0;
  for (int32_t n : p.n_gen) tests += n > 0 ? (speculate ? 2 : 1) : 0;
  const size_t total = p.models.size() * p.repack.size() * p.kv_types.size() *
                       std::max<size_t>(1, p.kv_types_v.size()) * std::max<size_t>(1, p.n_threads.size()) *
                       p.n_batch.size() * p.n_depth.size() * tests;
  size_t done = 0;
  ProgressDisplay bar("bench");
  const auto records = bench::run_bench(
      p, machine,
      [&](const bench::BenchRecord& r) {
        bar.clear();
        std::fprintf(stderr, "bench:   %s: %.2f ± %.2f t/s\n", r.test_name().c_str(), r.avg_ts, r.stddev_ts);
        ++done;
        bar.update(total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 1.0,
                   std::to_string(done) + "/" + std::to_string(total) + " tests");
      },
      [&](const std::string& line) {
        bar.clear();
        std::fprintf(stderr, "bench: %s\n", line.c_str());
      });
  bar.finish(std::to_string(records.size()) + " tests");
  const std::string text = bench::format_report(fmt, records, machine);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  if (!json_path.empty()) {
    std::ofstream out(json_path, std::ios::binary);
    const std::string json = bench::format_report(bench::ReportFormat::kJson, records, machine);
    out << json;
    require(static_cast<bool>(out), ErrorCode::kIo, "cannot write '" + json_path + "'");
  }
  if (!chart_path.empty()) draw_chart(records, machine, chart_path);
  for (const bench::BenchRecord& r : records) {
    if (r.is_speculative() && !r.spec_tokens_match) {
      std::fprintf(stderr, "bench: %s: speculative decoding produced other tokens than plain decoding\n",
                   r.test_name().c_str());
      return kExitVerifyFailed;
    }
  }
  return 0;
}

const CommandRegistration kBenchRegistration("bench", "measure prompt/generation throughput (llama-bench style)",
                                        bench_command);

}  // namespace
}  // namespace edgellm::cli
