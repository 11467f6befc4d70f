// The C ABI's metrics: the struct (written up to the caller's struct_size), JSON and Prometheus.
#include <string>

#include "api/c_api_internal.h"

using namespace edgellm;
using capi::fail;
using capi::guard;

namespace {

uint64_t json_count(const Json& j, const char* key) {
  const Json* v = j.find(key);
  return v != nullptr && v->is_number() ? static_cast<uint64_t>(v->as_number()) : 0;
}

}  // namespace

extern "C" {

edgellm_metrics edgellm_metrics_init(void) {
  edgellm_metrics m{};
  m.struct_size = sizeof m;
  return m;
}

edgellm_status edgellm_metrics_get(edgellm_runtime* runtime, edgellm_metrics* out) {
  return guard([&] {
    Runtime& rt = capi::runtime_of(runtime);
    if (out == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "out is NULL");
    uint32_t caller_size = 0;
    std::memcpy(&caller_size, out, sizeof caller_size);
    if (caller_size < sizeof(uint32_t) + 1) {
      return fail(EDGELLM_ERR_INVALID_ARGUMENT, "out->struct_size is " + std::to_string(caller_size) +
                                                    " (start from edgellm_metrics_init())");
    }
    const ServiceMetrics m = rt.service_metrics();
    edgellm_metrics r{};
    r.struct_size = sizeof r;
    r.requests_submitted = m.requests_submitted;
    r.requests_finished = m.requests_finished;
    r.busy_rejections = m.busy_rejections;
    r.invalid_requests = m.invalid_requests;
    r.finished_stop = m.finished_stop;
    r.finished_length = m.finished_length;
    r.cancellations = m.cancellations;
    r.timeouts = m.timeouts;
    r.errors = m.errors;
    r.prompt_tokens = m.prompt_tokens;
    r.completion_tokens = m.completion_tokens;
    r.steps = m.steps;
    r.step_tokens = m.step_tokens;
    r.aborted_steps = m.aborted_steps;
    r.prefill_tokens_per_second = m.prefill_tokens_per_second();
    r.decode_tokens_per_second = m.decode_tokens_per_second();
    r.ttft_ms_mean = m.ttft_ms.count > 0 ? m.ttft_ms.sum_ms / static_cast<double>(m.ttft_ms.count) : 0.0;
    r.queue_ms_mean = m.queue_ms.count > 0 ? m.queue_ms.sum_ms / static_cast<double>(m.queue_ms.count) : 0.0;
    r.running = m.running;
    r.waiting = m.waiting;
    r.paused = m.paused;
    r.rss_bytes = m.rss_bytes;
    r.peak_rss_bytes = m.peak_rss_bytes;
    r.kv_blocks_used = m.kv_blocks_used;
    r.kv_blocks_cached = m.kv_blocks_cached;
    r.kv_blocks_free = m.kv_blocks_free;
    r.kv_blocks_total = m.kv_blocks_total;
    r.kv_pool_bytes = m.kv_pool_bytes;
    r.prompt_tokens_cached = m.prompt_tokens_cached;
    r.prefix_hit_rate = m.prefix_hit_rate();
    r.kv_fragmentation = m.kv_fragmentation;
    r.kv_evictions = m.kv_evictions;
    r.n_threads = m.n_threads;
    r.n_threads_batch = m.n_threads_batch;
    r.thread_priority_denied = m.thread_priority_denied;
    r.model_swaps = rt.swaps();
    const Json d = rt.degradation_json();
    r.degradation_rung = static_cast<int32_t>(rt.rung());
    r.degradation_steps = json_count(d, "steps");
    r.degraded_refusals = json_count(d, "refused_requests");
    r.degraded_endings = json_count(d, "ended_requests");
    const RouterCounters c = rt.router_counters();
    r.routed_local = c.local;
    r.routed_low_confidence = c.low_confidence;
    r.routed_cloud = c.cloud;
    r.cloud_failures = c.cloud_failures;
    r.privacy_blocks = c.privacy_blocks;
    r.failure_fallbacks = c.failure_fallbacks;
    r.sessions = static_cast<int32_t>(rt.sessions().count());
    r.session_bytes = rt.sessions().bytes();
    r.max_decode_batch = m.max_decode_batch;
    r.paused_idle = m.paused_idle;
    // Only the caller's size: a program built against an older header has a smaller struct.
    // struct_size then says what was written: the caller's size, or this library's when the
    // caller's struct is larger (a newer program: its fields past ours were not written).
    const uint32_t written = static_cast<uint32_t>(std::min<size_t>(caller_size, sizeof r));
    std::memcpy(static_cast<void*>(out), &r, written);
    std::memcpy(static_cast<void*>(out), &written, sizeof written);
    return EDGELLM_OK;
  });
}

edgellm_status edgellm_metrics_json(edgellm_runtime* runtime, char* buf, size_t capacity, size_t* length) {
  return guard([&] { return capi::copy_out(capi::runtime_of(runtime).metrics_json().dump(), buf, capacity, length); });
}

edgellm_status edgellm_metrics_prometheus(edgellm_runtime* runtime, char* buf, size_t capacity, size_t* length) {
  return guard([&] { return capi::copy_out(capi::runtime_of(runtime).metrics_prometheus(), buf, capacity, length); });
}

}  // extern "C"
