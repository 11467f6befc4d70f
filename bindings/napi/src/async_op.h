// AsyncOp: an operation whose completion arrives on one of the runtime's threads (a generation:
// the scheduler thread, or the router thread for routed answers; a warm-up, a trim: the
// scheduler thread) and must reach JS. Its channel is one thread-safe function (TSFN): those
// threads post Messages without blocking (unbounded queue, napi_tsfn_nonblocking) and the JS
// thread delivers them in the order posted, so a generation's final result always follows its
// last token. JS is called only from Message::deliver, on the JS thread.
//
// Lifetime: the op is created on the JS thread, shared with the runtime's threads through the C
// callbacks' user_data, and deleted by the TSFN's finalizer on the JS thread after close() (the
// runtime's last touch) and after every queued message was delivered.
//
// Env teardown (process exit, worker termination) with the op still running: Node-API frees
// thread-safe functions then, even if a thread still posts to them. So each open op registers an
// env cleanup hook that destroys the runtime first (ModelCore::destroy_now: the library finishes
// every request, calling on_finish, before it returns); the hook is registered after the TSFN,
// and hooks run in reverse order of registration, so it runs before the TSFN's own cleanup.
#ifndef EDGELLM_NAPI_ASYNC_OP_H
#define EDGELLM_NAPI_ASYNC_OP_H

#include <memory>

#include "compat.h"
#include "model_core.h"

namespace edgellm_napi {

// One event for the JS thread. deliver() runs there inside a handle scope; a message still queued
// when the env goes away is deleted without deliver().
class Message {
 public:
  virtual ~Message() = default;
  virtual void deliver(napi_env env) = 0;
};

class AsyncOp {
 public:
  explicit AsyncOp(std::shared_ptr<ModelCore> core) : core_(std::move(core)) {}
  virtual ~AsyncOp();
  AsyncOp(const AsyncOp&) = delete;
  AsyncOp& operator=(const AsyncOp&) = delete;

  // Opens the channel and registers the teardown hook; from then on the channel owns the op. On
  // failure (exception pending) the op is gone already (deleted, or by the closed channel's
  // finalizer): the caller must not touch it. JS thread.
  bool open(napi_env env, const char* name);
  // Any thread: queues m for delivery (takes ownership; deleted if the channel is closing).
  void post(Message* m);
  // Any thread, exactly once after open(): no more posts; the op is deleted on the JS thread
  // after the messages already queued.
  void close();
  // JS thread: the operation has settled its promise; the teardown hook is no longer needed.
  void settled(napi_env env);

  const std::shared_ptr<ModelCore>& core() const { return core_; }

 private:
  static void on_teardown(void* op);
  static void call_js(napi_env env, napi_value js_callback, void* context, void* data);
  static void finalize(napi_env env, void* data, void* hint);

  std::shared_ptr<ModelCore> core_;  // JS thread only
  napi_env env_ = nullptr;
  napi_threadsafe_function tsfn_ = nullptr;  // set before any callback can post
  bool hook_registered_ = false;             // JS thread only
};

}  // namespace edgellm_napi

#endif  // EDGELLM_NAPI_ASYNC_OP_H
