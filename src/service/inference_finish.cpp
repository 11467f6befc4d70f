// A request's end on the scheduler thread: its held-back text delivered, the result and its
// stats assembled, the session bytes saved when asked for, its sequence and KV blocks returned,
// the metrics counted, and on_finish called (exactly once, without a lock held).
#include <exception>
#include <string>

#include "core/log.h"
#include "kv/kv_cache.h"
#include "platform/elapsed_ms.h"
#include "platform/memory_stats.h"
#include "service/inference_service.h"
#include "service/live_request.h"

namespace edgellm {

void InferenceService::finish_running(size_t index, FinishReason reason, ErrorCode code, const std::string& error) {
  std::unique_ptr<Live> r = std::move(running_[index]);
  running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(index));
  if (!r->gen->finished()) {
    const StepOutput out = r->gen->finish(reason, error);
    (void)deliver(*r, out);  // the text the filters held back, for length and timeout
  }
  r->error_code = code;
  finish(std::move(r), reason, code, error);
}

void InferenceService::finish(std::unique_ptr<Live> r, FinishReason reason, ErrorCode code, const std::string& error) {
  if (r->classify) return finish_classify(std::move(r), reason, code, error);
  const Clock::time_point now = Clock::now();
  RequestResult res;
  res.id = r->id;
  res.finish_reason = reason;
  res.error_code = code;
  RequestStats& st = res.stats;
  st.sanitized_chars = static_cast<int32_t>(r->sanitized_chars);
  st.total_ms = ms_between(r->submitted, now);
  st.queue_ms = r->admitted != Clock::time_point{} ? ms_between(r->submitted, r->admitted) : st.total_ms;
  if (r->gen) {
    const GenerationResult& g = r->gen->result();
    res.finish_reason = g.finish_reason;
    res.text = g.text;
    res.stop_string = g.stop_string;
    st.prompt_tokens = g.timings.prompt_tokens;
    st.cached_tokens = r->cached_tokens;
    st.completion_tokens = static_cast<int32_t>(g.tokens.size());
    st.prefill_ms = g.timings.prefill_seconds * 1e3;
    st.decode_ms = g.timings.decode_seconds * 1e3;
    st.prefill_tokens_per_second =
        g.timings.prefill_seconds > 0 ? (st.prompt_tokens - st.cached_tokens) / g.timings.prefill_seconds : 0.0;
    st.decode_tokens_per_second = g.timings.decode_tokens_per_second();
    if (r->first_token != Clock::time_point{}) st.ttft_ms = ms_between(r->submitted, r->first_token);
  }
  st.speculation = r->spec_stats;
  st.speculation_off_reason = r->spec_off_reason;
  if (res.finish_reason == FinishReason::kError) res.error = error.empty() ? std::string("error") : error;
  if (r->seq >= 0) {
    if (r->req.session_out && res.finish_reason != FinishReason::kError) {
      try {
        res.session = ctx_->save_session(r->seq);
      } catch (const std::exception& e) {
        log_message(LogLevel::kError, std::string("service: saving the session failed: ") + e.what());
      }
    }
    st.kv_blocks = static_cast<int32_t>(ctx_->kv_cache().block_table(r->seq).size());
    ctx_->seq_clear(r->seq);
    free_seqs_.push_back(r->seq);
    ++finished_requests_;
    r->seq = -1;
  }
  st.peak_rss_bytes = read_process_memory().peak_bytes;
  const KvGauges kv = kv_gauges();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    live_.erase(r->id);
    metrics_.add_finished(res);
    set_gauges_locked(kv);  // a metrics() call from on_finish already sees this request gone
  }
  if (r->req.on_finish) {
    try {
      r->req.on_finish(res);
    } catch (const std::exception& e) {
      log_message(LogLevel::kError, std::string("service: a finish callback threw: ") + e.what());
    } catch (...) {
      log_message(LogLevel::kError, "service: a finish callback threw");
    }
  }
}

}  // namespace edgellm
