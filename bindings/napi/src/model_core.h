// ModelCore: the one owner of an edgellm_service. Shared (std::shared_ptr) by the JS Model object
// and by every operation in flight on it (a generation, a warm-up, a release), so the service
// lives while anything can still reach it and is destroyed exactly once:
//   release()            begin_release() on the JS thread, release_pending() on a libuv worker
//                        thread (edgellm_service_destroy);
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

  // release(): hides the service from JS at once (service() is nullptr from now on) and leaves
  // it pending for release_pending(). False when it was released already. JS thread.
  bool begin_release();
  // Destroys the pending service, unless destroy_now() took it first. Blocks; any thread (the
  // release's libuv worker thread).
  void release_pending();

  // Destroys the service on this thread, whether live or pending, or waits for a destroy already
  // running on another thread. Blocks: for finalizers and env teardown only (a queued release
  // that never runs, e.g. in a terminated worker thread, cannot make it wait forever). JS thread.
  void destroy_now();

 private:
  // Hands over the pending service (nullptr if none) and marks a destroy in progress. Locked.
  edgellm_service* claim_pending();
  void destroyed();

  edgellm_service* service_;  // the live service; JS thread only
  std::mutex mu_;
  std::condition_variable destroyed_cv_;
  edgellm_service* pending_ = nullptr;  // guarded by mu_: released, not yet destroyed
  bool destroying_ = false;             // guarded by mu_: a thread is destroying it
};

}  // namespace edgellm_napi

#endif  // EDGELLM_NAPI_MODEL_CORE_H
