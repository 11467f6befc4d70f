// llama-bench style throughput measurement of the engine.
//
//   pp test: prefill n_prompt random tokens in one batch (split by n_batch) after n_depth
//            context tokens; tg test: generate n_gen tokens one decode call at a time (logits
//            every step, no sampling) after n_depth context tokens. The depth prefill is not
//            timed and is made once per context and depth, then restored by truncation.
//   Each test runs once unmeasured (warm-up; tg warm-up is a short run of kWarmupTokens tokens)
//   and then `repetitions` times; tokens/s are averaged over repetitions (mean +- stddev).
//
// Decode is memory-bound: every weight byte (every matrix incl. the output head, and the norms;
// one row of an untied embedding table) plus the KV cache up to the current position is read
// once per generated token. bytes_per_token * tok/s is the effective read bandwidth, compared
// with the machine's measured bandwidth (memory_bandwidth.h).
//
// Speculative decode (BenchParams::speculation, `edgellm bench --spec ngram|draft`): beside each
// tg test, a "tg N spec MODE kK" record. Each repetition runs greedy generation (generate(), the
// sampler at temperature 0, no tokenizer) of N tokens after the depth prefix and a fixed prompt of
// kSpecPromptTokens random tokens twice, plain and speculative, in alternating order, so both
// arms share the minute they ran in; the record's t/s is the speculative arm's decode rate
// (decode_tokens / decode_seconds), its spec_ratio_* the per-repetition ratio to the plain arm
// (median, min, max), and spec_tokens_match says the two arms produced the same tokens (they
// must: the CLI exits 4 otherwise). The drafter sees the depth prefix too (the n-gram history,
// the draft model's context); the warm-up run fills the draft model's KV with the prefix and
// prompt, as the target's prefill, which is not timed either.
//
// Prefill is compute-bound: a pp test's matmul ops (prefill_ops.h: every linear layer for every
// prompt token, the output head for the last token only; attention not included) over its time
// are its effective int8 ops/s, compared with the int8 peak (int8_peak.h) of the probe kernel
// whose instructions the active ISA's matmuls use, measured at the test's thread count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tools/bench/int8_peak.h"
#include "tools/bench/memory_bandwidth.h"
#include "generation/generate.h"
#include "kernels/tensor_type.h"

#include "model/model.h"

namespace edgellm::bench {

struct BenchParams {
  std::vector<std::string> models;
  std::vector<int32_t> n_prompt = {512};   // one pp test per value (0 = none)
  std::vector<int32_t> n_gen = {128};      // one tg test per value (0 = none)
  std::vector<int32_t> n_depth = {0};      // every test at every depth
  std::vector<int32_t> n_threads;          // empty = {hardware threads}
  std::vector<int32_t> n_batch = {512};
  std::vector<TensorType> kv_types = {TensorType::F16};  // K cache types
  std::vector<TensorType> kv_types_v;  // V cache types, every one with every K type; empty = V as K
  std::vector<RepackMode> repack = {RepackMode::kAuto};  // the model is loaded once per mode
  int32_t repetitions = 3;
  // tg tests at several depths: one sequence per depth and the repetitions taken in turns
  // (d0, d1, ..., d0, d1, ...), each record also carrying its paired ratio to the first depth.
  // A ratio of two depths measured minutes apart on a guest whose speed drifts by 20% says
  // little; neighbours in time share the drift.
  bool interleave_depths = false;
  bool measure_bandwidth = true;
  size_t bandwidth_bytes = size_t{1} << 30;
  bool measure_int8_peak = true;
  double int8_peak_seconds = 0.2;          // per probe pass (best of 3)
  uint64_t seed = 1234;                    // random prompt / generated token ids
  // Speculative decode beside plain decode (see the file comment); mode off: none. kDraft:
  // draft_model_path is loaded with each repack mode, as the models are.
  SpeculationParams speculation;
  std::string draft_model_path;
};

inline constexpr int32_t kWarmupTokens = 8;
inline constexpr int32_t kSpecPromptTokens = 32;  // prompt after the depth prefix of a spec record

struct BenchRecord {
  // llama-bench fields
  std::string model_filename;
  std::string model_type;        // "qwen2 0.5B Q4_0"
  uint64_t model_size = 0;       // tensor bytes
  uint64_t model_n_params = 0;
  int32_t n_batch = 0;
  int32_t n_threads = 0;
  std::string type_k;            // KV cache type ("f16")
  std::string type_v;
  int32_t n_prompt = 0;
  int32_t n_gen = 0;
  int32_t n_depth = 0;
  std::string test_time;         // ISO 8601 UTC, start of the test
  double avg_ns = 0, stddev_ns = 0;
  double avg_ts = 0, stddev_ts = 0;
  std::vector<double> samples_ns;
  std::vector<double> samples_ts;
  // ours
  bool is_generation = false;    // tg test: the bandwidth fields below are meaningful
  // --interleave-depths tg records: samples_ts[i] / the first depth's samples_ts[i] over the
  // repetitions (median, min, max); paired_ratio_depth = that first depth, -1 when not set.
  double paired_ratio_median = 0, paired_ratio_min = 0, paired_ratio_max = 0;
  int32_t paired_ratio_depth = -1;
  double bytes_per_token = 0;
  double effective_gbps = 0;     // bytes_per_token * avg_ts / 1e9
  double bandwidth_gbps = 0;     // best read bandwidth probed so far at this thread count (0 = not measured)
  double bandwidth_fraction = 0; // effective / bandwidth_gbps
  // The better of two probes at this thread count, just before and just after the timed
  // repetitions: the roofline of the minutes the test ran in (this guest's bandwidth moves by up
  // to ~20% from minute to minute, so the best probe of a long run can be from a faster minute).
  double bandwidth_now_gbps = 0;     // 0 = not measured
  double bandwidth_now_fraction = 0; // effective / bandwidth_now_gbps
  // pp tests (prefill_ops.h); 0 / empty for tg tests
  double matmul_ops_per_token = 0;  // matmul ops of the test / n_prompt (1 MAC = 2 ops)
  double attention_ops = 0;         // q . k and p . v ops of the whole test, not in the above
  bool int8_weights = false;        // the matmuls run as int8 dot products (quantized weights)
  double int8_ops_per_second = 0;   // matmul_ops_per_token * avg_ts
  std::string int8_peak_kernel;     // probe kernel of the active ISA ("avx512_vnni"; "" = none)
  double int8_peak_ops_per_second = 0;  // its peak at n_threads threads, ops/s (0 = not measured)
  double int8_peak_fraction = 0;        // int8_ops_per_second / int8_peak_ops_per_second
  // The same against the vector probe of the ISA's family (int8_vector_peak_kernel_for_active_isa:
  // on AMX avx512_vnni, elsewhere int8_peak_kernel), at n_threads threads.
  std::string int8_vector_peak_kernel;
  double int8_vector_peak_fraction = 0;
  // The same in CPU time, for a machine shared with other work: matmul ops per CPU-second of the
  // test (process CPU time; spin-waiting threads count as busy, so this errs low) over the probe's
  // ops per CPU-second of one thread (Int8PeakResult::macs_per_cpu_second at n_threads).
  double int8_ops_per_cpu_second = 0;
  double int8_peak_cpu_fraction = 0;
  uint64_t peak_rss_bytes = 0;   // VmHWM after the test (reset when each model is loaded)
  // Process CPU time per repetition (all threads). On a machine shared with other work, wall
  // time includes waiting for a core; cpu_ts = tokens * n_threads / CPU seconds estimates the
  // rate with n_threads cores to ourselves (spin-waiting threads count as busy, as they would).
  std::vector<double> samples_cpu_ns;
  double avg_cpu_ns = 0;
  double cpu_ts = 0;
  std::string isa;               // kernel ISA in use
  std::string repack;            // load mode asked for: auto / on / off
  uint64_t repacked_bytes = 0;   // anonymous memory holding repacked weights (0 = none repacked)
  uint64_t pack_bytes = 0;       // repacked weights mapped from a pack file (model/pack_file.h; 0 = none)
  // Speculative tg records (spec_mode "ngram" / "draft"; "" = every other record). The bandwidth
  // fields stay 0: tokens are not one weight read each.
  std::string spec_mode;
  int32_t spec_draft_max = 0;
  int32_t spec_drafted = 0, spec_accepted = 0;  // over the repetitions
  double spec_acceptance_rate = 0;              // accepted / drafted
  double spec_tokens_per_forward = 0;           // tokens sampled per decode forward
  std::vector<double> spec_plain_samples_ts;    // the plain arm, repetition by repetition
  double spec_plain_avg_ts = 0;
  double spec_ratio_median = 0, spec_ratio_min = 0, spec_ratio_max = 0;  // samples_ts[i] / plain[i]
  bool spec_tokens_match = true;                // every repetition's tokens equal the plain arm's

  bool is_speculative() const { return !spec_mode.empty(); }
  std::string test_name() const;  // "pp512", "tg128", "tg128 @ d4096", "tg128 spec ngram k8"
};

struct BenchMachine {
  std::string cpu;               // /proc/cpuinfo model name
  int hardware_threads = 0;
  BandwidthResult bandwidth_1;   // one thread
  BandwidthResult bandwidth_all; // every hardware thread
  bool bandwidth_measured = false;
  // Every int8 probe kernel of this CPU at 1 thread and at every hardware thread (run_bench adds
  // the other thread counts it tests); empty when not measured.
  std::vector<Int8PeakResult> int8_peak;
};

// The probe of `kernel` at exactly n_threads threads in `m`, or nullptr.
const Int8PeakResult* find_int8_peak(const BenchMachine& m, const std::string& kernel, int n_threads);

// Bytes read to generate one token at KV length `kv_tokens` (see the file comment).
double decode_bytes_per_token(const Model& model, TensorType kv_type_k, TensorType kv_type_v, double kv_tokens);
// "qwen2 0.5B Q4_K_M": architecture, general.size_label (or the parameter count), file type.
std::string describe_model_type(const Model& model);

BenchMachine describe_machine(const BenchParams& params);

// Runs every test of every model; `on_record` gets each record when it completes, `log` gets
// progress lines. Errors (missing model, context too small) throw and name the model.
std::vector<BenchRecord> run_bench(const BenchParams& params, const BenchMachine& machine,
                                   const std::function<void(const BenchRecord&)>& on_record = {},
                                   const std::function<void(const std::string&)>& log = {});

// "dir/model.gguf" -> "model.gguf": how reports name a model file.
std::string file_name_of(const std::string& path);

}  // namespace edgellm::bench
