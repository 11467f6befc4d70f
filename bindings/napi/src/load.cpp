// load(modelPath, options?): edgellm_runtime_create maps and checks the file (with registryDir:
// resolves and verifies the registry name first) and starts the runtime's threads, which takes
// long: it runs on a libuv worker thread (napi_async_work) and the promise settles on the JS
// thread with a Model, or rejects with Error{code} (IO, INVALID_FILE, UNSUPPORTED, OUT_OF_MEMORY,
// INVALID_ARGUMENT).
#include <memory>
#include <string>

#include "addon.h"
#include "js.h"
#include "options.h"

namespace edgellm_napi {

namespace {

struct LoadWork {
  LoadConfig config;
  napi_deferred deferred = nullptr;
  napi_async_work work = nullptr;
  // Written by the worker thread, read on the JS thread after (the async work orders them).
  edgellm_runtime* runtime = nullptr;
  edgellm_status status = EDGELLM_OK;
  std::string error;
};

void execute(napi_env, void* data) {
  auto* w = static_cast<LoadWork*>(data);
  w->status = edgellm_runtime_create(w->config.model_path.c_str(), &w->config.params, &w->runtime);
  if (w->status != EDGELLM_OK) w->error = last_error_message(w->status);
}

void complete(napi_env env, napi_status status, void* data) {
  std::unique_ptr<LoadWork> w(static_cast<LoadWork*>(data));
  napi_delete_async_work(env, w->work);
  // The core owns the runtime from here, whatever happens next (freed if no Model is made).
  auto core = std::make_shared<ModelCore>(w->runtime);
  napi_value outcome = nullptr;
  bool resolve = false;
  if (status != napi_ok) {
    outcome = make_error(env, "INTERNAL", "the load was cancelled");
  } else if (w->status != EDGELLM_OK) {
    outcome = make_error(env, status_code(w->status), w->error);
  } else {
    outcome = new_model(env, std::move(core));
    resolve = outcome != nullptr;
  }
  if (!outcome) napi_get_and_clear_last_exception(env, &outcome);
  if (resolve) {
    napi_resolve_deferred(env, w->deferred, outcome);
  } else {
    napi_reject_deferred(env, w->deferred, outcome ? outcome : js_undefined(env));
  }
}

}  // namespace

napi_value load(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value args[2] = {nullptr, nullptr};
  if (napi_get_cb_info(env, info, &argc, args, nullptr, nullptr) != napi_ok) return nullptr;
  for (size_t i = argc; i < 2; ++i) args[i] = js_undefined(env);
  napi_deferred deferred = nullptr;
  napi_value promise = nullptr;
  if (napi_create_promise(env, &deferred, &promise) != napi_ok) {
    throw_napi_failure(env, "napi_create_promise");
    return nullptr;
  }
  auto w = std::make_unique<LoadWork>();
  w->deferred = deferred;
  std::string error;
  if (!read_load_config(env, args[0], args[1], &w->config, &error)) {
    reject_error(env, deferred, "INVALID_ARGUMENT", error);
    return promise;
  }
  if (!start_async_work(env, "edgellm.load", execute, complete, w.get(), &w->work)) return nullptr;
  w.release();  // complete() owns it
  return promise;
}

}  // namespace edgellm_napi
