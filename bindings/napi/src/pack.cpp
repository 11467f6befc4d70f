// pack(modelPath, options?): edgellm_pack_model repacks the model's matrices and writes its pack
// file, which takes seconds: it runs on a libuv worker thread (napi_async_work) and the promise
// settles on the JS thread, or rejects with Error{code} (IO, INVALID_FILE, UNSUPPORTED,
// INVALID_ARGUMENT).
#include <memory>
#include <string>

#include "addon.h"
#include "js.h"

namespace edgellm_napi {

namespace {

struct PackWork {
  std::string model_path;
  std::string pack_dir;
  bool has_pack_dir = false;  // absent: beside the model ('' is passed on: the library refuses it)
  int32_t threads = 0;
  napi_deferred deferred = nullptr;
  napi_async_work work = nullptr;
  // Written by the worker thread, read on the JS thread after (the async work orders them).
  edgellm_status status = EDGELLM_OK;
  std::string error;
};

void execute(napi_env, void* data) {
  auto* w = static_cast<PackWork*>(data);
  w->status = edgellm_pack_model(w->model_path.c_str(), w->has_pack_dir ? w->pack_dir.c_str() : nullptr, w->threads);
  if (w->status != EDGELLM_OK) w->error = last_error_message(w->status);
}

void complete(napi_env env, napi_status status, void* data) {
  std::unique_ptr<PackWork> w(static_cast<PackWork*>(data));
  napi_delete_async_work(env, w->work);
  if (status != napi_ok) {
    reject_error(env, w->deferred, "INTERNAL", "the pack was cancelled");
  } else if (w->status != EDGELLM_OK) {
    reject_error(env, w->deferred, status_code(w->status), w->error);
  } else {
    napi_resolve_deferred(env, w->deferred, js_undefined(env));
  }
}

}  // namespace

napi_value pack(napi_env env, napi_callback_info info) {
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
  auto w = std::make_unique<PackWork>();
  w->deferred = deferred;
  if (!read_string(env, args[0], &w->model_path)) {
    reject_error(env, deferred, "INVALID_ARGUMENT", "modelPath must be a string");
    return promise;
  }
  OptionReader r(env, args[1], "options");
  r.integer("threads", 0, 256, &w->threads);
  if (napi_value d = r.field("packDir")) {
    if (!read_string(env, d, &w->pack_dir)) r.fail("options.packDir must be a string");
    w->has_pack_dir = true;
  }
  if (!r.ok()) {
    reject_error(env, deferred, "INVALID_ARGUMENT", r.error());
    return promise;
  }
  if (!start_async_work(env, "edgellm.pack", execute, complete, w.get(), &w->work)) return nullptr;
  w.release();  // complete() owns it
  return promise;
}

}  // namespace edgellm_napi
