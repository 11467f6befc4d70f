// ModelCore: the one owner of an edgellm_runtime. Shared (std::shared_ptr) by the JS Model object
// and by every operation in flight on it (a generation, a warm-up, a worker-thread call, a
// release), so the runtime lives while anything can still reach it and is destroyed exactly once:
//   release()            begin_release() on the JS thread, release_pending() on a libuv worker
//                        thread (edgellm_runtime_destroy);
//   last reference gone  ~ModelCore on the JS thread (the Model's finalizer, or an operation's
//                        end): the runtime is idle then (no operation holds it), so destroying
//                        it only joins its idle threads;
//   env teardown         destroy_now() from an operation's cleanup hook (async_op.h), before
//                        Node-API tears down that operation's thread-safe function.
// Blocking C calls on worker threads (swap, session files, ...) hold a Use: the destroy waits for
// the Uses taken before release() hid the runtime, so no call runs on a destroyed runtime.
// After the destroy, the router transports (router.h) are shut down: their pending cloud calls
// are completed (freed) and their thread-safe functions released, so a JS transport whose promise
// never settles leaks nothing and holds nothing up.
// The shared_ptr itself is copied and dropped on the JS thread only.
#ifndef EDGELLM_NAPI_MODEL_CORE_H
#define EDGELLM_NAPI_MODEL_CORE_H

#include <edgellm/edgellm.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

namespace edgellm_napi {

class RouterTransport;

class ModelCore {
 public:
  explicit ModelCore(edgellm_runtime* runtime) : runtime_(runtime) {}
  ~ModelCore() { destroy_now(); }
  ModelCore(const ModelCore&) = delete;
  ModelCore& operator=(const ModelCore&) = delete;

  // The live runtime; nullptr once release (or teardown) began: every use then fails with
  // SHUT_DOWN. JS thread.
  edgellm_runtime* runtime() const { return runtime_; }

  // A worker thread's hold on the runtime: taken on the JS thread (runtime() is live), dropped
  // on any thread. A destroy waits until every Use is dropped.
  class Use {
   public:
    Use() = default;
    Use(Use&& other) noexcept : core_(other.core_), runtime_(other.runtime_) {
      other.core_ = nullptr;
      other.runtime_ = nullptr;
    }
    Use& operator=(Use&& other) noexcept {
      if (this != &other) {
        reset();
        core_ = other.core_;
        runtime_ = other.runtime_;
        other.core_ = nullptr;
        other.runtime_ = nullptr;
      }
      return *this;
    }
    Use(const Use&) = delete;
    ~Use() { reset(); }
    edgellm_runtime* runtime() const { return runtime_; }
    void reset();

   private:
    friend class ModelCore;
    Use(ModelCore* core, edgellm_runtime* runtime) : core_(core), runtime_(runtime) {}
    ModelCore* core_ = nullptr;
    edgellm_runtime* runtime_ = nullptr;
  };
  // JS thread. An empty Use (runtime() nullptr) once released.
  Use use();

  // A router transport the runtime may call until it is destroyed. JS thread.
  void add_transport(std::shared_ptr<RouterTransport> transport);

  // release(): hides the runtime from JS at once (runtime() is nullptr from now on) and leaves
  // it pending for release_pending(). False when it was released already. JS thread.
  bool begin_release();
  // Destroys the pending runtime, unless destroy_now() took it first. Blocks; any thread (the
  // release's libuv worker thread).
  void release_pending();

  // Destroys the runtime on this thread, whether live or pending, or waits for a destroy already
  // running on another thread. Blocks: for finalizers and env teardown only (a queued release
  // that never runs, e.g. in a terminated worker thread, cannot make it wait forever). JS thread.
  void destroy_now();

 private:
  // Hands over the pending runtime (nullptr if none) and marks a destroy in progress. Locked.
  edgellm_runtime* claim_pending();
  // Waits for the Uses, destroys, shuts the transports down, wakes destroy_now's waiters.
  void destroy(edgellm_runtime* runtime);

  edgellm_runtime* runtime_;  // the live runtime; JS thread only
  std::mutex mu_;
  std::condition_variable cv_;
  edgellm_runtime* pending_ = nullptr;  // guarded by mu_: released, not yet destroyed
  bool destroying_ = false;             // guarded by mu_: a thread is destroying it
  int uses_ = 0;                        // guarded by mu_: Uses alive
  std::vector<std::shared_ptr<RouterTransport>> transports_;  // guarded by mu_
};

}  // namespace edgellm_napi

#endif  // EDGELLM_NAPI_MODEL_CORE_H
