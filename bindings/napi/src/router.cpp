#include "router.h"

#include <new>
#include <utility>
#include <vector>

#include "js.h"
#include "model_core.h"

namespace edgellm_napi {

namespace {

constexpr const char* kReleased = "the model was released before the transport answered";

// One call on its way to the JS thread.
struct CallMessage {
  uint64_t id;
  std::string tier, model, body;
};

// What the native then() handlers of one call are bound to (a finalizer frees it with them).
struct Bound {
  std::shared_ptr<RouterTransport> transport;
  uint64_t id;
};

// String(value), or `fallback` when even that fails (the exception is cleared).
std::string describe(napi_env env, napi_value value, const char* fallback) {
  napi_value s = nullptr;
  std::string out;
  // An Error's message says more than its String() form's "Error: " prefix would add.
  if (type_of(env, value) == napi_object) {
    napi_value message = nullptr;
    if (napi_get_named_property(env, value, "message", &message) == napi_ok && read_string(env, message, &out) &&
        !out.empty()) {
      return out;
    }
  }
  if (napi_coerce_to_string(env, value, &s) == napi_ok && read_string(env, s, &out)) return out;
  napi_value ignored = nullptr;
  napi_get_and_clear_last_exception(env, &ignored);
  return fallback;
}

// Bytes of a string, an ArrayBuffer or a typed array / DataView (its own byte range).
bool read_bytes(napi_env env, napi_value value, std::string* out) {
  if (read_string(env, value, out)) return true;
  bool is = false;
  void* data = nullptr;
  size_t length = 0;
  if (napi_is_arraybuffer(env, value, &is) == napi_ok && is) {
    if (napi_get_arraybuffer_info(env, value, &data, &length) != napi_ok) return false;
    out->assign(static_cast<const char*>(data), length);
    return true;
  }
  if (napi_is_typedarray(env, value, &is) == napi_ok && is) {
    // The element count differs between hosts (OHOS reports bytes): read byteLength instead.
    napi_typedarray_type type;
    size_t count = 0, offset = 0;
    napi_value buffer = nullptr, byte_length = nullptr;
    double n = 0;
    if (napi_get_typedarray_info(env, value, &type, &count, &data, &buffer, &offset) != napi_ok ||
        napi_get_named_property(env, value, "byteLength", &byte_length) != napi_ok ||
        napi_get_value_double(env, byte_length, &n) != napi_ok || n < 0) {
      return false;
    }
    out->assign(static_cast<const char*>(data), static_cast<size_t>(n));
    return true;
  }
  if (napi_is_dataview(env, value, &is) == napi_ok && is) {
    napi_value buffer = nullptr;
    size_t offset = 0;
    if (napi_get_dataview_info(env, value, &length, &data, &buffer, &offset) != napi_ok) return false;
    out->assign(static_cast<const char*>(data), length);
    return true;
  }
  return false;
}

// The transport's answer: {status, body} or {error}.
void settle_with_value(napi_env env, RouterTransport* t, uint64_t id, napi_value value) {
  if (type_of(env, value) != napi_object) {
    t->complete(id, 0, "", "the transport resolved with neither {status, body} nor {error}");
    return;
  }
  napi_value error = nullptr, status = nullptr, body = nullptr;
  if (napi_get_named_property(env, value, "error", &error) != napi_ok ||
      napi_get_named_property(env, value, "status", &status) != napi_ok ||
      napi_get_named_property(env, value, "body", &body) != napi_ok) {
    napi_value ignored = nullptr;
    napi_get_and_clear_last_exception(env, &ignored);  // a getter threw
    t->complete(id, 0, "", "the transport's answer could not be read");
    return;
  }
  const napi_valuetype error_type = type_of(env, error);
  if (error_type != napi_undefined && error_type != napi_null) {
    t->complete(id, 0, "", describe(env, error, "the transport failed"));
    return;
  }
  double code = 0;
  std::string bytes;
  if (type_of(env, status) != napi_number || napi_get_value_double(env, status, &code) != napi_ok ||
      !(code >= 100 && code <= 599) || static_cast<double>(static_cast<int32_t>(code)) != code) {
    t->complete(id, 0, "", "the transport's answer has no HTTP status (an integer in [100, 599])");
    return;
  }
  const napi_valuetype body_type = type_of(env, body);
  if (body_type != napi_undefined && body_type != napi_null && !read_bytes(env, body, &bytes)) {
    t->complete(id, 0, "", "the transport's answer body must be a string, an ArrayBuffer or a typed array");
    return;
  }
  t->complete(id, static_cast<int32_t>(code), bytes, "");
}

napi_value on_fulfilled(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value value = nullptr;
  void* data = nullptr;
  if (napi_get_cb_info(env, info, &argc, &value, nullptr, &data) != napi_ok) return nullptr;
  auto* b = static_cast<Bound*>(data);
  if (argc < 1) value = js_undefined(env);
  settle_with_value(env, b->transport.get(), b->id, value);
  return js_undefined(env);
}

napi_value on_rejected(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value reason = nullptr;
  void* data = nullptr;
  if (napi_get_cb_info(env, info, &argc, &reason, nullptr, &data) != napi_ok) return nullptr;
  auto* b = static_cast<Bound*>(data);
  const std::string why = argc >= 1 ? describe(env, reason, "rejected") : "rejected";
  b->transport->complete(b->id, 0, "", "the transport rejected: " + why);
  return js_undefined(env);
}

// A native function bound to (transport, id); nullptr with an exception pending on failure.
napi_value bound_function(napi_env env, const char* name, napi_callback cb, const std::shared_ptr<RouterTransport>& t,
                          uint64_t id) {
  auto b = std::make_unique<Bound>(Bound{t, id});
  napi_value fn = nullptr;
  if (napi_create_function(env, name, NAPI_AUTO_LENGTH, cb, b.get(), &fn) != napi_ok ||
      napi_add_finalizer(
          env, fn, b.get(), [](napi_env, void* d, void*) { delete static_cast<Bound*>(d); }, nullptr, nullptr) !=
          napi_ok) {
    return nullptr;
  }
  b.release();  // fn's finalizer owns it
  return fn;
}

}  // namespace

std::shared_ptr<RouterTransport> RouterTransport::create(napi_env env, napi_value fn) {
  std::shared_ptr<RouterTransport> t(new RouterTransport());
  // The thread-safe function keeps the transport alive until it is finalized (JS thread).
  auto* box = new std::shared_ptr<RouterTransport>(t);
  napi_value name = js_string(env, "edgellm.transport");
  napi_threadsafe_function tsfn = nullptr;
  // Unbounded queue (the router thread never waits for JS), one thread reference (released by
  // shutdown()).
  if (!name || napi_create_threadsafe_function(env, fn, nullptr, name, 0, 1, box, finalize, box, call_js, &tsfn) !=
                   napi_ok) {
    delete box;
    throw_napi_failure(env, "napi_create_threadsafe_function");
    return nullptr;
  }
  // A router does not keep the process alive by itself (a call in flight is a promise of the
  // app's, which does).
  napi_unref_threadsafe_function(env, tsfn);
  std::lock_guard<std::mutex> lock(t->mu_);
  t->tsfn_ = tsfn;
  return t;
}

RouterTransport::~RouterTransport() {
  // Only reached after shutdown() or when the runtime never got the transport; either way no
  // call can be pending (shutdown completed them), but be safe.
  for (auto& [id, call] : calls_) edgellm_cloud_complete(call, 0, nullptr, 0, kReleased);
}

void RouterTransport::on_call(edgellm_cloud_call* call, const char* tier, const char* model, const char* body,
                              size_t body_len, void* user_data) {
  auto* t = static_cast<RouterTransport*>(user_data);
  CallMessage* m = nullptr;
  try {
    m = new CallMessage{0, tier ? tier : "", model ? model : "", std::string(body ? body : "", body ? body_len : 0)};
  } catch (...) {
    edgellm_cloud_complete(call, 0, nullptr, 0, "out of memory");
    return;
  }
  const char* failure = nullptr;
  {
    std::lock_guard<std::mutex> lock(t->mu_);
    if (t->closed_ || !t->tsfn_) {
      failure = kReleased;
    } else {
      try {
        m->id = t->next_id_++;
        t->calls_.emplace(m->id, call);
      } catch (...) {
        failure = "out of memory";
      }
      // Queued under our lock so shutdown() cannot release the function in between; this only
      // queues (nonblocking), it never calls JS.
      if (!failure && napi_call_threadsafe_function(t->tsfn_, m, napi_tsfn_nonblocking) != napi_ok) {
        t->calls_.erase(m->id);
        failure = "the transport cannot be reached (the JS environment is closing)";
      }
    }
  }
  if (failure) {
    delete m;
    edgellm_cloud_complete(call, 0, nullptr, 0, failure);
  }
}

bool RouterTransport::pending(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_.count(id) > 0;
}

void RouterTransport::complete(uint64_t id, int32_t http_status, const std::string& body, const std::string& error) {
  edgellm_cloud_call* call = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = calls_.find(id);
    if (it == calls_.end()) return;  // completed already (shutdown, or a second settle)
    call = it->second;
    calls_.erase(it);
  }
  edgellm_cloud_complete(call, http_status, body.data(), body.size(), error.empty() ? nullptr : error.c_str());
}

void RouterTransport::shutdown() {
  std::vector<edgellm_cloud_call*> calls;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    closed_ = true;
    for (auto& [id, call] : calls_) calls.push_back(call);
    calls_.clear();
    // Released under the lock so a concurrent finalize (env teardown) cannot free it between
    // the read and the call; releasing only schedules the finalizer.
    if (tsfn_) napi_release_threadsafe_function(tsfn_, napi_tsfn_release);
    tsfn_ = nullptr;
  }
  for (edgellm_cloud_call* call : calls) edgellm_cloud_complete(call, 0, nullptr, 0, kReleased);
}

void RouterTransport::finalize(napi_env, void* data, void*) {
  auto* box = static_cast<std::shared_ptr<RouterTransport>*>(data);
  {
    std::lock_guard<std::mutex> lock((*box)->mu_);
    (*box)->tsfn_ = nullptr;  // freed by the host after this returns
  }
  delete box;
}

void RouterTransport::call_js(napi_env env, napi_value fn, void* context, void* data) {
  std::unique_ptr<CallMessage> m(static_cast<CallMessage*>(data));
  const std::shared_ptr<RouterTransport>& t = *static_cast<std::shared_ptr<RouterTransport>*>(context);
  if (!env || !fn) return;  // the env is going away: shutdown() completes the call
  if (!t->pending(m->id)) return;  // completed already: the model was released
  napi_handle_scope scope = nullptr;
  if (napi_open_handle_scope(env, &scope) != napi_ok) {
    t->complete(m->id, 0, "", "the transport could not be called");
    return;
  }
  napi_value arg = js_object(env), ret = nullptr, then = nullptr;
  const bool built = arg && set_property(env, arg, "tier", js_string(env, m->tier)) &&
                     set_property(env, arg, "model", js_string(env, m->model)) &&
                     set_property(env, arg, "body", js_string(env, m->body));
  if (!built || napi_call_function(env, js_undefined(env), fn, 1, &arg, &ret) != napi_ok) {
    napi_value exception = nullptr;
    napi_get_and_clear_last_exception(env, &exception);
    t->complete(m->id, 0, "", "the transport threw: " + describe(env, exception, "an exception"));
  } else if (type_of(env, ret) == napi_object &&
             napi_get_named_property(env, ret, "then", &then) == napi_ok && type_of(env, then) == napi_function) {
    // A promise (or any thenable): its handlers complete the call when it settles.
    napi_value handlers[2] = {bound_function(env, "onFulfilled", on_fulfilled, t, m->id),
                              bound_function(env, "onRejected", on_rejected, t, m->id)};
    napi_value ignored = nullptr;
    if (!handlers[0] || !handlers[1] || napi_call_function(env, ret, then, 2, handlers, &ignored) != napi_ok) {
      napi_value exception = nullptr;
      napi_get_and_clear_last_exception(env, &exception);
      t->complete(m->id, 0, "", "the transport's promise could not be awaited");
    }
  } else {
    napi_value ignored = nullptr;
    napi_get_and_clear_last_exception(env, &ignored);  // reading `then` may have thrown
    settle_with_value(env, t.get(), m->id, ret);
  }
  napi_close_handle_scope(env, scope);
}

napi_value set_router(napi_env env, const std::shared_ptr<ModelCore>& core, napi_value options) {
  edgellm_runtime* rt = core->runtime();
  if (!rt) {
    throw_error(env, status_code(EDGELLM_ERR_SHUT_DOWN), "the model was released");
    return nullptr;
  }
  edgellm_router_params p = edgellm_router_default_params();
  OptionReader r(env, options, "options");
  r.number("localThreshold", &p.local_threshold);
  r.number("cloudThreshold", &p.cloud_threshold);
  r.boolean("privacy", &p.privacy);
  r.integer("verbatimTurns", INT32_MIN, INT32_MAX, &p.verbatim_turns);
  r.integer("cloudTimeoutMs", INT32_MIN, INT32_MAX, &p.cloud_timeout_ms);
  r.boolean("cloudOnFailure", &p.cloud_on_failure);
  r.integer("summaryMaxTokens", INT32_MIN, INT32_MAX, &p.summary_max_tokens);
  std::string cloud_model, cloud_model_large;
  r.string("cloudModel", &cloud_model);
  r.string("cloudModelLarge", &cloud_model_large);
  napi_value transport = r.field("transport");
  if (r.ok() && transport && type_of(env, transport) != napi_function && type_of(env, transport) != napi_null) {
    r.fail("options.transport must be a function (call) => Promise<{status, body} | {error}>");
  }
  if (!r.ok()) {
    throw_error(env, "INVALID_ARGUMENT", r.error());
    return nullptr;
  }
  p.cloud_model = cloud_model.c_str();
  p.cloud_model_large = cloud_model_large.empty() ? nullptr : cloud_model_large.c_str();
  std::shared_ptr<RouterTransport> t;
  if (transport && type_of(env, transport) == napi_function) {
    t = RouterTransport::create(env, transport);
    if (!t) return nullptr;
    core->add_transport(t);  // before the library can call it
    p.transport = &RouterTransport::on_call;
    p.transport_user_data = t.get();
  }
  const edgellm_status st = edgellm_set_router(rt, &p);
  if (st != EDGELLM_OK) {
    std::string message = last_error_message(st);
    if (t) t->shutdown();  // the library never got it
    throw_error(env, status_code(st), message);
    return nullptr;
  }
  return js_undefined(env);
}

}  // namespace edgellm_napi
