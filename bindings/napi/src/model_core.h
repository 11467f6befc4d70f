// ModelCore: the one owner of an edgellm_service. Shared (std::shared_ptr) by the JS Model object
// and by every operation in flight on it (a generation, a warm-up, a release), so the service
// lives while anything can still reach it and is destroyed exactly once:
//   release()            begin_release() on the JS thread, edgellm_service_destroy on a libuv
//                        worker thread, end_release() there when it returns;
//   last reference gone  ~ModelCore on the JS thread (the Model's finalizer, or an operation's
//                        end): the service is idle then (no operation holds it), so destroying
//                        it only joins its idle scheduler thread;
//   env teardown         destroy_now() from an operation's cleanup hook (async_op.h), before
//                        Node-API tears down that operation's thread-safe function.
// The shared_ptr itself is copied and dropped on the JS thread only.
#ifndef EDGELLM_NAPI_MODEL_CORE_H
#define EDGELLM_NAPI_MODEL_CORE_H

#include <edgellm/edgellm.h>

#include <condition_variable>
#include <mutex>

namespace edgellm_napi {

class ModelCore {
 public:
  explicit ModelCore(edgellm_service* service) : service_(service) {}
  ~ModelCore() { destroy_now(); }
  ModelCore(const ModelCore&) = delete;
  ModelCore& operator=(const ModelCore&) = delete;

  // The live service; nullptr once release (or teardown) began: every use then fails with
  // SHUT_DOWN. JS thread.
  edgellm_service* service() const { return service_; }

  // Hands the service to the caller to destroy off the JS thread (nullptr: already released).
  // The caller must call end_release() once edgellm_service_destroy returned. JS thread.
  edgellm_service* begin_release();
  // Any thread: the destroy that begin_release() started has returned.
  void end_release();

  // Destroys the service on this thread, or waits for a release in progress to finish. Blocks:
  // for finalizers and env teardown only. JS thread.
  void destroy_now();

 private:
  edgellm_service* service_;  // written on the JS thread only
  std::mutex mu_;
  std::condition_variable released_cv_;
  bool releasing_ = false;  // guarded by mu_: a worker thread is destroying the service
};

}  // namespace edgellm_napi

#endif  // EDGELLM_NAPI_MODEL_CORE_H
