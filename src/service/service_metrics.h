// The service's numbers, aggregated over its life: counters, gauges and two latency histograms.
// Never the user's text. A snapshot is a plain struct; to_json() and to_prometheus() render it
// (Prometheus text exposition format 0.0.4: counters end in _total, histograms carry
// cumulative _bucket{le=...}, _sum and _count).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/json.h"
#include "service/request.h"

namespace edgellm {

// A latency histogram in milliseconds with fixed upper bounds (the last bucket is +Inf).
struct LatencyHistogram {
  static constexpr std::array<double, 11> kBoundsMs = {10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000};
  std::array<uint64_t, kBoundsMs.size() + 1> counts{};  // per bucket, not cumulative
  uint64_t count = 0;
  double sum_ms = 0;

  void add(double ms);
  Json to_json() const;
};

// Prometheus text for one metric ("# HELP", "# TYPE" and the sample) and for a histogram in
// seconds: edgellm_<name>. Shared by the services' metrics.
void prometheus_metric(std::string& out, const char* name, const char* type, const char* help, double value,
                       const char* labels = "");
void prometheus_histogram(std::string& out, const char* name, const char* help, const LatencyHistogram& h);

struct ServiceMetrics {
  // Counters since the service started.
  uint64_t requests_submitted = 0;  // accepted by submit()
  uint64_t requests_finished = 0;   // final callbacks delivered
  uint64_t busy_rejections = 0;     // submit() answered BUSY (queue full)
  uint64_t invalid_requests = 0;    // submit() refused the request's contents
  uint64_t finished_stop = 0;
  uint64_t finished_length = 0;
  uint64_t cancellations = 0;
  uint64_t timeouts = 0;
  uint64_t errors = 0;
  uint64_t prompt_tokens = 0;        // prompt tokens, over all requests (cached ones included)
  uint64_t prompt_tokens_cached = 0; // of those, taken from the KV prefix cache (not prefilled)
  uint64_t completion_tokens = 0;    // sampled, over all requests
  uint64_t steps = 0;                // scheduler steps that ran a forward pass
  uint64_t step_tokens = 0;          // batch entries over those steps
  uint64_t aborted_steps = 0;        // forwards abandoned between layers (cancel, deadline, pause)
  int32_t max_decode_batch = 0;      // the most sequences decoded in one step (decode entries of
                                     // one forward; prompt chunks not counted): above 1 only when
                                     // requests were batched
  uint64_t warmups = 0;              // warm-up forwards run
  uint64_t warmups_skipped = 0;      // warm-ups skipped (low memory, busy, shut down)
  uint64_t trims = 0;
  uint64_t trimmed_bytes = 0;
  double forward_seconds = 0;  // wall time inside forward passes
  double prefill_seconds = 0;  // sum over requests of their prefill time
  double decode_seconds = 0;   // sum over requests of their decode time
  uint64_t decode_tokens = 0;  // tokens sampled after each request's first one
  // Gauges (at the snapshot).
  int32_t running = 0;  // requests holding a sequence
  int32_t waiting = 0;  // requests in the queue
  int32_t max_queued = 0;
  int32_t n_parallel = 0;        // sequences
  int32_t kv_blocks_used = 0;    // referenced by a sequence
  int32_t kv_blocks_cached = 0;  // unreferenced, kept by the prefix cache (evicted on demand)
  int32_t kv_blocks_free = 0;    // neither
  int32_t kv_blocks_total = 0;
  int32_t kv_block_tokens = 0;
  uint64_t kv_pool_bytes = 0;   // the pool's size (its budget)
  // The draft model's per-slot contexts (speculation mode draft): their KV, scratch and logits
  // (not the draft model's weights); 0 without a draft model.
  uint64_t draft_context_bytes = 0;
  uint64_t kv_evictions = 0;    // cached blocks reused for new content (counter)
  double kv_fragmentation = 0;  // unused slots / slots of the blocks the running sequences hold
  bool paused = false;
  bool paused_idle = false;  // paused, and the scheduler has seen it: no forward step runs
                             // (no token is streamed) until resume(); cancellations and
                             // deadlines are still handled. pause() only asks: this says
                             // the step in flight, if any, has ended.
  // Threads (ContextParams, device/power_mode.h): per phase, where they run, and what applying
  // that did (a refused priority is counted and noted, never an error).
  int32_t n_threads = 0;                            // decode
  int32_t n_threads_batch = 0;                      // prefill
  std::string decode_placement, prefill_placement;  // ThreadPlacement::to_string()
  uint64_t thread_affinity_failed = 0;
  uint64_t thread_priority_denied = 0;
  std::string thread_note;  // the first failure, "" when none
  size_t rss_bytes = 0;
  size_t peak_rss_bytes = 0;
  LatencyHistogram ttft_ms;
  LatencyHistogram queue_ms;

  // Per-request decode speed averaged over requests' decode time (tokens / seconds).
  double decode_tokens_per_second() const { return decode_seconds > 0 ? decode_tokens / decode_seconds : 0.0; }
  double prefill_tokens_per_second() const {
    return prefill_seconds > 0 ? (prompt_tokens - prompt_tokens_cached) / prefill_seconds : 0.0;
  }
  // Prefix cache hit rate: prompt tokens reused / prompt tokens.
  double prefix_hit_rate() const {
    return prompt_tokens > 0 ? static_cast<double>(prompt_tokens_cached) / prompt_tokens : 0.0;
  }

  // Counts a finished request (counters by finish reason, tokens, histograms).
  void add_finished(const RequestResult& result);

  Json to_json() const;
  std::string to_prometheus() const;
};

}  // namespace edgellm
