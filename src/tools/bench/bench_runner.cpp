#include "tools/bench/bench_runner.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <cstdio>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <chrono>
#include <cmath>
#include <ctime>
#include <time.h>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <thread>

#include "tools/bench/cpu_clock.h"
#include "tools/bench/prefill_ops.h"
#include "core/error.h"
#include "engine/batch.h"
#include "engine/context.h"
#include "engine/sampler.h"
#include "generation/draft_model_drafter.h"
#include "generation/drafter.h"
#include "gguf/gguf_reader.h"
#include "kernels/kernels.h"
#include "kernels/repack.h"
#include "model/model.h"
#include "tools/quant/quant_rules.h"
#include "platform/memory_stats.h"

namespace edgellm::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Timing {
  double wall = 0;  // seconds
  double cpu = 0;   // process CPU seconds over the same interval
};

std::string iso_time_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Resets VmHWM to the current RSS (Linux >= 4.0: writing "5" to clear_refs), so each model's
// peak is its own. Best effort: without it the peak is the process-wide maximum.
// Peak RSS is reported per model: hand freed heap memory back first (the previous model's
// scratch, the bandwidth probe's buffer: after glibc frees a large mmapped block it raises its
// mmap threshold, so later 1-32 MB buffers come from the heap and stay resident when freed),
// then reset VmHWM to the current RSS.
void reset_peak_rss() {
#if defined(__GLIBC__)
  (void)malloc_trim(0);
#endif
  std::ofstream f("/proc/self/clear_refs");
  if (f) f << "5";
}

void mean_stddev(const std::vector<double>& v, double* mean, double* stddev) {
  *mean = 0;
  *stddev = 0;
  if (v.empty()) return;
  for (const double x : v) *mean += x;
  *mean /= static_cast<double>(v.size());
  if (v.size() < 2) return;
  double ss = 0;
  for (const double x : v) ss += (x - *mean) * (x - *mean);
  *stddev = std::sqrt(ss / static_cast<double>(v.size() - 1));  // sample stddev, as llama-bench
}

std::string kv_type_name(TensorType t) { return tensor_type_name(t); }

// Ratios of samples taken in pairs: num[i] / den[i] (repetition i of each was run next to the
// other); their median, min and max. False when there is no pair.
bool paired_ratios(const std::vector<double>& num, const std::vector<double>& den, double* median, double* min,
                   double* max) {
  std::vector<double> q;
  for (size_t i = 0; i < num.size() && i < den.size(); ++i) {
    if (den[i] > 0) q.push_back(num[i] / den[i]);
  }
  if (q.empty()) return false;
  std::sort(q.begin(), q.end());
  const size_t n = q.size();
  *median = n % 2 == 1 ? q[n / 2] : (q[n / 2 - 1] + q[n / 2]) / 2;
  *min = q.front();
  *max = q.back();
  return true;
}

// Paired ratios of an interleaved tg record to the first depth's.
void set_paired_ratio(BenchRecord& r, const BenchRecord& first) {
  if (paired_ratios(r.samples_ts, first.samples_ts, &r.paired_ratio_median, &r.paired_ratio_min, &r.paired_ratio_max)) {
    r.paired_ratio_depth = first.n_depth;
  }
}

// One sequence's state in a context: which depth prefix it currently holds.
class DepthCache {
 public:
  DepthCache(Context& ctx, int32_t n_vocab, uint64_t seed, int32_t seq = 0)
      : ctx_(ctx), n_vocab_(n_vocab), rng_(seed), seq_(seq) {}

  int32_t seq() const { return seq_; }

  // Leaves exactly the first `depth` positions of the depth prefix in the sequence.
  void restore(int32_t depth) {
    if (depth <= held_) {
      ctx_.seq_truncate(seq_, depth);
      held_ = depth;
      prefix_.resize(static_cast<size_t>(depth));
      return;
    }
    ctx_.seq_truncate(seq_, held_);
    const std::vector<int32_t> tokens = random_tokens(depth - held_);
    Batch b;
    b.add_sequence(seq_, tokens, held_, /*logits_last=*/false);
    ctx_.decode(b);
    held_ = depth;
    prefix_.insert(prefix_.end(), tokens.begin(), tokens.end());
  }
  // The token ids of the positions the prefix holds (a drafter is given them).
  const std::vector<int32_t>& prefix() const { return prefix_; }
  // After a test appended positions past the prefix, only `held_` positions are still the prefix.
  void after_test() { ctx_.seq_truncate(seq_, held_); }

  std::vector<int32_t> random_tokens(int32_t n) {
    std::uniform_int_distribution<int32_t> dist(0, n_vocab_ - 1);
    std::vector<int32_t> t(static_cast<size_t>(std::max(0, n)));
    for (auto& x : t) x = dist(rng_);
    return t;
  }

 private:
  Context& ctx_;
  int32_t n_vocab_;
  std::mt19937_64 rng_;
  int32_t seq_ = 0;
  int32_t held_ = 0;
  std::vector<int32_t> prefix_;  // held_ ids
};

// Times one pp test run: n_prompt tokens after the depth prefix.
Timing run_prompt(Context& ctx, DepthCache& cache, int32_t depth, int32_t n_prompt) {
  cache.restore(depth);
  Batch b;
  b.add_sequence(cache.seq(), cache.random_tokens(n_prompt), depth, /*logits_last=*/true);
  const double c0 = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
  const auto t0 = Clock::now();
  ctx.decode(b);
  const Timing t{std::chrono::duration<double>(Clock::now() - t0).count(), cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - c0};
  cache.after_test();
  return t;
}

// Times one tg test run: n_gen single-token decode calls after the depth prefix.
Timing run_generation(Context& ctx, DepthCache& cache, int32_t depth, int32_t n_gen) {
  cache.restore(depth);
  const std::vector<int32_t> tokens = cache.random_tokens(n_gen);
  Batch b;
  const double c0 = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
  const auto t0 = Clock::now();
  for (int32_t i = 0; i < n_gen; ++i) {
    b.clear();
    b.add(cache.seq(), tokens[static_cast<size_t>(i)], depth + i, /*want_logits=*/true);
    ctx.decode(b);
  }
  const Timing t{std::chrono::duration<double>(Clock::now() - t0).count(), cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - c0};
  cache.after_test();
  return t;
}

std::string read_cpu_name() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) {
        std::string v = line.substr(colon + 1);
        const size_t first = v.find_first_not_of(' ');
        return first == std::string::npos ? v : v.substr(first);
      }
    }
  }
  return "unknown CPU";
}

}  // namespace

std::string file_name_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string BenchRecord::test_name() const {
  std::string s = n_prompt > 0 ? "pp" + std::to_string(n_prompt) : "tg" + std::to_string(n_gen);
  if (is_speculative()) s += " spec " + spec_mode + " k" + std::to_string(spec_draft_max);
  if (n_depth > 0) s += " @ d" + std::to_string(n_depth);
  return s;
}

double decode_bytes_per_token(const Model& model, TensorType kv_type_k, TensorType kv_type_v, double kv_tokens) {
  double bytes = 0;
  for (const auto& t : model.gguf().tensors()) {
    if (t.name == "token_embd.weight" && !model.output_tied()) {
      bytes += static_cast<double>(t.row_bytes());  // only the token's row is looked up
    } else {
      bytes += static_cast<double>(t.n_bytes);
    }
  }
  // Matrices repacked at load are read from their packed copy, which is what moves: for Q4_K it
  // is 2.8% larger than the file's bytes (unpacked 6-bit scales, kernels/repack.h).
  const auto packed_extra = [&](const WeightView& w) {
    if (!w.present() || !kernels::is_packed_type(w.type)) return 0.0;
    const gguf::TensorInfo* t = model.gguf().find_tensor(w.name);
    return t ? static_cast<double>(w.n_out) * static_cast<double>(w.row_bytes) - static_cast<double>(t->n_bytes) : 0.0;
  };
  for (const WeightView* w : model.matrices()) bytes += packed_extra(*w);  // a tied head once: it is token_embd
  const HParams& hp = model.hparams();
  const int64_t kv_width = hp.n_embd_kv();
  const auto bytes_per_kv_value = [&](TensorType t) {
    return kv_width % tensor_block_size(t) == 0
               ? static_cast<double>(tensor_row_bytes(t, kv_width)) / static_cast<double>(kv_width)
               : 2.0;  // an F16 cache when the type does not fit the row
  };
  bytes += static_cast<double>(hp.n_layer) * static_cast<double>(kv_width) *
           (bytes_per_kv_value(kv_type_k) + bytes_per_kv_value(kv_type_v)) * kv_tokens;
  return bytes;
}

std::string describe_model_type(const Model& model) {
  const auto& f = model.gguf();
  uint64_t n_params = 0;
  for (const auto& t : f.tensors()) n_params += static_cast<uint64_t>(t.n_elements());
  std::string size = f.get_string("general.size_label").value_or("");
  if (size.empty()) {
    std::ostringstream ss;
    ss.precision(1);
    ss << std::fixed;
    if (n_params >= 1000000000ULL) {
      ss << static_cast<double>(n_params) / 1e9 << "B";
    } else {
      ss << static_cast<double>(n_params) / 1e6 << "M";
    }
    size = ss.str();
  }
  std::string ftype;
  if (auto ft = f.get_int("general.file_type")) {
    const char* name = quant::file_type_name(static_cast<quant::FileType>(*ft));
    ftype = std::string(name) == "unknown" ? "ftype " + std::to_string(*ft) : name;
  } else {
    // No general.file_type (llama2.c conversions such as stories260K): name the type holding
    // most of the matrices' bytes, as a file type would ("F32").
    std::map<TensorType, uint64_t> bytes;
    for (const auto& t : f.tensors()) {
      if (t.n_dims >= 2) bytes[t.type] += t.n_bytes;
    }
    const auto most = std::max_element(bytes.begin(), bytes.end(),
                                       [](const auto& a, const auto& b) { return a.second < b.second; });
    ftype = most == bytes.end() ? "no matrices" : tensor_type_name(most->first);
    for (auto& c : ftype) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return model.hparams().arch + " " + size + " " + ftype;
}

const Int8PeakResult* find_int8_peak(const BenchMachine& m, const std::string& kernel, int n_threads) {
  for (const auto& r : m.int8_peak) {
    if (r.kernel == kernel && r.n_threads == n_threads) return &r;
  }
  return nullptr;
}

namespace {
void probe_int8_peak(const BenchParams& params, int n_threads, BenchMachine* m) {
  Int8PeakOptions o;
  o.n_threads = n_threads;
  o.seconds = params.int8_peak_seconds;
  for (auto& r : measure_int8_peaks(o)) m->int8_peak.push_back(std::move(r));
}
}  // namespace

BenchMachine describe_machine(const BenchParams& params) {
  BenchMachine m;
  m.cpu = read_cpu_name();
  m.hardware_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (params.measure_bandwidth) {
    BandwidthOptions o;
    o.buffer_bytes = params.bandwidth_bytes;
    o.n_threads = 1;
    m.bandwidth_1 = measure_read_bandwidth(o);
    o.n_threads = m.hardware_threads;
    m.bandwidth_all = measure_read_bandwidth(o);
    m.bandwidth_measured = true;
  }
  if (params.measure_int8_peak) {
    probe_int8_peak(params, 1, &m);
    if (m.hardware_threads > 1) probe_int8_peak(params, m.hardware_threads, &m);
  }
  return m;
}

std::vector<BenchRecord> run_bench(const BenchParams& params, const BenchMachine& machine,
                                   const std::function<void(const BenchRecord&)>& on_record,
                                   const std::function<void(const std::string&)>& log) {
  require(!params.models.empty(), ErrorCode::kInvalidArgument, "no model given (-m)");
  require(params.repetitions >= 1, ErrorCode::kInvalidArgument,
          "repetitions must be >= 1, got " + std::to_string(params.repetitions));
  std::vector<int32_t> thread_counts = params.n_threads;
  if (thread_counts.empty()) thread_counts.push_back(machine.hardware_threads);
  for (const int32_t t : thread_counts) {
    require(t >= 1, ErrorCode::kInvalidArgument, "thread count must be >= 1, got " + std::to_string(t));
  }
  for (const int32_t b : params.n_batch) {
    require(b >= 1, ErrorCode::kInvalidArgument, "batch size must be >= 1, got " + std::to_string(b));
  }
  for (const int32_t d : params.n_depth) {
    require(d >= 0, ErrorCode::kInvalidArgument, "depth must be >= 0, got " + std::to_string(d));
  }
  const SpeculationParams& spec = params.speculation;
  const bool speculate = spec.mode != SpeculationMode::kOff;
  if (speculate) {
    require(!params.interleave_depths || params.n_depth.size() < 2, ErrorCode::kInvalidArgument,
            "speculative tg records are paired with plain decoding, not across depths: --spec does not combine "
            "with --interleave-depths");
    require(spec.mode != SpeculationMode::kDraft || !params.draft_model_path.empty(), ErrorCode::kInvalidArgument,
            "--spec draft needs a draft model (-md FILE)");
  }
  int32_t max_tokens = 0;  // context positions any test needs
  for (const int32_t d : params.n_depth) {
    for (const int32_t p : params.n_prompt) max_tokens = std::max(max_tokens, d + p);
    for (const int32_t g : params.n_gen) {
      max_tokens = std::max(max_tokens, d + std::max(g, kWarmupTokens));
      // A spec record: the prompt, the tokens and a verify forward's drafts past the last one.
      if (speculate && g > 1) max_tokens = std::max(max_tokens, d + kSpecPromptTokens + g + spec.draft_max + 1);
    }
  }
  require(max_tokens > 0, ErrorCode::kInvalidArgument, "no test to run: every -p and -n value is 0");

  std::vector<BenchRecord> records;
  auto say = [&](const std::string& s) {
    if (log) log(s);
  };
  // Two references for "% of bandwidth" (bench_runner.h): the best probe of this run so far
  // (what the machine has shown it can do) and the probes just around the test (what it could do
  // in those minutes). This guest's bandwidth moves by up to ~20% over minutes, so the machine is
  // probed before every model and around every tg test.
  BenchMachine roof = machine;
  bool first_load = true;  // the machine was probed just before it
  for (const std::string& path : params.models) {
   for (const RepackMode repack : params.repack) {
    if (roof.bandwidth_measured && !first_load) {
      BandwidthOptions o;
      o.buffer_bytes = params.bandwidth_bytes;
      o.n_threads = 1;
      const BandwidthResult one = measure_read_bandwidth(o);
      o.n_threads = roof.hardware_threads;
      const BandwidthResult all = measure_read_bandwidth(o);
      if (one.gbps > roof.bandwidth_1.gbps) roof.bandwidth_1 = one;
      if (all.gbps > roof.bandwidth_all.gbps) roof.bandwidth_all = all;
      char line[160];
      std::snprintf(line, sizeof line, "bandwidth now %.2f / %.2f GB/s (1 / %d threads), best so far %.2f / %.2f",
                    one.gbps, all.gbps, all.n_threads, roof.bandwidth_1.gbps, roof.bandwidth_all.gbps);
      say(line);
    }
    first_load = false;
    reset_peak_rss();
    uint64_t model_peak = 0;  // VmHWM of this model before each probe (a probe resets it)
    // A probe at a test's thread count between its warm-up and its repetitions, and after them.
    // Its buffer must not count in the model's peak RSS: the peak so far is kept, the buffer is
    // freed and VmHWM reset to the current RSS.
    const auto probe_now = [&](int32_t n_threads) {
      model_peak = std::max<uint64_t>(model_peak, read_process_memory().peak_bytes);
      BandwidthOptions o;
      o.buffer_bytes = params.bandwidth_bytes;
      o.n_threads = n_threads == 1 ? 1 : roof.hardware_threads;
      const BandwidthResult b = measure_read_bandwidth(o);
      BandwidthResult& best = n_threads == 1 ? roof.bandwidth_1 : roof.bandwidth_all;
      if (b.gbps > best.gbps) best = b;
      reset_peak_rss();
      return b.gbps;
    };
    say("loading " + path + " (repack " + repack_mode_name(repack) + ")");
    ModelLoadParams load_params;
    load_params.repack = repack;
    const std::unique_ptr<Model> model = Model::load(path, load_params);
    std::unique_ptr<Model> draft_model;
    if (spec.mode == SpeculationMode::kDraft) {
      say("loading the draft model " + params.draft_model_path);
      draft_model = Model::load(params.draft_model_path, load_params);
      check_same_vocabulary(*draft_model, *model);
    }
    const std::string model_type = describe_model_type(*model);
    const PrefillShape prefill = prefill_shape(*model);
    uint64_t model_size = 0, n_params = 0;
    for (const auto& t : model->gguf().tensors()) {
      model_size += t.n_bytes;
      n_params += static_cast<uint64_t>(t.n_elements());
    }
    std::vector<std::pair<TensorType, TensorType>> kv_pairs;  // (K, V)
    for (const TensorType k : params.kv_types) {
      if (params.kv_types_v.empty()) kv_pairs.emplace_back(k, k);
      for (const TensorType v : params.kv_types_v) kv_pairs.emplace_back(k, v);
    }
    for (const auto& kv_pair : kv_pairs) {
      // Plain locals, not structured bindings: the lambdas below capture them (clang < 16 cannot).
      const TensorType kv_type = kv_pair.first, kv_type_v = kv_pair.second;
      for (const int32_t n_batch : params.n_batch) {
        for (const int32_t n_threads : thread_counts) {
          ContextParams cp;
          cp.n_ctx = max_tokens;
          cp.n_batch = n_batch;
          cp.n_seq_max = 1;
          cp.n_threads = n_threads;
          cp.n_threads_batch = n_threads;
          cp.kv_type = kv_type;
          cp.kv_type_v = kv_type_v;
          // --interleave-depths: one sequence per depth, so tg repetitions can alternate depths.
          const bool interleave = params.interleave_depths && params.n_depth.size() > 1;
          if (interleave) cp.n_seq_max = static_cast<int32_t>(params.n_depth.size());
          Context ctx(*model, cp);
          std::vector<DepthCache> caches;
          for (size_t i = 0; i < (interleave ? params.n_depth.size() : 1); ++i) {
            caches.emplace_back(ctx, model->hparams().n_vocab, params.seed + i, static_cast<int32_t>(i));
          }
          struct Test {
            int32_t n_prompt, n_gen;
          };
          // A record with its fields before timing (no warm-up run yet).
          const auto new_record = [&](const Test& test, int32_t depth, const std::string& what) {
            BenchRecord r;
            r.model_filename = path;
            r.model_type = model_type;
            r.model_size = model_size;
            r.model_n_params = n_params;
            r.n_batch = n_batch;
            r.n_threads = n_threads;
            r.type_k = kv_type_name(kv_type);
            r.type_v = kv_type_name(kv_type_v);
            r.repack = repack_mode_name(repack);
            r.repacked_bytes = model->repacked_bytes();
            if (model->pack_file() != nullptr) r.pack_bytes = model->pack_file()->tensor_data_bytes();
            r.n_prompt = test.n_prompt;
            r.n_gen = test.n_gen;
            r.n_depth = depth;
            r.is_generation = test.n_gen > 0;
            r.isa = kernels::isa_name(kernels::active_isa());
            r.test_time = iso_time_now();
            say(file_name_of(path) + ": " + r.test_name() + what + ", " + std::to_string(n_threads) + " thread(s), kv " +
                r.type_k + "/" + r.type_v + (interleave && r.is_generation ? ", depths interleaved" : "") + " ...");
            return r;
          };
          // A record with its fields before timing, after its warm-up run.
          const auto start_record = [&](const Test& test, int32_t depth, DepthCache& cache) {
            BenchRecord r = new_record(test, depth, "");
            // Warm-up (not recorded): first touch of weight pages, thread start-up, scratch.
            if (r.is_generation) {
              run_generation(ctx, cache, depth, std::min(test.n_gen, kWarmupTokens));
            } else {
              run_prompt(ctx, cache, depth, test.n_prompt);
            }
            return r;
          };
          const auto add_sample = [&](BenchRecord& r, const Timing& t) {
            const int32_t n_tokens = r.is_generation ? r.n_gen : r.n_prompt;
            r.samples_ns.push_back(t.wall * 1e9);
            r.samples_ts.push_back(static_cast<double>(n_tokens) / t.wall);
            r.samples_cpu_ns.push_back(t.cpu * 1e9);
          };
          // Statistics and derived fields once the samples are in; bandwidth_before: the probe
          // just before the repetitions (0: none).
          const auto finish_record = [&](BenchRecord& r, double bandwidth_before) {
            const int32_t depth = r.n_depth;
            const int32_t n_tokens = r.is_generation ? r.n_gen : r.n_prompt;
            const bool probe = bandwidth_before > 0;
            mean_stddev(r.samples_ns, &r.avg_ns, &r.stddev_ns);
            mean_stddev(r.samples_ts, &r.avg_ts, &r.stddev_ts);
            double cpu_ns = 0, cpu_sd = 0;
            mean_stddev(r.samples_cpu_ns, &cpu_ns, &cpu_sd);
            r.avg_cpu_ns = cpu_ns;
            r.cpu_ts = cpu_ns > 0 ? n_tokens * n_threads / (cpu_ns * 1e-9) : 0.0;
            const uint64_t peak = std::max<uint64_t>(model_peak, read_process_memory().peak_bytes);
            if (r.is_generation) {
              // Token i (0-based) at position depth + i attends to depth + i + 1 positions.
              const double mean_kv = depth + (r.n_gen + 1) / 2.0;
              r.bytes_per_token = decode_bytes_per_token(*model, kv_type, kv_type_v, mean_kv);
              r.effective_gbps = r.bytes_per_token * r.avg_ts / 1e9;
              if (probe) {
                r.bandwidth_now_gbps = std::max(bandwidth_before, probe_now(n_threads));
                r.bandwidth_now_fraction = r.effective_gbps / r.bandwidth_now_gbps;
                r.bandwidth_gbps = n_threads == 1 ? roof.bandwidth_1.gbps : roof.bandwidth_all.gbps;
                r.bandwidth_fraction = r.effective_gbps / r.bandwidth_gbps;
              }
            }
            if (!r.is_generation) {
              const PrefillOps ops = count_prefill_ops(prefill, r.n_prompt, /*n_logits=*/1, depth);
              r.matmul_ops_per_token = ops.matmul_ops / r.n_prompt;
              r.attention_ops = ops.attention_ops;
              r.int8_weights = ops.int8;
              r.int8_ops_per_second = r.matmul_ops_per_token * r.avg_ts;
              r.int8_ops_per_cpu_second = cpu_ns > 0 ? r.matmul_ops_per_token * r.n_prompt / (cpu_ns * 1e-9) : 0.0;
              r.int8_peak_kernel = int8_peak_kernel_for_active_isa();
              if (params.measure_int8_peak && !r.int8_peak_kernel.empty()) {
                // A thread count the machine was not probed at: probe it now (outside the timing).
                if (find_int8_peak(roof, r.int8_peak_kernel, n_threads) == nullptr) {
                  probe_int8_peak(params, n_threads, &roof);
                }
                if (const Int8PeakResult* pk = find_int8_peak(roof, r.int8_peak_kernel, n_threads)) {
                  r.int8_peak_ops_per_second = pk->ops_per_second();
                  r.int8_peak_fraction = r.int8_ops_per_second / r.int8_peak_ops_per_second;
                  if (pk->macs_per_cpu_second > 0) {
                    r.int8_peak_cpu_fraction = r.int8_ops_per_cpu_second / (2.0 * pk->macs_per_cpu_second);
                  }
                }
                r.int8_vector_peak_kernel = int8_vector_peak_kernel_for_active_isa();
                if (const Int8PeakResult* pv = find_int8_peak(roof, r.int8_vector_peak_kernel, n_threads)) {
                  r.int8_vector_peak_fraction = r.int8_ops_per_second / pv->ops_per_second();
                }
              }
            }
            r.peak_rss_bytes = peak;
          };
          const auto emit = [&](BenchRecord& r) {
            if (on_record) on_record(r);
            records.push_back(std::move(r));
          };
          std::vector<Test> pp_tests, tg_tests;
          for (const int32_t p : params.n_prompt) {
            if (p > 0) pp_tests.push_back({p, 0});
          }
          for (const int32_t g : params.n_gen) {
            if (g > 0) tg_tests.push_back({0, g});
          }
          // One test at one depth, its repetitions back to back.
          const auto run_record = [&](const Test& test, int32_t depth, DepthCache& cache) {
            BenchRecord r = start_record(test, depth, cache);
            const bool probe = r.is_generation && roof.bandwidth_measured;
            const double bandwidth_before = probe ? probe_now(n_threads) : 0.0;
            for (int32_t rep = 0; rep < params.repetitions; ++rep) {
              add_sample(r, r.is_generation ? run_generation(ctx, cache, depth, test.n_gen)
                                            : run_prompt(ctx, cache, depth, test.n_prompt));
            }
            finish_record(r, bandwidth_before);
            emit(r);
          };
          // Speculative decode beside plain decode (bench_runner.h): greedy generations of both arms
          // after the depth prefix and one fixed prompt, in alternating order.
          const auto run_spec_record = [&](const Test& test, int32_t depth, DepthCache& cache) {
            BenchRecord r = new_record(test, depth, " speculative beside plain");
            r.spec_mode = speculation_mode_name(spec.mode);
            r.spec_draft_max = spec.draft_max;
            const std::vector<int32_t> prompt = cache.random_tokens(kSpecPromptTokens);
            // The draft model's context lives as long as the record: repetitions reuse its KV of
            // the prefix and prompt (DraftModelDrafter::restart), as a chat's turns do.
            std::unique_ptr<DraftModelDrafter> draft_drafter;
            if (draft_model) draft_drafter = std::make_unique<DraftModelDrafter>(*draft_model, ctx);
            SamplerParams greedy;
            greedy.temperature = 0;
            const auto generate_once = [&](bool speculative, int32_t n_gen) {
              cache.restore(depth);
              Sampler sampler(greedy, model->hparams().n_vocab);
              GenerationParams gp;
              gp.seq_id = cache.seq();
              gp.max_tokens = n_gen;
              GenerationCallbacks cb;
              std::unique_ptr<Drafter> ngram;
              if (speculative) {
                gp.speculation = spec;
                if (draft_drafter) {
                  draft_drafter->restart();
                  cb.drafter = draft_drafter.get();
                } else {
                  ngram = make_drafter(spec, ctx);
                  cb.drafter = ngram.get();
                }
                cb.drafter->append(cache.prefix());
              }
              GenerationResult g = generate(ctx, sampler, nullptr, prompt, gp, cb);
              cache.after_test();
              require(g.finish_reason == FinishReason::kLength, ErrorCode::kInternal,
                      "bench: a greedy generation of " + r.test_name() + " stopped early (" +
                          finish_reason_name(g.finish_reason) + "): " + g.error);
              return g;
            };
            const auto rate = [](const GenerationResult& g) { return g.timings.decode_tokens_per_second(); };
            (void)generate_once(false, std::min(test.n_gen, kWarmupTokens));
            (void)generate_once(true, std::min(test.n_gen, kWarmupTokens));
            int64_t forwards = 0, forward_tokens = 0;
            for (int32_t rep = 0; rep < params.repetitions; ++rep) {
              const bool spec_first = rep % 2 == 1;  // alternate, so neither arm always runs second
              GenerationResult plain, sp;
              if (spec_first) sp = generate_once(true, test.n_gen);
              plain = generate_once(false, test.n_gen);
              if (!spec_first) sp = generate_once(true, test.n_gen);
              r.samples_ns.push_back(sp.timings.decode_seconds * 1e9);
              r.samples_ts.push_back(rate(sp));
              r.spec_plain_samples_ts.push_back(rate(plain));
              r.spec_drafted += sp.speculation.drafted;
              r.spec_accepted += sp.speculation.accepted;
              forwards += sp.speculation.forwards;
              forward_tokens += sp.speculation.forward_tokens;
              if (sp.tokens != plain.tokens) r.spec_tokens_match = false;
            }
            mean_stddev(r.samples_ns, &r.avg_ns, &r.stddev_ns);
            mean_stddev(r.samples_ts, &r.avg_ts, &r.stddev_ts);
            double plain_sd = 0;
            mean_stddev(r.spec_plain_samples_ts, &r.spec_plain_avg_ts, &plain_sd);
            (void)paired_ratios(r.samples_ts, r.spec_plain_samples_ts, &r.spec_ratio_median, &r.spec_ratio_min,
                                &r.spec_ratio_max);
            r.spec_acceptance_rate = r.spec_drafted > 0 ? static_cast<double>(r.spec_accepted) / r.spec_drafted : 0.0;
            r.spec_tokens_per_forward = forwards > 0 ? static_cast<double>(forward_tokens) / forwards : 0.0;
            r.peak_rss_bytes = std::max<uint64_t>(model_peak, read_process_memory().peak_bytes);
            emit(r);
          };
          if (!interleave) {
            for (const int32_t depth : params.n_depth) {
              for (const Test& test : pp_tests) run_record(test, depth, caches[0]);
              for (const Test& test : tg_tests) {
                run_record(test, depth, caches[0]);
                if (speculate && test.n_gen > 1) run_spec_record(test, depth, caches[0]);  // a decode rate needs 2
              }
            }
          } else {
            // pp tests as usual, each depth on its own sequence; then each tg test at every depth
            // with the repetitions taken in turns (d0 rep 1, d1 rep 1, ..., d0 rep 2, ...), so a
            // change of machine speed meets every depth alike. Repetition i of two depths are
            // neighbours in time: their ratio is reported per pair (paired_ratio_*).
            for (size_t di = 0; di < params.n_depth.size(); ++di) {
              for (const Test& test : pp_tests) run_record(test, params.n_depth[di], caches[di]);
            }
            for (const Test& test : tg_tests) {
              std::vector<BenchRecord> rs;
              for (size_t di = 0; di < params.n_depth.size(); ++di) {
                rs.push_back(start_record(test, params.n_depth[di], caches[di]));
              }
              const bool probe = roof.bandwidth_measured;
              const double bandwidth_before = probe ? probe_now(n_threads) : 0.0;
              for (int32_t rep = 0; rep < params.repetitions; ++rep) {
                for (size_t di = 0; di < rs.size(); ++di) {
                  add_sample(rs[di], run_generation(ctx, caches[di], params.n_depth[di], test.n_gen));
                }
              }
              for (size_t di = 0; di < rs.size(); ++di) {
                finish_record(rs[di], bandwidth_before);
                set_paired_ratio(rs[di], rs[0]);
              }
              for (BenchRecord& r : rs) emit(r);
            }
          }
        }
      }
    }
   }
  }
  return records;
}

}  // namespace edgellm::bench
