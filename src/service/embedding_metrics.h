// The EmbeddingService's numbers, aggregated over its life (never the inputs' text): counters,
// gauges and two latency histograms, as JSON and Prometheus text (edgellm_embedding_*).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/json.h"
#include "service/embedding_request.h"
#include "service/service_metrics.h"

namespace edgellm {

struct EmbeddingMetrics {
  // Counters since the service started.
  uint64_t requests_submitted = 0;  // accepted by submit()
  uint64_t requests_finished = 0;   // final callbacks delivered
  uint64_t busy_rejections = 0;     // submit() answered BUSY (queue full)
  uint64_t invalid_requests = 0;    // submit() refused the request's contents
  uint64_t completed = 0;           // finished with every output
  uint64_t cancellations = 0;
  uint64_t timeouts = 0;
  uint64_t errors = 0;
  uint64_t embed_requests = 0;  // finished, by task
  uint64_t rerank_requests = 0;
  uint64_t inputs = 0;            // texts / token arrays / documents run
  uint64_t input_tokens = 0;      // their tokens
  uint64_t truncated_inputs = 0;  // inputs cut to fit (Truncation::kEnd)
  uint64_t forwards = 0;          // forward passes run
  uint64_t forward_tokens = 0;    // tokens over those
  uint64_t aborted_forwards = 0;  // abandoned between layers (cancel, deadline, pause, shutdown)
  double forward_seconds = 0;     // wall time inside forward passes
  uint64_t warmups = 0, warmups_skipped = 0;
  uint64_t trims = 0, trimmed_bytes = 0;
  // Gauges (at the snapshot).
  int32_t running = 0;  // requests admitted (inputs tokenized) and not finished
  int32_t waiting = 0;  // requests in the queue
  int32_t max_queued = 0;
  int32_t n_batch = 0;  // tokens per forward
  int32_t n_ctx = 0;    // longest input
  int32_t dims = 0;     // the model's embedding width
  bool paused = false;
  size_t rss_bytes = 0, peak_rss_bytes = 0;
  LatencyHistogram queue_ms;  // submit -> admitted
  LatencyHistogram total_ms;  // submit -> on_finish

  double tokens_per_second() const { return forward_seconds > 0 ? forward_tokens / forward_seconds : 0.0; }

  void add_finished(const EmbeddingResult& result);
  Json to_json() const;
  std::string to_prometheus() const;
};

}  // namespace edgellm
