// class Model: the JS face of one runtime (edgellm_runtime). The object wraps a ModelHandle
// holding the shared ModelCore. Quick calls are synchronous and throw Error{code} (SHUT_DOWN once
// released): tokenize, detokenize, applyTemplate, info, metrics, degradation, pause, resume,
// setPressure, setRouter, deleteSession, listSessions. Calls that wait for the runtime's threads,
// embed / rerank (embeddings.cpp), classify (classify.cpp),
// load a model or touch files return promises: generate's result, warmup, trim (warmup.cpp), the
// session copies and files (sessions.cpp), swapModel, reloadRegistry, setFallbackModel (worker
// threads, async_call.h), and release, which destroys the runtime on a libuv worker thread
// (destroying joins the runtime's threads: never on the JS thread while requests may run).
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "addon.h"
#include "async_call.h"
#include "classify.h"
#include "embeddings.h"
#include "js.h"
#include "native_class.h"
#include "options.h"
#include "router.h"
#include "sessions.h"

namespace edgellm_napi {

namespace {

struct ModelHandle {
  std::shared_ptr<ModelCore> core;
};

struct Call {
  napi_value self = nullptr;
  napi_value args[3] = {nullptr, nullptr, nullptr};
  ModelHandle* handle = nullptr;
};

// Unpacks this + up to 3 arguments; false with an exception pending when `this` is no Model.
bool unpack(napi_env env, napi_callback_info info, Call* call) {
  size_t argc = 3;
  if (napi_get_cb_info(env, info, &argc, call->args, &call->self, nullptr) != napi_ok) {
    throw_napi_failure(env, "napi_get_cb_info");
    return false;
  }
  for (size_t i = argc; i < 3; ++i) call->args[i] = js_undefined(env);
  void* p = nullptr;
  if (napi_unwrap(env, call->self, &p) != napi_ok || !p) {
    throw_error(env, "INVALID_ARGUMENT", "not a Model object");
    return false;
  }
  call->handle = static_cast<ModelHandle*>(p);
  return true;
}

// unpack() for a synchronous call: the live runtime, or nullptr with an exception pending
// (SHUT_DOWN once the model is released).
edgellm_runtime* unpack_live(napi_env env, napi_callback_info info, Call* call) {
  if (!unpack(env, info, call)) return nullptr;
  edgellm_runtime* rt = call->handle->core->runtime();
  if (!rt) throw_error(env, status_code(EDGELLM_ERR_SHUT_DOWN), "the model was released");
  return rt;
}

// A library text (JSON or Prometheus) of the runtime, parsed as JSON or as a string; throws.
template <typename Fill>
napi_value library_text(napi_env env, Fill fill, bool parse) {
  std::string text;
  const edgellm_status st = read_library_text(fill, &text);
  if (st != EDGELLM_OK) {
    throw_error(env, status_code(st), last_error_message(st));
    return nullptr;
  }
  return parse ? parse_json(env, text) : js_string(env, text);
}

// Returns undefined, or throws the status of a failed library call.
napi_value status_result(napi_env env, edgellm_status st) {
  if (st == EDGELLM_OK) return js_undefined(env);
  throw_error(env, status_code(st), last_error_message(st));
  return nullptr;
}

// Called by new_model only: `new Model()` from JS is refused, since it carries no handle
// (AddonData::constructing is set only while new_model constructs).
napi_value constructor(napi_env env, napi_callback_info info) {
  return construct_native<ModelHandle>(env, info, &AddonData::constructing, "Model objects come from load()");
}

napi_value m_generate(napi_env env, napi_callback_info info) {
  Call c;
  if (!unpack(env, info, &c)) return nullptr;
  return generate(env, c.handle->core, c.args[0], c.args[1], c.args[2]);
}

napi_value m_tokenize(napi_env env, napi_callback_info info) {
  Call c;
  edgellm_runtime* s = unpack_live(env, info, &c);
  if (!s) return nullptr;
  std::string text;
  if (!read_string(env, c.args[0], &text)) {
    throw_error(env, "INVALID_ARGUMENT", "text must be a string");
    return nullptr;
  }
  bool add_bos = true, parse_special = false;
  OptionReader r(env, c.args[1], "options");
  r.boolean("addBos", &add_bos);
  r.boolean("parseSpecial", &parse_special);
  if (!r.ok()) {
    throw_error(env, "INVALID_ARGUMENT", r.error());
    return nullptr;
  }
  size_t n = 0;
  edgellm_status st = edgellm_tokenize(s, text.c_str(), add_bos, parse_special, nullptr, 0, &n);
  std::vector<int32_t> ids(n);
  if (st == EDGELLM_ERR_BUFFER_TOO_SMALL || (st == EDGELLM_OK && n > 0)) {
    st = edgellm_tokenize(s, text.c_str(), add_bos, parse_special, ids.data(), ids.size(), &n);
  }
  if (st != EDGELLM_OK) return status_result(env, st);
  ids.resize(n);
  return js_number_array(env, ids);
}

napi_value m_detokenize(napi_env env, napi_callback_info info) {
  Call c;
  edgellm_runtime* s = unpack_live(env, info, &c);
  if (!s) return nullptr;
  bool is_array = false;
  uint32_t n = 0;
  if (napi_is_array(env, c.args[0], &is_array) != napi_ok || !is_array ||
      napi_get_array_length(env, c.args[0], &n) != napi_ok) {
    throw_error(env, "INVALID_ARGUMENT", "ids must be an array of token ids");
    return nullptr;
  }
  std::vector<int32_t> ids(n);
  for (uint32_t i = 0; i < n; ++i) {
    napi_value v = nullptr;
    double x = 0;
    if (napi_get_element(env, c.args[0], i, &v) != napi_ok || type_of(env, v) != napi_number ||
        napi_get_value_double(env, v, &x) != napi_ok || !(x >= INT32_MIN && x <= INT32_MAX) ||
        static_cast<double>(static_cast<int32_t>(x)) != x) {
      throw_error(env, "INVALID_ARGUMENT", "ids[" + std::to_string(i) + "] must be an integer token id");
      return nullptr;
    }
    ids[i] = static_cast<int32_t>(x);
  }
  bool render_special = false;
  OptionReader r(env, c.args[1], "options");
  r.boolean("renderSpecial", &render_special);
  if (!r.ok()) {
    throw_error(env, "INVALID_ARGUMENT", r.error());
    return nullptr;
  }
  return library_text(
      env,
      [&](char* buf, size_t capacity, size_t* length) {
        return edgellm_detokenize(s, ids.data(), ids.size(), render_special, buf, capacity, length);
      },
      false);
}

// applyTemplate(messages, { addGenerationPrompt = true }): what a chat request is prefilled with.
napi_value m_apply_template(napi_env env, napi_callback_info info) {
  Call c;
  edgellm_runtime* s = unpack_live(env, info, &c);
  if (!s) return nullptr;
  RequestConfig config;  // the messages as generate reads them
  std::string error;
  bool is_array = false;
  if (napi_is_array(env, c.args[0], &is_array) != napi_ok || !is_array ||
      !read_request_config(env, c.args[0], nullptr, &config, &error)) {
    throw_error(env, "INVALID_ARGUMENT", error.empty() ? "messages must be an array of messages" : error);
    return nullptr;
  }
  bool add_generation_prompt = true;
  OptionReader r(env, c.args[1], "options");
  r.boolean("addGenerationPrompt", &add_generation_prompt);
  if (!r.ok()) {
    throw_error(env, "INVALID_ARGUMENT", r.error());
    return nullptr;
  }
  return library_text(
      env,
      [&](char* buf, size_t capacity, size_t* length) {
        return edgellm_apply_template(s, config.messages.data(), config.messages.size(), add_generation_prompt, buf,
                                      capacity, length);
      },
      false);
}

// info(): the library's model-info JSON, parsed by the engine's JSON.parse.
napi_value m_info(napi_env env, napi_callback_info info) {
  Call c;
  edgellm_runtime* s = unpack_live(env, info, &c);
  if (!s) return nullptr;
  return library_text(
      env, [s](char* buf, size_t capacity, size_t* length) { return edgellm_model_info_json(s, buf, capacity, length); },
      true);
}

// degradation(): the ladder (edgellm_degradation_json).
napi_value m_degradation(napi_env env, napi_callback_info info) {
  Call c;
  edgellm_runtime* s = unpack_live(env, info, &c);
  if (!s) return nullptr;
  return library_text(
      env, [s](char* buf, size_t capacity, size_t* length) { return edgellm_degradation_json(s, buf, capacity, length); },
      true);
}

// metricsJson() / metricsPrometheus(): everything (histograms, rungs, router, versions).
napi_value m_metrics_json(napi_env env, napi_callback_info info) {
  Call c;
  edgellm_runtime* s = unpack_live(env, info, &c);
  if (!s) return nullptr;
  return library_text(
      env, [s](char* buf, size_t capacity, size_t* length) { return edgellm_metrics_json(s, buf, capacity, length); },
      true);
}

napi_value m_metrics_prometheus(napi_env env, napi_callback_info info) {
  Call c;
  edgellm_runtime* s = unpack_live(env, info, &c);
  if (!s) return nullptr;
  return library_text(
      env,
      [s](char* buf, size_t capacity, size_t* length) { return edgellm_metrics_prometheus(s, buf, capacity, length); },
      false);
}

napi_value m_metrics(napi_env env, napi_callback_info info) {
  Call c;
  edgellm_runtime* s = unpack_live(env, info, &c);
  if (!s) return nullptr;
  edgellm_metrics m = edgellm_metrics_init();
  edgellm_status st = edgellm_metrics_get(s, &m);
  if (st != EDGELLM_OK) return status_result(env, st);
  napi_value o = js_object(env);
  auto num = [&](const char* name, double v) { return set_property(env, o, name, js_number(env, v)); };
  auto u64 = [&](const char* name, uint64_t v) { return num(name, static_cast<double>(v)); };
  bool ok =
      u64("requestsSubmitted", m.requests_submitted) && u64("requestsFinished", m.requests_finished) &&
      u64("busyRejections", m.busy_rejections) && u64("invalidRequests", m.invalid_requests) &&
      u64("finishedStop", m.finished_stop) && u64("finishedLength", m.finished_length) &&
      u64("cancellations", m.cancellations) && u64("timeouts", m.timeouts) && u64("errors", m.errors) &&
      u64("promptTokens", m.prompt_tokens) && u64("completionTokens", m.completion_tokens) &&
      u64("steps", m.steps) && u64("stepTokens", m.step_tokens) && u64("abortedSteps", m.aborted_steps) &&
      num("prefillTokensPerSecond", m.prefill_tokens_per_second) &&
      num("decodeTokensPerSecond", m.decode_tokens_per_second) && num("ttftMsMean", m.ttft_ms_mean) &&
      num("queueMsMean", m.queue_ms_mean) && num("running", m.running) && num("waiting", m.waiting) &&
      set_property(env, o, "paused", js_bool(env, m.paused)) && u64("rssBytes", m.rss_bytes) &&
      u64("peakRssBytes", m.peak_rss_bytes) && num("kvBlocksUsed", m.kv_blocks_used) &&
      num("kvBlocksCached", m.kv_blocks_cached) && num("kvBlocksFree", m.kv_blocks_free) &&
      num("kvBlocksTotal", m.kv_blocks_total) && u64("kvPoolBytes", m.kv_pool_bytes) &&
      u64("promptTokensCached", m.prompt_tokens_cached) && num("prefixHitRate", m.prefix_hit_rate) &&
      num("kvFragmentation", m.kv_fragmentation) && u64("kvEvictions", m.kv_evictions) &&
      num("threads", m.n_threads) && num("batchThreads", m.n_threads_batch) &&
      u64("threadPriorityDenied", m.thread_priority_denied) && u64("modelSwaps", m.model_swaps) &&
      num("degradationRung", m.degradation_rung) && u64("degradationSteps", m.degradation_steps) &&
      u64("degradedRefusals", m.degraded_refusals) && u64("degradedEndings", m.degraded_endings) &&
      u64("routedLocal", m.routed_local) && u64("routedLowConfidence", m.routed_low_confidence) &&
      u64("routedCloud", m.routed_cloud) && u64("cloudFailures", m.cloud_failures) &&
      u64("privacyBlocks", m.privacy_blocks) && u64("failureFallbacks", m.failure_fallbacks) &&
      num("sessions", m.sessions) && u64("sessionBytes", m.session_bytes) &&
      num("maxDecodeBatch", m.max_decode_batch) && set_property(env, o, "pausedIdle", js_bool(env, m.paused_idle));
  return ok ? o : nullptr;
}

napi_value m_pause(napi_env env, napi_callback_info info) {
  Call c;
  edgellm_runtime* s = unpack_live(env, info, &c);
  return s ? status_result(env, edgellm_pause(s)) : nullptr;
}

napi_value m_resume(napi_env env, napi_callback_info info) {
  Call c;
  edgellm_runtime* s = unpack_live(env, info, &c);
  return s ? status_result(env, edgellm_resume(s)) : nullptr;
}

napi_value m_trim(napi_env env, napi_callback_info info) {
  Call c;
  if (!unpack(env, info, &c)) return nullptr;
  return trim(env, c.handle->core);
}

napi_value m_warmup(napi_env env, napi_callback_info info) {
  Call c;
  if (!unpack(env, info, &c)) return nullptr;
  return warmup(env, c.handle->core);
}

// setPressure({ memoryLevel, thermalLevel, powerSave }): the platform's signals to the ladder.
// Absent fields are 0 / false (the pressure is the whole picture each time, not a change).
napi_value m_set_pressure(napi_env env, napi_callback_info info) {
  Call c;
  edgellm_runtime* s = unpack_live(env, info, &c);
  if (!s) return nullptr;
  edgellm_pressure p{};
  p.struct_size = sizeof p;
  OptionReader r(env, c.args[0], "pressure");
  r.integer("memoryLevel", INT32_MIN, INT32_MAX, &p.memory_level);
  r.integer("thermalLevel", INT32_MIN, INT32_MAX, &p.thermal_level);
  r.boolean("powerSave", &p.power_save);
  if (!r.ok()) {
    throw_error(env, "INVALID_ARGUMENT", r.error());
    return nullptr;
  }
  return status_result(env, edgellm_set_pressure(s, &p));
}

napi_value m_set_router(napi_env env, napi_callback_info info) {
  Call c;
  if (!unpack(env, info, &c)) return nullptr;
  return set_router(env, c.handle->core, c.args[0]);
}

// A promise over one blocking call of the runtime on a worker thread that resolves with
// undefined; `call` runs there.
template <typename CallFn>
napi_value void_call(napi_env env, const std::shared_ptr<ModelCore>& core, const char* name, CallFn call) {
  return run_async(
      env, name, core,
      [call](edgellm_runtime* rt, std::string* error) {
        const edgellm_status st = call(rt);
        if (st != EDGELLM_OK) *error = last_error_message(st);
        return st;
      },
      [](napi_env env) { return js_undefined(env); });
}

// swapModel(modelPath, version) -> Promise<void>: loads on a worker thread (seconds), then new
// requests go to the new model while admitted ones finish on the old one.
napi_value m_swap_model(napi_env env, napi_callback_info info) {
  Call c;
  if (!unpack(env, info, &c)) return nullptr;
  std::string path, version;
  if (!read_string(env, c.args[0], &path)) return rejected_promise(env, "INVALID_ARGUMENT", "modelPath must be a string");
  if (!read_string(env, c.args[1], &version)) return rejected_promise(env, "INVALID_ARGUMENT", "version must be a string");
  return void_call(env, c.handle->core, "edgellm.swapModel",
                   [path, version](edgellm_runtime* rt) { return edgellm_swap_model(rt, path.c_str(), version.c_str()); });
}

// reloadRegistry() -> Promise<string>: the version serving afterwards.
napi_value m_reload_registry(napi_env env, napi_callback_info info) {
  Call c;
  if (!unpack(env, info, &c)) return nullptr;
  auto version = std::make_shared<std::string>();
  return run_async(
      env, "edgellm.reloadRegistry", c.handle->core,
      [version](edgellm_runtime* rt, std::string* error) {
        char buf[128];  // a version is 1-64 bytes; the call is made once (it has an effect)
        size_t length = 0;
        const edgellm_status st = edgellm_reload_registry(rt, buf, sizeof buf, &length);
        if (st != EDGELLM_OK) {
          *error = last_error_message(st);
          return st;
        }
        version->assign(buf, length);
        return st;
      },
      [version](napi_env env) { return js_string(env, *version); });
}

// setFallbackModel(modelPath | null, version?) -> Promise<void>: the file is opened to read its
// shape, on a worker thread.
napi_value m_set_fallback_model(napi_env env, napi_callback_info info) {
  Call c;
  if (!unpack(env, info, &c)) return nullptr;
  std::string path, version = "fallback";
  const napi_valuetype t = type_of(env, c.args[0]);
  const bool clear = t == napi_null || t == napi_undefined;
  if (!clear && !read_string(env, c.args[0], &path)) {
    return rejected_promise(env, "INVALID_ARGUMENT", "modelPath must be a string or null");
  }
  const napi_valuetype vt = type_of(env, c.args[1]);
  if (vt != napi_undefined && !read_string(env, c.args[1], &version)) {
    return rejected_promise(env, "INVALID_ARGUMENT", "version must be a string");
  }
  return void_call(env, c.handle->core, "edgellm.setFallbackModel", [clear, path, version](edgellm_runtime* rt) {
    return edgellm_set_fallback_model(rt, clear ? nullptr : path.c_str(), version.c_str());
  });
}

napi_value m_embed(napi_env env, napi_callback_info info) {
  Call c;
  if (!unpack(env, info, &c)) return nullptr;
  return embed(env, c.handle->core, c.args[0], c.args[1]);
}

napi_value m_classify(napi_env env, napi_callback_info info) {
  Call c;
  if (!unpack(env, info, &c)) return nullptr;
  return classify(env, c.handle->core, c.args[0], c.args[1], c.args[2]);
}

napi_value m_rerank(napi_env env, napi_callback_info info) {
  Call c;
  if (!unpack(env, info, &c)) return nullptr;
  return rerank(env, c.handle->core, c.args[0], c.args[1], c.args[2]);
}

napi_value m_export_session(napi_env env, napi_callback_info info) {
  Call c;
  if (!unpack(env, info, &c)) return nullptr;
  return export_session(env, c.handle->core, c.args[0]);
}

napi_value m_import_session(napi_env env, napi_callback_info info) {
  Call c;
  if (!unpack(env, info, &c)) return nullptr;
  return import_session(env, c.handle->core, c.args[0], c.args[1]);
}

napi_value m_load_session_file(napi_env env, napi_callback_info info) {
  Call c;
  if (!unpack(env, info, &c)) return nullptr;
  return load_session_file(env, c.handle->core, c.args[0], c.args[1]);
}

napi_value m_save_session_file(napi_env env, napi_callback_info info) {
  Call c;
  if (!unpack(env, info, &c)) return nullptr;
  return save_session_file(env, c.handle->core, c.args[0], c.args[1]);
}

napi_value m_delete_session(napi_env env, napi_callback_info info) {
  Call c;
  edgellm_runtime* s = unpack_live(env, info, &c);
  return s ? delete_session(env, s, c.args[0]) : nullptr;
}

napi_value m_list_sessions(napi_env env, napi_callback_info info) {
  Call c;
  edgellm_runtime* s = unpack_live(env, info, &c);
  return s ? list_sessions(env, s) : nullptr;
}

// release(): the runtime is destroyed on a libuv worker thread; the promise resolves after.
struct ReleaseWork {
  std::shared_ptr<ModelCore> core;  // keeps the core alive until complete (JS thread)
  napi_deferred deferred = nullptr;
  napi_async_work work = nullptr;
};

napi_value m_release(napi_env env, napi_callback_info info) {
  Call c;
  if (!unpack(env, info, &c)) return nullptr;
  napi_deferred deferred = nullptr;
  napi_value promise = nullptr;
  if (napi_create_promise(env, &deferred, &promise) != napi_ok) {
    throw_napi_failure(env, "napi_create_promise");
    return nullptr;
  }
  const std::shared_ptr<ModelCore>& core = c.handle->core;
  if (!core->runtime()) {  // released before: nothing to do
    napi_resolve_deferred(env, deferred, js_undefined(env));
    return promise;
  }
  auto* w = new ReleaseWork{core, deferred, nullptr};
  napi_value name = js_string(env, "edgellm.release");
  napi_status st =
      name ? napi_create_async_work(
                 env, nullptr, name, [](napi_env, void* d) { static_cast<ReleaseWork*>(d)->core->release_pending(); },
                 [](napi_env env, napi_status, void* d) {
                   std::unique_ptr<ReleaseWork> w(static_cast<ReleaseWork*>(d));
                   w->core->destroy_now();  // cancelled before it ran: destroy here
                   napi_resolve_deferred(env, w->deferred, js_undefined(env));
                   napi_delete_async_work(env, w->work);
                 },
                 w, &w->work)
           : napi_generic_failure;
  if (st != napi_ok) {
    delete w;
    throw_napi_failure(env, "napi_create_async_work");
    return nullptr;
  }
  core->begin_release();
  if (napi_queue_async_work(env, w->work) != napi_ok) {
    // Not queued: destroy here instead (blocks, but the model must not stay half-released).
    core->destroy_now();
    napi_delete_async_work(env, w->work);
    delete w;
    napi_resolve_deferred(env, deferred, js_undefined(env));
  }
  return promise;
}

}  // namespace

bool define_model_class(napi_env env, napi_value exports, AddonData* data) {
  const napi_property_descriptor methods[] = {
      {"generate", nullptr, m_generate, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"embed", nullptr, m_embed, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"rerank", nullptr, m_rerank, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"classify", nullptr, m_classify, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"tokenize", nullptr, m_tokenize, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"detokenize", nullptr, m_detokenize, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"applyTemplate", nullptr, m_apply_template, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"info", nullptr, m_info, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"metrics", nullptr, m_metrics, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"metricsJson", nullptr, m_metrics_json, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"metricsPrometheus", nullptr, m_metrics_prometheus, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"degradation", nullptr, m_degradation, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"setPressure", nullptr, m_set_pressure, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"setFallbackModel", nullptr, m_set_fallback_model, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"swapModel", nullptr, m_swap_model, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"reloadRegistry", nullptr, m_reload_registry, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"setRouter", nullptr, m_set_router, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"exportSession", nullptr, m_export_session, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"importSession", nullptr, m_import_session, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"deleteSession", nullptr, m_delete_session, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"listSessions", nullptr, m_list_sessions, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"loadSessionFile", nullptr, m_load_session_file, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"saveSessionFile", nullptr, m_save_session_file, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"pause", nullptr, m_pause, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"resume", nullptr, m_resume, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"trim", nullptr, m_trim, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"warmup", nullptr, m_warmup, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"release", nullptr, m_release, nullptr, nullptr, nullptr, napi_default_method, nullptr},
  };
  napi_value cls = nullptr;
  if (napi_define_class(env, "Model", NAPI_AUTO_LENGTH, constructor, nullptr, sizeof(methods) / sizeof(methods[0]),
                        methods, &cls) != napi_ok ||
      napi_create_reference(env, cls, 1, &data->model_constructor) != napi_ok ||
      napi_set_named_property(env, exports, "Model", cls) != napi_ok) {
    throw_napi_failure(env, "define Model");
    return false;
  }
  return true;
}

napi_value new_model(napi_env env, std::shared_ptr<ModelCore> core) {
  return new_native<ModelHandle>(env, &AddonData::model_constructor, &AddonData::constructing, std::move(core),
                                 "new Model");
}

std::shared_ptr<ModelCore> model_core_of(napi_env env, napi_value value) {
  void* instance = nullptr;
  napi_value cls = nullptr;
  bool is_model = false;
  if (napi_get_instance_data(env, &instance) != napi_ok || !instance ||
      napi_get_reference_value(env, static_cast<AddonData*>(instance)->model_constructor, &cls) != napi_ok ||
      napi_instanceof(env, value, cls, &is_model) != napi_ok || !is_model) {
    return nullptr;
  }
  void* p = nullptr;
  if (napi_unwrap(env, value, &p) != napi_ok || !p) return nullptr;
  return static_cast<ModelHandle*>(p)->core;
}

}  // namespace edgellm_napi
