#include "service/service_metrics.h"

#include <cstdio>

namespace edgellm {

void LatencyHistogram::add(double ms) {
  size_t b = 0;
  while (b < kBoundsMs.size() && ms > kBoundsMs[b]) ++b;
  ++counts[b];
  ++count;
  sum_ms += ms;
}

Json LatencyHistogram::to_json() const {
  Json buckets = Json::array();
  uint64_t cumulative = 0;
  for (size_t b = 0; b < counts.size(); ++b) {
    cumulative += counts[b];
    Json e = Json::object();
    e.set("le", b < kBoundsMs.size() ? Json(kBoundsMs[b]) : Json("+Inf"));
    e.set("count", cumulative);
    buckets.push_back(std::move(e));
  }
  Json j = Json::object();
  j.set("count", count);
  j.set("sum_ms", sum_ms);
  j.set("mean_ms", count > 0 ? sum_ms / static_cast<double>(count) : 0.0);
  j.set("buckets", std::move(buckets));
  return j;
}

void ServiceMetrics::add_finished(const RequestResult& r) {
  ++requests_finished;
  switch (r.finish_reason) {
    case FinishReason::kStop: ++finished_stop; break;
    case FinishReason::kLength: ++finished_length; break;
    case FinishReason::kCancelled: ++cancellations; break;
    case FinishReason::kTimeout: ++timeouts; break;
    case FinishReason::kError: ++errors; break;
  }
  const RequestStats& s = r.stats;
  prompt_tokens += static_cast<uint64_t>(s.prompt_tokens);
  prompt_tokens_cached += static_cast<uint64_t>(s.cached_tokens);
  completion_tokens += static_cast<uint64_t>(s.completion_tokens);
  prefill_seconds += s.prefill_ms / 1e3;
  decode_seconds += s.decode_ms / 1e3;
  if (s.completion_tokens > 1) decode_tokens += static_cast<uint64_t>(s.completion_tokens - 1);
  if (s.ttft_ms > 0) ttft_ms.add(s.ttft_ms);
  queue_ms.add(s.queue_ms);
}

Json ServiceMetrics::to_json() const {
  Json j = Json::object();
  j.set("requests_submitted", requests_submitted);
  j.set("requests_finished", requests_finished);
  j.set("busy_rejections", busy_rejections);
  j.set("invalid_requests", invalid_requests);
  Json fin = Json::object();
  fin.set("stop", finished_stop);
  fin.set("length", finished_length);
  fin.set("cancelled", cancellations);
  fin.set("timeout", timeouts);
  fin.set("error", errors);
  j.set("finish_reasons", std::move(fin));
  j.set("prompt_tokens", prompt_tokens);
  j.set("prompt_tokens_cached", prompt_tokens_cached);
  j.set("prefix_hit_rate", prefix_hit_rate());
  j.set("completion_tokens", completion_tokens);
  j.set("steps", steps);
  j.set("step_tokens", step_tokens);
  j.set("aborted_steps", aborted_steps);
  j.set("max_decode_batch", static_cast<int>(max_decode_batch));
  j.set("warmups", warmups);
  j.set("warmups_skipped", warmups_skipped);
  j.set("trims", trims);
  j.set("trimmed_bytes", trimmed_bytes);
  j.set("forward_seconds", forward_seconds);
  j.set("prefill_tokens_per_second", prefill_tokens_per_second());
  j.set("decode_tokens_per_second", decode_tokens_per_second());
  j.set("running", static_cast<int>(running));
  j.set("waiting", static_cast<int>(waiting));
  j.set("max_queued", static_cast<int>(max_queued));
  j.set("n_parallel", static_cast<int>(n_parallel));
  j.set("kv_blocks_used", static_cast<int>(kv_blocks_used));
  j.set("kv_blocks_cached", static_cast<int>(kv_blocks_cached));
  j.set("kv_blocks_free", static_cast<int>(kv_blocks_free));
  j.set("kv_blocks_total", static_cast<int>(kv_blocks_total));
  j.set("kv_block_tokens", static_cast<int>(kv_block_tokens));
  j.set("kv_pool_bytes", kv_pool_bytes);
  j.set("draft_context_bytes", draft_context_bytes);
  j.set("kv_evictions", kv_evictions);
  j.set("kv_fragmentation", kv_fragmentation);
  j.set("paused", paused);
  j.set("paused_idle", paused_idle);
  Json th = Json::object();
  th.set("decode", n_threads);
  th.set("prefill", n_threads_batch);
  th.set("decode_placement", decode_placement);
  th.set("prefill_placement", prefill_placement);
  th.set("affinity_failed", thread_affinity_failed);
  th.set("priority_denied", thread_priority_denied);
  th.set("note", thread_note);
  j.set("threads", std::move(th));
  j.set("rss_bytes", static_cast<uint64_t>(rss_bytes));
  j.set("peak_rss_bytes", static_cast<uint64_t>(peak_rss_bytes));
  j.set("ttft_ms", ttft_ms.to_json());
  j.set("queue_ms", queue_ms.to_json());
  return j;
}

void prometheus_metric(std::string& out, const char* name, const char* type, const char* help, double value,
                       const char* labels) {
  char buf[512];
  std::snprintf(buf, sizeof(buf), "# HELP edgellm_%s %s\n# TYPE edgellm_%s %s\nedgellm_%s%s %.17g\n", name, help, name,
                type, name, labels, value);
  out += buf;
}

void prometheus_histogram(std::string& out, const char* name, const char* help, const LatencyHistogram& h) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), "# HELP edgellm_%s %s\n# TYPE edgellm_%s histogram\n", name, help, name);
  out += buf;
  uint64_t cumulative = 0;
  for (size_t b = 0; b < h.counts.size(); ++b) {
    cumulative += h.counts[b];
    if (b < LatencyHistogram::kBoundsMs.size()) {
      std::snprintf(buf, sizeof(buf), "edgellm_%s_bucket{le=\"%g\"} %llu\n", name, LatencyHistogram::kBoundsMs[b] / 1e3,
                    static_cast<unsigned long long>(cumulative));
    } else {
      std::snprintf(buf, sizeof(buf), "edgellm_%s_bucket{le=\"+Inf\"} %llu\n", name,
                    static_cast<unsigned long long>(cumulative));
    }
    out += buf;
  }
  std::snprintf(buf, sizeof(buf), "edgellm_%s_sum %.17g\nedgellm_%s_count %llu\n", name, h.sum_ms / 1e3, name,
                static_cast<unsigned long long>(h.count));
  out += buf;
}

namespace {

void metric(std::string& out, const char* name, const char* type, const char* help, double value,
            const char* labels = "") {
  prometheus_metric(out, name, type, help, value, labels);
}
void histogram(std::string& out, const char* name, const char* help, const LatencyHistogram& h) {
  prometheus_histogram(out, name, help, h);
}

}  // namespace

std::string ServiceMetrics::to_prometheus() const {
  std::string out;
  const auto d = [](uint64_t v) { return static_cast<double>(v); };
  metric(out, "requests_submitted_total", "counter", "Requests accepted by submit.", d(requests_submitted));
  metric(out, "requests_finished_total", "counter", "Requests that received their final callback.",
         d(requests_finished));
  metric(out, "busy_rejections_total", "counter", "Submissions answered BUSY because the queue was full.",
         d(busy_rejections));
  metric(out, "invalid_requests_total", "counter", "Submissions refused for invalid contents.", d(invalid_requests));
  metric(out, "thread_priority_denied_total", "counter",
         "Worker thread priorities the power mode asked for that the system refused.", d(thread_priority_denied));
  out +=
      "# HELP edgellm_requests_by_reason_total Finished requests by finish reason.\n"
      "# TYPE edgellm_requests_by_reason_total counter\n";
  const std::pair<const char*, uint64_t> reasons[] = {{"stop", finished_stop},
                                                      {"length", finished_length},
                                                      {"cancelled", cancellations},
                                                      {"timeout", timeouts},
                                                      {"error", errors}};
  for (const auto& [name, v] : reasons) {
    out += "edgellm_requests_by_reason_total{reason=\"" + std::string(name) + "\"} " + std::to_string(v) + "\n";
  }
  metric(out, "prompt_tokens_total", "counter", "Prompt tokens (prefix-cache hits included).", d(prompt_tokens));
  metric(out, "prompt_tokens_cached_total", "counter", "Prompt tokens taken from the KV prefix cache.",
         d(prompt_tokens_cached));
  metric(out, "prefix_hit_rate", "gauge", "Prompt tokens reused from the KV prefix cache / prompt tokens.",
         prefix_hit_rate());
  metric(out, "completion_tokens_total", "counter", "Tokens sampled.", d(completion_tokens));
  metric(out, "steps_total", "counter", "Scheduler steps that ran a forward pass.", d(steps));
  metric(out, "step_tokens_total", "counter", "Batch entries forwarded over all steps.", d(step_tokens));
  metric(out, "aborted_steps_total", "counter", "Forward passes abandoned between layers.", d(aborted_steps));
  metric(out, "max_decode_batch", "gauge", "The most sequences decoded in one step.", max_decode_batch);
  metric(out, "warmups_total", "counter", "Warm-up forwards run.", d(warmups));
  metric(out, "warmups_skipped_total", "counter", "Warm-ups skipped.", d(warmups_skipped));
  metric(out, "trims_total", "counter", "Memory trims.", d(trims));
  metric(out, "trimmed_bytes_total", "counter", "Bytes released by trims.", d(trimmed_bytes));
  metric(out, "forward_seconds_total", "counter", "Wall time inside forward passes.", forward_seconds);
  metric(out, "prefill_tokens_per_second", "gauge", "Prompt tokens per second of request prefill time.",
         prefill_tokens_per_second());
  metric(out, "decode_tokens_per_second", "gauge", "Per-request decode tokens per second.", decode_tokens_per_second());
  metric(out, "requests_running", "gauge", "Requests holding a sequence.", running);
  metric(out, "requests_waiting", "gauge", "Requests in the waiting queue.", waiting);
  metric(out, "queue_capacity", "gauge", "Waiting-queue bound.", max_queued);
  metric(out, "kv_blocks_used", "gauge", "KV blocks in use.", kv_blocks_used);
  metric(out, "kv_blocks_cached", "gauge", "Unreferenced KV blocks kept by the prefix cache.", kv_blocks_cached);
  metric(out, "kv_blocks_free", "gauge", "KV blocks neither in use nor cached.", kv_blocks_free);
  metric(out, "kv_blocks_total", "gauge", "KV blocks in the pool.", kv_blocks_total);
  metric(out, "kv_pool_bytes", "gauge", "Bytes of the KV block pool.", static_cast<double>(kv_pool_bytes));
  metric(out, "draft_context_bytes", "gauge", "Bytes of the draft model's per-sequence contexts (KV, scratch, logits).",
         static_cast<double>(draft_context_bytes));
  metric(out, "kv_evictions_total", "counter", "Cached KV blocks evicted for new content.", d(kv_evictions));
  metric(out, "kv_fragmentation", "gauge", "Unused slots in the KV blocks running sequences hold, as a fraction.",
         kv_fragmentation);
  metric(out, "paused", "gauge", "1 while the service is paused.", paused ? 1 : 0);
  metric(out, "paused_idle", "gauge", "1 once the paused scheduler runs no step until resumed.", paused_idle ? 1 : 0);
  metric(out, "resident_memory_bytes", "gauge", "Process resident set size.", static_cast<double>(rss_bytes));
  metric(out, "peak_resident_memory_bytes", "gauge", "Process peak resident set size.",
         static_cast<double>(peak_rss_bytes));
  histogram(out, "time_to_first_token_seconds", "Submit to first token.", ttft_ms);
  histogram(out, "queue_wait_seconds", "Submit to admission.", queue_ms);
  return out;
}

}  // namespace edgellm
