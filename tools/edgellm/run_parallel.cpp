#include "run_parallel.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>

#include "core/error.h"
#include "core/json.h"
#include "interrupt.h"
#include "service/inference_service.h"

namespace edgellm::cli {

namespace {

using Clock = std::chrono::steady_clock;

Json stats_json(const RequestStats& s) {
  Json j = Json::object();
  j.set("prompt_tokens", static_cast<int>(s.prompt_tokens));
  j.set("completion_tokens", static_cast<int>(s.completion_tokens));
  j.set("queue_ms", s.queue_ms);
  j.set("ttft_ms", s.ttft_ms);
  j.set("prefill_ms", s.prefill_ms);
  j.set("decode_ms", s.decode_ms);
  j.set("total_ms", s.total_ms);
  j.set("prefill_tok_per_s", s.prefill_tokens_per_second);
  j.set("decode_tok_per_s", s.decode_tokens_per_second);
  j.set("kv_blocks", static_cast<int>(s.kv_blocks));
  return j;
}

}  // namespace

std::vector<std::string> prompts_from_lines(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) out.push_back(std::move(line));
    start = end + 1;
  }
  require(!out.empty(), ErrorCode::kInvalidArgument, "the prompt file has no non-empty line");
  return out;
}

int run_parallel(const ParallelRunOptions& o) {
  ServiceParams sp;
  sp.context = o.context;
  sp.context.n_seq_max = o.parallel;
  sp.load = o.load;
  sp.step_tokens = o.step_tokens;
  sp.draft_model_path = o.draft_model;
  // Every prompt is queued up front: the queue bound is the service's BUSY guard for apps, not
  // something this batch job should trip over.
  sp.max_queued = static_cast<int32_t>(std::min<size_t>(o.prompts.size(), 1 << 16));
  const auto t_load = Clock::now();
  std::unique_ptr<InferenceService> service = InferenceService::open(o.model, sp);
  const double load_s = std::chrono::duration<double>(Clock::now() - t_load).count();
  double grammar_ms = 0;
  const auto grammar = compile_grammar_options(o.grammar, service->tokenizer(), &grammar_ms);

  std::mutex mutex;
  std::condition_variable cv;
  std::vector<RequestResult> results(o.prompts.size());
  std::vector<Clock::time_point> first_token(o.prompts.size());
  size_t done = 0;
  std::vector<RequestId> ids;
  const Clock::time_point t0 = Clock::now();
  for (size_t i = 0; i < o.prompts.size(); ++i) {
    ServiceRequest r;
    r.prompt = o.prompts[i];
    r.add_special = !o.no_bos;
    r.parse_special = true;
    r.sampling = o.sampling;
    r.sampling.seed = o.sampling.seed + i;
    r.generation.grammar = grammar;
    r.generation.max_tokens = o.max_tokens;
    r.generation.stop = o.stop;
    r.generation.ignore_eog = o.ignore_eos;
    r.generation.speculation = o.speculation;
    r.deadline_ms = o.deadline_ms;
    r.on_token = [&, i](const TokenEvent& ev) {
      if (ev.index == 0) {
        std::lock_guard<std::mutex> lock(mutex);
        first_token[i] = Clock::now();
      }
      return true;
    };
    r.on_finish = [&, i](const RequestResult& res) {
      std::lock_guard<std::mutex> lock(mutex);
      results[i] = res;
      ++done;
      cv.notify_all();
    };
    ids.push_back(service->submit(std::move(r)));
  }
  bool interrupted = false;
  {
    const SigintScope sigint;  // Ctrl-C cancels every request; each still reports
    std::unique_lock<std::mutex> lock(mutex);
    while (done < o.prompts.size()) {
      cv.wait_for(lock, std::chrono::milliseconds(100));
      if (!interrupted && interrupt_flag()->load()) {
        interrupted = true;
        lock.unlock();
        for (RequestId id : ids) service->cancel(id);
        lock.lock();
      }
    }
  }
  const Clock::time_point t_end = Clock::now();
  const ServiceMetrics m = service->metrics();

  int exit_code = interrupted ? 130 : 0;
  uint64_t prompt_tokens = 0, completion_tokens = 0, decode_tokens = 0;
  SpeculationStats spec_total;  // summed over the requests
  double ttft_sum = 0, ttft_max = 0, queue_sum = 0;
  Clock::time_point first_any = Clock::time_point::max();
  for (size_t i = 0; i < results.size(); ++i) {
    const RequestResult& r = results[i];
    prompt_tokens += static_cast<uint64_t>(r.stats.prompt_tokens);
    completion_tokens += static_cast<uint64_t>(r.stats.completion_tokens);
    if (r.stats.completion_tokens > 1) decode_tokens += static_cast<uint64_t>(r.stats.completion_tokens - 1);
    ttft_sum += r.stats.ttft_ms;
    ttft_max = std::max(ttft_max, r.stats.ttft_ms);
    queue_sum += r.stats.queue_ms;
    spec_total.forwards += r.stats.speculation.forwards;
    spec_total.verify_forwards += r.stats.speculation.verify_forwards;
    spec_total.drafted += r.stats.speculation.drafted;
    spec_total.accepted += r.stats.speculation.accepted;
    spec_total.forward_tokens += r.stats.speculation.forward_tokens;
    if (first_token[i] != Clock::time_point{}) first_any = std::min(first_any, first_token[i]);
    if (r.finish_reason == FinishReason::kError) {
      std::fprintf(stderr, "edgellm run: prompt %zu failed: %s\n", i, r.error.c_str());
      if (exit_code == 0) exit_code = 1;
    }
    if (o.json) {
      Json rec = Json::object();
      rec.set("index", static_cast<uint64_t>(i));
      rec.set("text", r.text);
      rec.set("finish_reason", finish_reason_name(r.finish_reason));
      rec.set("error", r.error.empty() ? Json(nullptr) : Json(r.error));
      rec.set("stats", stats_json(r.stats));
      if (o.speculation.mode != SpeculationMode::kOff) {
        Json spec = speculation_stats_json(o.speculation, r.stats.speculation);
        if (!r.stats.speculation_off_reason.empty()) spec.set("off_reason", r.stats.speculation_off_reason);
        rec.set("speculation", std::move(spec));
      }
      const std::string line = rec.dump() + "\n";
      std::fwrite(line.data(), 1, line.size(), stdout);
    } else {
      std::fprintf(stdout, "--- [%zu] %s, %d tokens, ttft %.1f ms\n%s\n", i, finish_reason_name(r.finish_reason),
                   r.stats.completion_tokens, r.stats.ttft_ms, r.text.c_str());
    }
  }
  const double wall_s = std::chrono::duration<double>(t_end - t0).count();
  // Aggregate decode speed: tokens sampled after each stream's first, over the time from the
  // first token of any stream to the end (every stream decoding in the same forward passes).
  const double decode_wall_s =
      first_any == Clock::time_point::max() ? 0.0 : std::chrono::duration<double>(t_end - first_any).count();
  const double n = static_cast<double>(results.size());
  Json sum = Json::object();
  sum.set("prompts", static_cast<uint64_t>(results.size()));
  sum.set("parallel", static_cast<int>(o.parallel));
  sum.set("step_tokens", static_cast<int>(o.step_tokens));
  sum.set("load_s", load_s);
  sum.set("wall_s", wall_s);
  sum.set("prompt_tokens", prompt_tokens);
  sum.set("completion_tokens", completion_tokens);
  sum.set("tok_per_s", wall_s > 0 ? static_cast<double>(completion_tokens) / wall_s : 0.0);
  sum.set("aggregate_decode_tok_per_s", decode_wall_s > 0 ? static_cast<double>(decode_tokens) / decode_wall_s : 0.0);
  sum.set("ttft_ms_mean", ttft_sum / n);
  sum.set("ttft_ms_max", ttft_max);
  sum.set("queue_ms_mean", queue_sum / n);
  sum.set("steps", m.steps);
  sum.set("mean_batch", m.steps > 0 ? static_cast<double>(m.step_tokens) / static_cast<double>(m.steps) : 0.0);
  sum.set("peak_rss_bytes", static_cast<uint64_t>(m.peak_rss_bytes));
  if (o.speculation.mode != SpeculationMode::kOff) sum.set("speculation", speculation_stats_json(o.speculation, spec_total));
  if (grammar != nullptr) {
    sum.set("grammar_compile_ms", grammar_ms);
    sum.set("grammar_masks_computed", static_cast<uint64_t>(grammar->masks_ready()));
    sum.set("grammar_mask_bytes", grammar->masks_bytes());
  }
  Json line = Json::object();
  line.set("summary", std::move(sum));
  const std::string text = line.dump() + "\n";
  std::fwrite(text.data(), 1, text.size(), o.json ? stdout : stderr);
  std::fflush(stdout);
  return exit_code;
}

}  // namespace edgellm::cli
