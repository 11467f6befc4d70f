#include "async_call.h"

#include <utility>

#include "js.h"

namespace edgellm_napi {

namespace {

struct AsyncCall {
  std::shared_ptr<ModelCore> core;  // dropped on the JS thread (complete)
  ModelCore::Use use;               // dropped on the worker, right after the work
  AsyncWork work;
  AsyncResolve resolve;
  napi_deferred deferred = nullptr;
  napi_async_work handle = nullptr;
  // Written by the worker, read on the JS thread after (the async work orders them).
  edgellm_status status = EDGELLM_OK;
  std::string error;
};

void execute(napi_env, void* data) {
  auto* c = static_cast<AsyncCall*>(data);
  try {
    c->status = c->work(c->use.runtime(), &c->error);
  } catch (...) {  // only bad_alloc can come from the work's own std::string / vector use
    c->status = EDGELLM_ERR_OUT_OF_MEMORY;
    c->error = "out of memory";
  }
  c->use.reset();
}

void complete(napi_env env, napi_status status, void* data) {
  std::unique_ptr<AsyncCall> c(static_cast<AsyncCall*>(data));
  napi_delete_async_work(env, c->handle);
  c->use.reset();  // cancelled before it ran
  if (status != napi_ok) {
    reject_error(env, c->deferred, "INTERNAL", "the call was cancelled");
    return;
  }
  if (c->status != EDGELLM_OK) {
    reject_error(env, c->deferred, status_code(c->status), c->error);
    return;
  }
  napi_value value = c->resolve ? c->resolve(env) : js_undefined(env);
  if (!value) {
    reject_error(env, c->deferred, "INTERNAL", "the result could not be built");  // the pending exception wins
    return;
  }
  napi_resolve_deferred(env, c->deferred, value);
}

}  // namespace

napi_value rejected_promise(napi_env env, const std::string& code, const std::string& message) {
  napi_deferred deferred = nullptr;
  napi_value promise = nullptr;
  if (napi_create_promise(env, &deferred, &promise) != napi_ok) {
    throw_napi_failure(env, "napi_create_promise");
    return nullptr;
  }
  reject_error(env, deferred, code, message);
  return promise;
}

napi_value run_async(napi_env env, const char* name, const std::shared_ptr<ModelCore>& core, AsyncWork work,
                     AsyncResolve resolve) {
  napi_deferred deferred = nullptr;
  napi_value promise = nullptr;
  if (napi_create_promise(env, &deferred, &promise) != napi_ok) {
    throw_napi_failure(env, "napi_create_promise");
    return nullptr;
  }
  auto c = std::make_unique<AsyncCall>();
  c->deferred = deferred;
  c->work = std::move(work);
  c->resolve = std::move(resolve);
  if (core) {
    c->use = core->use();
    if (!c->use.runtime()) {
      reject_error(env, deferred, status_code(EDGELLM_ERR_SHUT_DOWN), "the model was released");
      return promise;
    }
    c->core = core;
  }
  if (!start_async_work(env, name, execute, complete, c.get(), &c->handle)) return nullptr;
  c.release();  // complete() owns it
  return promise;
}

}  // namespace edgellm_napi
