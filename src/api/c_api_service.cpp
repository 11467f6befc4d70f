// The service half of the C ABI: create / destroy, submit / cancel, lifecycle, metrics.
#include <cmath>
#include <string>
#include <vector>

#include "api/c_api_internal.h"
#include "core/json.h"
#include "core/utf8.h"
#include "core/log.h"
#include "device/power_mode.h"
#include "engine/sampler.h"
#include "kv/session_file.h"

using namespace edgellm;
using capi::fail;
using capi::guard;

namespace {

TensorType kv_tensor_type(int kv_type, const char* field) {
  switch (kv_type) {
    case EDGELLM_KV_F16: return TensorType::F16;
    case EDGELLM_KV_F32: return TensorType::F32;
    case EDGELLM_KV_Q8_0: return TensorType::Q8_0;
    case EDGELLM_KV_Q4_0: return TensorType::Q4_0;
    default: throw Error(ErrorCode::kInvalidArgument, std::string(field) + " " + std::to_string(kv_type) + " is unknown");
  }
}

ServiceParams to_service_params(const edgellm_service_params& p) {
  ServiceParams sp;
  ContextParams& cp = sp.context;
  if (p.n_ctx < 0) throw Error(ErrorCode::kInvalidArgument, "n_ctx must be >= 0");
  cp.n_ctx = p.n_ctx;
  cp.n_seq_max = p.n_parallel;
  cp.n_threads = p.n_threads;
  cp.n_threads_batch = p.n_threads_batch;
  cp.kv_type = kv_tensor_type(capi::enum_value(p.kv_type), "kv_type");
  const int kv_type_v = capi::enum_value(p.kv_type_v);
  if (kv_type_v != EDGELLM_KV_SAME) cp.kv_type_v = kv_tensor_type(kv_type_v, "kv_type_v");
  cp.kv_budget_bytes = static_cast<size_t>(p.kv_budget_bytes);
  cp.kv_budget_fraction = p.kv_budget_fraction;
  cp.pin_threads = p.pin_threads;
  const int repack = capi::enum_value(p.repack);
  switch (repack) {
    case EDGELLM_REPACK_AUTO: sp.load.repack = RepackMode::kAuto; break;
    case EDGELLM_REPACK_ON: sp.load.repack = RepackMode::kOn; break;
    case EDGELLM_REPACK_OFF: sp.load.repack = RepackMode::kOff; break;
    default: throw Error(ErrorCode::kInvalidArgument, "repack " + std::to_string(repack) + " is unknown");
  }
  const int power = capi::enum_value(p.power_mode);
  switch (power) {
    case EDGELLM_POWER_NONE: break;
    case EDGELLM_POWER_PERFORMANCE: apply_thread_plan(plan_threads(detect_this_device(), PowerMode::kPerformance), cp); break;
    case EDGELLM_POWER_BALANCED: apply_thread_plan(plan_threads(detect_this_device(), PowerMode::kBalanced), cp); break;
    case EDGELLM_POWER_EFFICIENCY: apply_thread_plan(plan_threads(detect_this_device(), PowerMode::kEfficiency), cp); break;
    default: throw Error(ErrorCode::kInvalidArgument, "power_mode " + std::to_string(power) + " is unknown");
  }
  sp.max_queued = p.max_queued;
  sp.step_tokens = p.step_tokens;
  sp.warmup_min_free_bytes = static_cast<size_t>(p.warmup_min_free_bytes);
  if (p.chat_template != nullptr) sp.chat_template = p.chat_template;
  if (p.pack_dir != nullptr) {
    if (p.pack_dir[0] == '\0') {
      sp.load.pack_file = PackFileMode::kOff;
    } else {
      sp.load.pack_dir = p.pack_dir;
    }
  }
  return sp;
}

// Writes a finished request's session to `path` (none asked: OK). On the scheduler thread.
edgellm_status save_session_for(const std::string& path, const RequestResult& res) {
  if (path.empty()) return EDGELLM_OK;
  if (res.session.empty()) return EDGELLM_ERR_INVALID_ARGUMENT;  // ended with an error: nothing to save
  try {
    write_session_file(path, res.session);
    return EDGELLM_OK;
  } catch (const Error& e) {
    log_message(LogLevel::kError, std::string("C API: ") + e.what());
    return capi::status_of(e.code());
  }
}

std::string checked_string(const char* s, const std::string& what) {
  if (s == nullptr) throw Error(ErrorCode::kInvalidArgument, what + " is NULL");
  return s;
}

// Copies the C request into the service's request; the callbacks forward to the C functions.
ServiceRequest to_request(const edgellm_request_params& p) {
  ServiceRequest r;
  const int inputs = (p.prompt != nullptr ? 1 : 0) + (p.messages != nullptr || p.n_messages > 0 ? 1 : 0) +
                     (p.tokens != nullptr || p.n_tokens > 0 ? 1 : 0);
  if (inputs != 1) {
    throw Error(ErrorCode::kInvalidArgument, inputs == 0 ? "no input: set prompt, messages or tokens"
                                                         : "more than one input: set exactly one of prompt, messages, tokens");
  }
  if (p.prompt != nullptr) {
    r.prompt = p.prompt;
    if (r.prompt.empty()) throw Error(ErrorCode::kInvalidArgument, "prompt is empty");
  }
  if (p.messages != nullptr || p.n_messages > 0) {
    if (p.messages == nullptr) throw Error(ErrorCode::kInvalidArgument, "messages is NULL but n_messages > 0");
    if (p.n_messages == 0) throw Error(ErrorCode::kInvalidArgument, "n_messages is 0");
    if (p.n_messages > 4096) throw Error(ErrorCode::kInvalidArgument, "more than 4096 messages");
    r.messages = Json::array();
    for (size_t i = 0; i < p.n_messages; ++i) {
      const std::string where = "messages[" + std::to_string(i) + "]";
      Json m = Json::object();
      m.set("role", Json(checked_string(p.messages[i].role, where + ".role")));
      m.set("content", Json(checked_string(p.messages[i].content, where + ".content")));
      r.messages.push_back(std::move(m));
    }
  }
  if (p.tokens != nullptr || p.n_tokens > 0) {
    if (p.tokens == nullptr) throw Error(ErrorCode::kInvalidArgument, "tokens is NULL but n_tokens > 0");
    if (p.n_tokens == 0) throw Error(ErrorCode::kInvalidArgument, "n_tokens is 0");
    if (p.n_tokens > (size_t{1} << 24)) throw Error(ErrorCode::kInvalidArgument, "more than 16M tokens");
    r.tokens.assign(p.tokens, p.tokens + p.n_tokens);
  }
  r.add_special = p.add_special;
  r.parse_special = p.parse_special;
  SamplerParams& s = r.sampling;
  s.temperature = p.sampling.temperature;
  s.top_k = p.sampling.top_k;
  s.top_p = p.sampling.top_p;
  s.min_p = p.sampling.min_p;
  s.repeat_penalty = p.sampling.repeat_penalty;
  s.frequency_penalty = p.sampling.frequency_penalty;
  s.presence_penalty = p.sampling.presence_penalty;
  s.penalty_last_n = p.sampling.penalty_last_n;
  s.seed = p.sampling.seed;
  r.max_tokens = p.max_tokens;
  if (p.n_stop > 0 && p.stop == nullptr) throw Error(ErrorCode::kInvalidArgument, "stop is NULL but n_stop > 0");
  if (p.n_stop > 16) throw Error(ErrorCode::kInvalidArgument, "at most 16 stop strings");
  for (size_t i = 0; i < p.n_stop; ++i) r.stop.push_back(checked_string(p.stop[i], "stop[" + std::to_string(i) + "]"));
  r.ignore_eog = p.ignore_eos;
  if (p.n_keep < -1) throw Error(ErrorCode::kInvalidArgument, "n_keep " + std::to_string(p.n_keep) + " < -1");
  r.context_shift = p.context_shift;
  r.n_keep = p.n_keep;
  r.deadline_ms = p.deadline_ms;
  const int priority = capi::enum_value(p.priority);
  if (priority != EDGELLM_PRIORITY_INTERACTIVE && priority != EDGELLM_PRIORITY_BACKGROUND) {
    throw Error(ErrorCode::kInvalidArgument, "priority " + std::to_string(priority) + " is unknown");
  }
  r.priority = priority == EDGELLM_PRIORITY_INTERACTIVE ? Priority::kInteractive : Priority::kBackground;
  if (p.session_load != nullptr) r.session_in = read_session_file(p.session_load);  // checked by submit()
  std::string session_save = p.session_save != nullptr ? std::string(p.session_save) : std::string();
  r.session_out = !session_save.empty();

  if (p.on_token != nullptr) {
    r.on_token = [fn = p.on_token, user = p.user_data](const TokenEvent& ev) {
      edgellm_token_event e{};
      e.id = ev.id;
      e.token = ev.token;
      // The view points into a std::string that outlives the call, so it is NUL-terminated.
      e.text = ev.text.data() != nullptr ? ev.text.data() : "";
      e.text_len = ev.text.size();
      e.index = ev.index;
      return fn(&e, user);
    };
  }
  if (p.on_finish != nullptr) {
    r.on_finish = [fn = p.on_finish, user = p.user_data, session_save](const RequestResult& res) {
      edgellm_result out{};
      out.id = res.id;
      out.finish_reason = static_cast<edgellm_finish_reason>(static_cast<int>(res.finish_reason));
      out.status = res.finish_reason == FinishReason::kError ? capi::status_of(res.error_code) : EDGELLM_OK;
      out.error_message = res.error.c_str();
      out.text = res.text.c_str();
      out.text_len = res.text.size();
      out.stop_string = res.stop_string.c_str();
      const RequestStats& st = res.stats;
      out.stats.queue_ms = st.queue_ms;
      out.stats.ttft_ms = st.ttft_ms;
      out.stats.prefill_ms = st.prefill_ms;
      out.stats.decode_ms = st.decode_ms;
      out.stats.total_ms = st.total_ms;
      out.stats.prompt_tokens = st.prompt_tokens;
      out.stats.completion_tokens = st.completion_tokens;
      out.stats.prefill_tokens_per_second = st.prefill_tokens_per_second;
      out.stats.decode_tokens_per_second = st.decode_tokens_per_second;
      out.stats.kv_blocks = st.kv_blocks;
      out.stats.peak_rss_bytes = st.peak_rss_bytes;
      out.stats.cached_tokens = st.cached_tokens;
      out.model_version = res.model_version.c_str();
      out.session_status = save_session_for(session_save, res);
      fn(&out, user);
    };
  } else if (!session_save.empty()) {
    r.on_finish = [session_save](const RequestResult& res) { (void)save_session_for(session_save, res); };
  }
  return r;
}

}  // namespace

static_assert(static_cast<int>(FinishReason::kStop) == EDGELLM_FINISH_STOP &&
                  static_cast<int>(FinishReason::kLength) == EDGELLM_FINISH_LENGTH &&
                  static_cast<int>(FinishReason::kCancelled) == EDGELLM_FINISH_CANCELLED &&
                  static_cast<int>(FinishReason::kTimeout) == EDGELLM_FINISH_TIMEOUT &&
                  static_cast<int>(FinishReason::kError) == EDGELLM_FINISH_ERROR,
              "the C finish reasons mirror FinishReason");

extern "C" {

edgellm_service_params edgellm_service_default_params(void) {
  edgellm_service_params p{};
  const ServiceParams d;
  p.n_ctx = 0;
  p.n_parallel = d.context.n_seq_max;
  p.max_queued = d.max_queued;
  p.step_tokens = d.step_tokens;
  p.n_threads = 0;
  p.n_threads_batch = 0;
  p.kv_type = EDGELLM_KV_F16;
  p.kv_budget_bytes = 0;
  p.repack = EDGELLM_REPACK_AUTO;
  p.warmup_min_free_bytes = d.warmup_min_free_bytes;
  p.chat_template = nullptr;
  p.pin_threads = false;
  p.kv_budget_fraction = 0;
  p.power_mode = EDGELLM_POWER_NONE;
  p.kv_type_v = EDGELLM_KV_SAME;
  p.pack_dir = nullptr;
  return p;
}

edgellm_request_params edgellm_request_default_params(void) {
  edgellm_request_params p{};
  const ServiceRequest d;
  p.add_special = d.add_special;
  p.parse_special = d.parse_special;
  p.sampling.temperature = d.sampling.temperature;
  p.sampling.top_k = d.sampling.top_k;
  p.sampling.top_p = d.sampling.top_p;
  p.sampling.min_p = d.sampling.min_p;
  p.sampling.repeat_penalty = d.sampling.repeat_penalty;
  p.sampling.frequency_penalty = d.sampling.frequency_penalty;
  p.sampling.presence_penalty = d.sampling.presence_penalty;
  p.sampling.penalty_last_n = d.sampling.penalty_last_n;
  p.sampling.seed = d.sampling.seed;
  p.max_tokens = d.max_tokens;
  p.deadline_ms = d.deadline_ms;
  p.priority = EDGELLM_PRIORITY_INTERACTIVE;
  p.context_shift = d.context_shift;
  p.n_keep = d.n_keep;
  return p;
}

edgellm_status edgellm_service_create(const char* model_path, const edgellm_service_params* params,
                                      edgellm_service** out) {
  if (out == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  return guard([&] {
    if (model_path == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "model_path is NULL");
    const edgellm_service_params p = params != nullptr ? *params : edgellm_service_default_params();
    auto handle = std::make_unique<edgellm_service>();
    handle->host = std::make_unique<ModelHost>(model_path, "1", to_service_params(p));
    DegradationConfig dc;
    dc.base_model_path = model_path;
    dc.base_version = "1";
    handle->ladder = std::make_unique<DegradationController>(*handle->host, dc);
    *out = handle.release();
    return EDGELLM_OK;
  });
}

edgellm_status edgellm_service_destroy(edgellm_service* service) {
  if (service == nullptr) return EDGELLM_OK;
  return guard([&] {
    if (service->host->on_scheduler_thread()) {
      return fail(EDGELLM_ERR_WRONG_THREAD, "edgellm_service_destroy called from the service's own callback");
    }
    service->host->shutdown();  // every request gets its on_finish (cancelled) before this returns
    service->ladder.reset();
    service->host.reset();
    delete service;
    return EDGELLM_OK;
  });
}

edgellm_status edgellm_submit(edgellm_service* service, const edgellm_request_params* params,
                              edgellm_request_id* out_id) {
  if (out_id != nullptr) *out_id = 0;
  return guard([&] {
    if (service == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "service is NULL");
    if (params == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "params is NULL");
    if (out_id == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "out_id is NULL");
    *out_id = service->ladder->submit(to_request(*params)).id;
    return EDGELLM_OK;
  });
}

edgellm_status edgellm_cancel(edgellm_service* service, edgellm_request_id id) {
  return guard([&] {
    if (service == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "service is NULL");
    if (!service->host->cancel(id)) {
      return fail(EDGELLM_ERR_NOT_FOUND, "no waiting or running request has id " + std::to_string(id));
    }
    return EDGELLM_OK;
  });
}

edgellm_status edgellm_pause(edgellm_service* service) {
  return guard([&] {
    if (service == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "service is NULL");
    service->host->pause();
    return EDGELLM_OK;
  });
}

edgellm_status edgellm_resume(edgellm_service* service) {
  return guard([&] {
    if (service == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "service is NULL");
    service->host->resume();
    return EDGELLM_OK;
  });
}

edgellm_status edgellm_trim(edgellm_service* service, edgellm_trim_callback done, void* user_data) {
  return guard([&] {
    if (service == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "service is NULL");
    std::function<void(size_t)> cb;
    if (done != nullptr) cb = [done, user_data](size_t bytes) { done(bytes, user_data); };
    service->current()->trim(std::move(cb));
    return EDGELLM_OK;
  });
}

edgellm_status edgellm_warmup(edgellm_service* service, edgellm_warmup_callback done, void* user_data) {
  return guard([&] {
    if (service == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "service is NULL");
    std::function<void(bool, const std::string&)> cb;
    if (done != nullptr) cb = [done, user_data](bool ran, const std::string& why) { done(ran, why.c_str(), user_data); };
    service->current()->warmup(std::move(cb));
    return EDGELLM_OK;
  });
}

edgellm_status edgellm_get_metrics(edgellm_service* service, edgellm_metrics* out) {
  return guard([&] {
    if (service == nullptr || out == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "service or out is NULL");
    const ServiceMetrics m = service->current()->metrics();
    edgellm_metrics r{};
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
    r.kv_blocks_used = m.kv_blocks_used;
    r.kv_blocks_total = m.kv_blocks_total;
    r.paused = m.paused;
    r.rss_bytes = m.rss_bytes;
    r.peak_rss_bytes = m.peak_rss_bytes;
    r.kv_blocks_cached = m.kv_blocks_cached;
    r.kv_blocks_free = m.kv_blocks_free;
    r.kv_pool_bytes = m.kv_pool_bytes;
    r.prompt_tokens_cached = m.prompt_tokens_cached;
    r.prefix_hit_rate = m.prefix_hit_rate();
    r.kv_fragmentation = m.kv_fragmentation;
    r.kv_evictions = m.kv_evictions;
    r.n_threads = m.n_threads;
    r.n_threads_batch = m.n_threads_batch;
    r.thread_priority_denied = m.thread_priority_denied;
    r.max_decode_batch = m.max_decode_batch;
    r.paused_idle = m.paused_idle;
    *out = r;
    return EDGELLM_OK;
  });
}

edgellm_status edgellm_metrics_json(edgellm_service* service, char* buf, size_t capacity, size_t* length) {
  return guard([&] {
    if (service == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "service is NULL");
    Json j = service->current()->metrics().to_json();
    j.set("model_version", service->host->current_version());
    j.set("degradation", service->ladder->metrics_json());  // rungs taken, with their reasons
    return capi::copy_out(j.dump(), buf, capacity, length);
  });
}

edgellm_status edgellm_metrics_prometheus(edgellm_service* service, char* buf, size_t capacity, size_t* length) {
  return guard([&] {
    if (service == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "service is NULL");
    std::string text = service->current()->metrics().to_prometheus();
    const Json d = service->ladder->metrics_json();
    text += "# HELP edgellm_degradation_rung The degradation ladder's rung in force (0 normal .. 6 end running).\n"
            "# TYPE edgellm_degradation_rung gauge\n"
            "edgellm_degradation_rung " + std::to_string(d.at("rung").as_int()) + "\n"
            "# HELP edgellm_degradation_steps_total Steps the degradation ladder took (down and up).\n"
            "# TYPE edgellm_degradation_steps_total counter\n"
            "edgellm_degradation_steps_total " + std::to_string(d.at("steps").as_int()) + "\n"
            "# HELP edgellm_degradation_entered_total Times each rung was entered.\n"
            "# TYPE edgellm_degradation_entered_total counter\n";
    for (const auto& [rung, v] : d.at("rungs").as_object()) {
      text += "edgellm_degradation_entered_total{rung=\"" + rung + "\"} " + std::to_string(v.at("entered").as_int()) + "\n";
    }
    return capi::copy_out(text, buf, capacity, length);
  });
}

}  // extern "C"
