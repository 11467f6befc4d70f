#include "service/embedding_metrics.h"

namespace edgellm {

void EmbeddingMetrics::add_finished(const EmbeddingResult& r) {
  ++requests_finished;
  switch (r.finish_reason) {
    case FinishReason::kStop:
    case FinishReason::kLength: ++completed; break;
    case FinishReason::kCancelled: ++cancellations; break;
    case FinishReason::kTimeout: ++timeouts; break;
    case FinishReason::kError: ++errors; break;
  }
  ++(r.task == EmbeddingTask::kRerank ? rerank_requests : embed_requests);
  if (r.finish_reason == FinishReason::kStop) {
    inputs += r.input_tokens.size();
    input_tokens += static_cast<uint64_t>(r.prompt_tokens);
    for (const uint8_t t : r.truncated) truncated_inputs += t;
  }
  queue_ms.add(r.queue_ms);
  total_ms.add(r.total_ms);
}

Json EmbeddingMetrics::to_json() const {
  Json j = Json::object();
  j.set("requests_submitted", requests_submitted);
  j.set("requests_finished", requests_finished);
  j.set("busy_rejections", busy_rejections);
  j.set("invalid_requests", invalid_requests);
  Json fin = Json::object();
  fin.set("stop", completed);
  fin.set("cancelled", cancellations);
  fin.set("timeout", timeouts);
  fin.set("error", errors);
  j.set("finish_reasons", std::move(fin));
  j.set("embed_requests", embed_requests);
  j.set("rerank_requests", rerank_requests);
  j.set("inputs", inputs);
  j.set("input_tokens", input_tokens);
  j.set("truncated_inputs", truncated_inputs);
  j.set("forwards", forwards);
  j.set("forward_tokens", forward_tokens);
  j.set("aborted_forwards", aborted_forwards);
  j.set("forward_seconds", forward_seconds);
  j.set("tokens_per_second", tokens_per_second());
  j.set("warmups", warmups);
  j.set("warmups_skipped", warmups_skipped);
  j.set("trims", trims);
  j.set("trimmed_bytes", trimmed_bytes);
  j.set("running", static_cast<int>(running));
  j.set("waiting", static_cast<int>(waiting));
  j.set("max_queued", static_cast<int>(max_queued));
  j.set("n_batch", static_cast<int>(n_batch));
  j.set("n_ctx", static_cast<int>(n_ctx));
  j.set("dims", static_cast<int>(dims));
  j.set("paused", paused);
  j.set("rss_bytes", static_cast<uint64_t>(rss_bytes));
  j.set("peak_rss_bytes", static_cast<uint64_t>(peak_rss_bytes));
  j.set("queue_ms", queue_ms.to_json());
  j.set("total_ms", total_ms.to_json());
  return j;
}

std::string EmbeddingMetrics::to_prometheus() const {
  std::string out;
  const auto d = [](uint64_t v) { return static_cast<double>(v); };
  const auto counter = [&](const char* name, const char* help, double v) {
    prometheus_metric(out, name, "counter", help, v);
  };
  const auto gauge = [&](const char* name, const char* help, double v) {
    prometheus_metric(out, name, "gauge", help, v);
  };
  counter("embedding_requests_submitted_total", "Embedding and rerank requests accepted by submit.",
          d(requests_submitted));
  counter("embedding_requests_finished_total", "Embedding and rerank requests that received their final callback.",
          d(requests_finished));
  counter("embedding_busy_rejections_total", "Embedding submissions answered BUSY because the queue was full.",
          d(busy_rejections));
  counter("embedding_invalid_requests_total", "Embedding submissions refused for invalid contents.",
          d(invalid_requests));
  out +=
      "# HELP edgellm_embedding_requests_by_reason_total Finished embedding requests by finish reason.\n"
      "# TYPE edgellm_embedding_requests_by_reason_total counter\n";
  const std::pair<const char*, uint64_t> reasons[] = {
      {"stop", completed}, {"cancelled", cancellations}, {"timeout", timeouts}, {"error", errors}};
  for (const auto& [name, v] : reasons) {
    out +=
        "edgellm_embedding_requests_by_reason_total{reason=\"" + std::string(name) + "\"} " + std::to_string(v) + "\n";
  }
  out +=
      "# HELP edgellm_embedding_requests_by_task_total Finished embedding requests by task.\n"
      "# TYPE edgellm_embedding_requests_by_task_total counter\n"
      "edgellm_embedding_requests_by_task_total{task=\"embed\"} " +
      std::to_string(embed_requests) +
      "\n"
      "edgellm_embedding_requests_by_task_total{task=\"rerank\"} " +
      std::to_string(rerank_requests) + "\n";
  counter("embedding_inputs_total", "Inputs (texts, token arrays, documents) embedded or scored.", d(inputs));
  counter("embedding_input_tokens_total", "Tokens of those inputs.", d(input_tokens));
  counter("embedding_truncated_inputs_total", "Inputs cut to fit the model.", d(truncated_inputs));
  counter("embedding_forwards_total", "Embedding forward passes.", d(forwards));
  counter("embedding_forward_tokens_total", "Tokens over the embedding forward passes.", d(forward_tokens));
  counter("embedding_aborted_forwards_total", "Embedding forward passes abandoned between layers.",
          d(aborted_forwards));
  counter("embedding_forward_seconds_total", "Wall time inside embedding forward passes.", forward_seconds);
  counter("embedding_trims_total", "Memory trims of the embedding service.", d(trims));
  counter("embedding_trimmed_bytes_total", "Bytes released by those trims.", d(trimmed_bytes));
  gauge("embedding_tokens_per_second", "Tokens per second of forward time.", tokens_per_second());
  gauge("embedding_requests_running", "Embedding requests admitted and not finished.", running);
  gauge("embedding_requests_waiting", "Embedding requests in the waiting queue.", waiting);
  gauge("embedding_queue_capacity", "Embedding waiting-queue bound.", max_queued);
  gauge("embedding_paused", "1 while the embedding service is paused.", paused ? 1 : 0);
  gauge("resident_memory_bytes", "Process resident set size.", static_cast<double>(rss_bytes));
  gauge("peak_resident_memory_bytes", "Process peak resident set size.", static_cast<double>(peak_rss_bytes));
  prometheus_histogram(out, "embedding_queue_wait_seconds", "Embedding requests: submit to admission.", queue_ms);
  prometheus_histogram(out, "embedding_request_seconds", "Embedding requests: submit to final callback.", total_ms);
  return out;
}

}  // namespace edgellm
