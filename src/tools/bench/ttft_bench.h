// `edgellm bench --ttft`: time to first token of the seed scenario (an app that starts, loads its
// model and answers a prompt; then answers more prompts with the model loaded), through the
// InferenceService as an app's requests go (service defaults: step_tokens-sized prefill chunks).
//
//   cold        process-internal cold start: Model::load (open, mmap, repack) -> service start
//               (Context, tokenizer, scheduler thread) -> submit -> first sampled token; load,
//               start and first-token parts are reported apart. Only this model's objects are
//               new: the process, its thread pool and the kernel tables may already exist.
//               The page cache is warm after the first run (the file stays cached); the rows say
//               how much of the file was resident before each load (mincore). With
//               drop_page_cache, every repetition also runs a cold start after
//               posix_fadvise(DONTNEED) on the file ("cold, page cache dropped"), A/B in one run.
//   warm        the model loaded and warmed up by one untimed request: submit -> first token
//               (RequestStats::ttft_ms) of a prompt of fresh random tokens (no prefix cache hit);
//   warm + system        a fresh random system prompt of system_tokens, then the prompt (nothing
//                        cached; this request populates the prefix cache);
//   warm + system cached the same system prompt and another prompt right after: the service maps
//                        the system prompt's full KV blocks from its prefix cache (cached_tokens)
//                        and prefills the rest.
// Each scenario and prompt length runs `repetitions` times and reports the median and the range.
// The cold rows run first, all of them, before the warm model is loaded (its mapping would keep
// the file's pages cached whatever DONTNEED asks); within the cold rows and within the warm ones
// the repetitions are interleaved (one repetition of every row, then the next), so A/B pairs
// (page cache warm / dropped, system prompt cached / not) see the same minutes of a noisy machine.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/tensor_type.h"
#include "model/model.h"

namespace edgellm::bench {

struct TtftParams {
  std::vector<std::string> models;
  std::vector<int32_t> prompts = {50, 300, 1000};  // user prompt tokens, one row per length and scenario
  int32_t system_tokens = 256;   // the shared system prompt of the "+ system" rows; 0 = no such rows
  int32_t repetitions = 3;
  int32_t n_threads = 0;         // 0 = the service's default
  RepackMode repack = RepackMode::kAuto;
  TensorType kv_type = TensorType::F16;
  bool cold = true;              // the cold-start rows
  bool drop_page_cache = false;  // also cold starts after dropping the file's cached pages
  uint64_t seed = 1234;
};

struct TtftRecord {
  std::string model_filename;
  std::string model_type;      // "qwen2 0.5B Q4_0"
  std::string scenario;        // "cold", "cold, page cache dropped", "warm", "warm + system", "warm + system cached"
  int32_t prompt_tokens = 0;   // the user prompt
  int32_t system_tokens = 0;   // system prompt ahead of it (0 = none)
  int32_t cached_tokens = 0;   // prompt positions taken from the prefix cache (the last repetition)
  int32_t n_threads = 0;
  std::string repack;          // auto / on / off
  // Per repetition, milliseconds. Cold rows: ttft = load + start + first_token.
  std::vector<double> ttft_ms;
  std::vector<double> load_ms;         // cold only: Model::load
  std::vector<double> start_ms;        // cold only: InferenceService construction
  std::vector<double> first_token_ms;  // submit -> first token (RequestStats::ttft_ms)
  std::vector<double> resident_before; // cold only: fraction of the file in the page cache before the load (-1 unknown)
  double median_ttft_ms = 0, min_ttft_ms = 0, max_ttft_ms = 0;
  double median_load_ms = 0, median_start_ms = 0, median_first_token_ms = 0;
  double median_resident_before = -1;
};

double median(std::vector<double> v);

// Runs every scenario of every model; `log` gets progress lines. Throws Error for a model that
// cannot be loaded, a prompt length < 1, repetitions < 1 or system_tokens < 0.
std::vector<TtftRecord> run_ttft_bench(const TtftParams& params, const std::function<void(const std::string&)>& log = {});

// A Markdown table (one row per record) and the JSON array of the records.
std::string format_ttft_markdown(const std::vector<TtftRecord>& records);
std::string format_ttft_json(const std::vector<TtftRecord>& records);

}  // namespace edgellm::bench
