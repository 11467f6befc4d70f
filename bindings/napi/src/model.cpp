// class Model: the JS face of one loaded service. The object wraps a ModelHandle holding the
// shared ModelCore; synchronous methods throw Error{code} (SHUT_DOWN once released), generate
// and warmup report through promises (generation.cpp, warmup.cpp), release destroys the service
// on a libuv worker thread (destroying joins the scheduler thread: never on the JS thread while
// requests may run).
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "addon.h"
#include "js.h"

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

// unpack() for a synchronous call: the live service, or nullptr with an exception pending
// (SHUT_DOWN once the model is released).
edgellm_service* unpack_live(napi_env env, napi_callback_info info, Call* call) {
  if (!unpack(env, info, call)) return nullptr;
  edgellm_service* s = call->handle->core->service();
  if (!s) throw_error(env, status_code(EDGELLM_ERR_SHUT_DOWN), "the model was released");
  return s;
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
  napi_value self = nullptr;
  void* instance = nullptr;
  if (napi_get_cb_info(env, info, nullptr, nullptr, &self, nullptr) != napi_ok) return nullptr;
  if (napi_get_instance_data(env, &instance) != napi_ok || !instance) return nullptr;
  auto* data = static_cast<AddonData*>(instance);
  auto* handle = static_cast<ModelHandle*>(data->constructing);
  if (!handle) {
    throw_error(env, "INVALID_ARGUMENT", "Model objects come from load()");
    return nullptr;
  }
  data->constructing = nullptr;  // one object per handle, even if the wrap fails
  if (napi_wrap(
          env, self, handle, [](napi_env, void* d, void*) { delete static_cast<ModelHandle*>(d); }, nullptr, nullptr) !=
      napi_ok) {
    delete handle;
    throw_napi_failure(env, "napi_wrap");
    return nullptr;
  }
  return self;
}

napi_value m_generate(napi_env env, napi_callback_info info) {
  Call c;
  if (!unpack(env, info, &c)) return nullptr;
  return generate(env, c.handle->core, c.args[0], c.args[1], c.args[2]);
}

napi_value m_tokenize(napi_env env, napi_callback_info info) {
  Call c;
  edgellm_service* s = unpack_live(env, info, &c);
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
  napi_value array = nullptr;
  if (napi_create_array_with_length(env, n, &array) != napi_ok) return nullptr;
  for (size_t i = 0; i < n; ++i) {
    napi_value v = nullptr;
    if (napi_create_int32(env, ids[i], &v) != napi_ok ||
        napi_set_element(env, array, static_cast<uint32_t>(i), v) != napi_ok) {
      return nullptr;
    }
  }
  return array;
}

napi_value m_detokenize(napi_env env, napi_callback_info info) {
  Call c;
  edgellm_service* s = unpack_live(env, info, &c);
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
  size_t length = 0;
  edgellm_status st = edgellm_detokenize(s, ids.data(), ids.size(), false, nullptr, 0, &length);
  std::string text(length, '\0');
  if (st == EDGELLM_ERR_BUFFER_TOO_SMALL || st == EDGELLM_OK) {
    // capacity includes the NUL the library writes after the text
    st = edgellm_detokenize(s, ids.data(), ids.size(), false, text.data(), text.size() + 1, &length);
  }
  if (st != EDGELLM_OK) return status_result(env, st);
  text.resize(length);
  return js_string(env, text);
}

// info(): the library's model-info JSON, parsed by the engine's JSON.parse.
napi_value m_info(napi_env env, napi_callback_info info) {
  Call c;
  edgellm_service* s = unpack_live(env, info, &c);
  if (!s) return nullptr;
  size_t length = 0;
  edgellm_status st = edgellm_model_info_json(s, nullptr, 0, &length);
  std::string json(length, '\0');
  if (st == EDGELLM_ERR_BUFFER_TOO_SMALL || st == EDGELLM_OK) {
    st = edgellm_model_info_json(s, json.data(), json.size() + 1, &length);
  }
  if (st != EDGELLM_OK) return status_result(env, st);
  json.resize(length);
  napi_value global = nullptr, json_object = nullptr, parse = nullptr, text = js_string(env, json), parsed = nullptr;
  if (!text || napi_get_global(env, &global) != napi_ok ||
      napi_get_named_property(env, global, "JSON", &json_object) != napi_ok ||
      napi_get_named_property(env, json_object, "parse", &parse) != napi_ok ||
      napi_call_function(env, json_object, parse, 1, &text, &parsed) != napi_ok) {
    throw_napi_failure(env, "info");
    return nullptr;
  }
  return parsed;
}

napi_value m_metrics(napi_env env, napi_callback_info info) {
  Call c;
  edgellm_service* s = unpack_live(env, info, &c);
  if (!s) return nullptr;
  edgellm_metrics m{};
  edgellm_status st = edgellm_get_metrics(s, &m);
  if (st != EDGELLM_OK) return status_result(env, st);
  napi_value o = js_object(env);
  auto num = [&](const char* name, double v) { return set_property(env, o, name, js_number(env, v)); };
  bool ok =
      num("requestsSubmitted", static_cast<double>(m.requests_submitted)) &&
      num("requestsFinished", static_cast<double>(m.requests_finished)) &&
      num("busyRejections", static_cast<double>(m.busy_rejections)) &&
      num("invalidRequests", static_cast<double>(m.invalid_requests)) &&
      num("finishedStop", static_cast<double>(m.finished_stop)) &&
      num("finishedLength", static_cast<double>(m.finished_length)) &&
      num("cancellations", static_cast<double>(m.cancellations)) && num("timeouts", static_cast<double>(m.timeouts)) &&
      num("errors", static_cast<double>(m.errors)) && num("promptTokens", static_cast<double>(m.prompt_tokens)) &&
      num("completionTokens", static_cast<double>(m.completion_tokens)) && num("steps", static_cast<double>(m.steps)) &&
      num("stepTokens", static_cast<double>(m.step_tokens)) &&
      num("abortedSteps", static_cast<double>(m.aborted_steps)) &&
      num("prefillTokensPerSecond", m.prefill_tokens_per_second) &&
      num("decodeTokensPerSecond", m.decode_tokens_per_second) && num("ttftMsMean", m.ttft_ms_mean) &&
      num("queueMsMean", m.queue_ms_mean) && num("running", m.running) && num("waiting", m.waiting) &&
      num("kvBlocksUsed", m.kv_blocks_used) && num("kvBlocksTotal", m.kv_blocks_total) &&
      set_property(env, o, "paused", js_bool(env, m.paused)) && num("rssBytes", static_cast<double>(m.rss_bytes)) &&
      num("peakRssBytes", static_cast<double>(m.peak_rss_bytes)) && num("maxDecodeBatch", m.max_decode_batch) &&
      set_property(env, o, "pausedIdle", js_bool(env, m.paused_idle));
  return ok ? o : nullptr;
}

napi_value m_pause(napi_env env, napi_callback_info info) {
  Call c;
  edgellm_service* s = unpack_live(env, info, &c);
  return s ? status_result(env, edgellm_pause(s)) : nullptr;
}

napi_value m_resume(napi_env env, napi_callback_info info) {
  Call c;
  edgellm_service* s = unpack_live(env, info, &c);
  return s ? status_result(env, edgellm_resume(s)) : nullptr;
}

napi_value m_trim(napi_env env, napi_callback_info info) {
  Call c;
  edgellm_service* s = unpack_live(env, info, &c);
  return s ? status_result(env, edgellm_trim(s, nullptr, nullptr)) : nullptr;
}

napi_value m_warmup(napi_env env, napi_callback_info info) {
  Call c;
  if (!unpack(env, info, &c)) return nullptr;
  return warmup(env, c.handle->core);
}

// release(): the service is destroyed on a libuv worker thread; the promise resolves after.
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
  if (!core->service()) {  // released before: nothing to do
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
      {"tokenize", nullptr, m_tokenize, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"detokenize", nullptr, m_detokenize, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"info", nullptr, m_info, nullptr, nullptr, nullptr, napi_default_method, nullptr},
      {"metrics", nullptr, m_metrics, nullptr, nullptr, nullptr, napi_default_method, nullptr},
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
  void* instance = nullptr;
  napi_value cls = nullptr, obj = nullptr;
  if (napi_get_instance_data(env, &instance) != napi_ok || !instance ||
      napi_get_reference_value(env, static_cast<AddonData*>(instance)->model_constructor, &cls) != napi_ok) {
    throw_napi_failure(env, "new Model");
    return nullptr;
  }
  auto* data = static_cast<AddonData*>(instance);
  data->constructing = new ModelHandle{std::move(core)};  // the constructor takes it
  bool ok = napi_new_instance(env, cls, 0, nullptr, &obj) == napi_ok;
  if (data->constructing) {  // the constructor did not run
    delete static_cast<ModelHandle*>(data->constructing);
    data->constructing = nullptr;
  }
  if (!ok) {
    throw_napi_failure(env, "new Model");
    return nullptr;
  }
  return obj;
}

}  // namespace edgellm_napi
