#include "async_op.h"

#include "js.h"

namespace edgellm_napi {

AsyncOp::~AsyncOp() {
  if (hook_registered_) napi_remove_env_cleanup_hook(env_, on_teardown, this);
}

bool AsyncOp::open(napi_env env, const char* name) {
  env_ = env;
  napi_value resource_name = js_string(env, name);  // OHOS requires a string here
  // max_queue_size 0: unbounded, so a post from the scheduler thread never waits for JS.
  // initial_thread_count 1: the scheduler thread's reference, dropped by close().
  if (!resource_name || napi_create_threadsafe_function(env, nullptr, nullptr, resource_name, 0, 1, this, finalize,
                                                        this, call_js, &tsfn_) != napi_ok) {
    throw_napi_failure(env, "napi_create_threadsafe_function");
    delete this;
    return false;
  }
  if (napi_add_env_cleanup_hook(env, on_teardown, this) != napi_ok) {
    // Unsafe at teardown without the hook: close the channel, whose finalizer deletes the op.
    throw_napi_failure(env, "napi_add_env_cleanup_hook");
    close();
    return false;
  }
  hook_registered_ = true;
  return true;
}

void AsyncOp::post(Message* m) {
  if (napi_call_threadsafe_function(tsfn_, m, napi_tsfn_nonblocking) != napi_ok) delete m;
}

void AsyncOp::close() {
  napi_release_threadsafe_function(tsfn_, napi_tsfn_release);
}

void AsyncOp::settled(napi_env env) {
  if (hook_registered_) {
    napi_remove_env_cleanup_hook(env, on_teardown, this);
    hook_registered_ = false;
  }
}

void AsyncOp::on_teardown(void* arg) {
  auto* op = static_cast<AsyncOp*>(arg);
  op->hook_registered_ = false;
  op->core_->destroy_now();
}

void AsyncOp::call_js(napi_env env, napi_value, void*, void* data) {
  std::unique_ptr<Message> m(static_cast<Message*>(data));
  if (!env) return;  // the env is going away: drop the event
  napi_handle_scope scope = nullptr;
  if (napi_open_handle_scope(env, &scope) != napi_ok) return;
  m->deliver(env);
  napi_close_handle_scope(env, scope);
}

void AsyncOp::finalize(napi_env, void* data, void*) {
  delete static_cast<AsyncOp*>(data);
}

}  // namespace edgellm_napi
