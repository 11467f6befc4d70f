// A persistent pool of worker threads for the forward pass. The calling thread takes part as
// thread 0, so a pool of N threads owns N-1 workers. Work is handed out one task at a time from
// an atomic counter, so a faster (big) core simply takes more tasks than a slower one.
//
// Waiting: workers spin for a bounded number of iterations after each job (the next matmul of a
// forward pass usually follows within microseconds), then sleep on a condition variable.
//
// Placement (platform/thread_placement.h): a job started inside a ScopedThreadPlacement runs on
// that placement's CPUs and, for the workers, its nice value. Each thread applies a placement
// when it takes part in a job whose placement differs from the last one it applied (a prefill
// and a decode phase alternate a few times per request, so this is a syscall per phase change,
// not per job); the caller takes the CPU set but never the nice value (it is the app's or the
// service's own thread, and an unprivileged thread cannot get back a priority it gave up). A
// job without placement leaves every thread as the last placement left it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "platform/thread_placement.h"

namespace edgellm {

// Jobs this thread starts while the scope lives run with `placement` (null: none); nested scopes
// restore the outer one. The placement must outlive the scope.
class ScopedThreadPlacement {
 public:
  explicit ScopedThreadPlacement(const ThreadPlacement* placement);
  ~ScopedThreadPlacement();
  ScopedThreadPlacement(const ScopedThreadPlacement&) = delete;
  ScopedThreadPlacement& operator=(const ScopedThreadPlacement&) = delete;

 private:
  const ThreadPlacement* previous_;
};

struct ThreadPoolOptions {
  // Pin thread i to cpus[i % cpus.size()] with sched_setaffinity (empty = no pinning). Thread 0
  // is the caller and is never pinned by the pool.
  std::vector<int> cpus;
  // Iterations a waiting thread spins before it sleeps.
  int spin_iterations = 1 << 12;
};

// A non-owning reference to a callable `void(int64_t task, int thread)`: unlike std::function it
// never allocates, so a forward pass can start hundreds of parallel regions per token for free.
class TaskRef {
 public:
  template <typename Fn>
  TaskRef(Fn& fn)  // NOLINT(google-explicit-constructor): used implicitly by parallel_for
      : obj_(const_cast<void*>(static_cast<const void*>(&fn))), call_([](void* o, int64_t task, int thread) { (*static_cast<Fn*>(o))(task, thread); }) {}
  void operator()(int64_t task, int thread) const { call_(obj_, task, thread); }

 private:
  void* obj_;
  void (*call_)(void*, int64_t, int);
};

class ThreadPool {
 public:

  // n_threads >= 1 (values < 1 are treated as 1).
  explicit ThreadPool(int n_threads, const ThreadPoolOptions& options = {});
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int max_threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn(task, thread) exactly once for every task in [0, n_tasks), on up to n_threads threads
  // (0 or more than max_threads() = max_threads()); `thread` is in [0, n_threads). Returns when
  // every task is done. The first exception thrown by a task is rethrown here (remaining tasks
  // are skipped). A call made from inside a task runs serially on the calling thread; calls from
  // different outside threads are serialised.
  template <typename Fn>
  void parallel_for(int64_t n_tasks, Fn&& fn, int n_threads = 0) {
    run(n_tasks, TaskRef(fn), n_threads);
  }

  // What applying placements did on this pool's threads (counts and the first failure's note).
  PlacementLog::Snapshot placement_log() const { return placement_log_.snapshot(); }
  // The most threads any job asked for (after clamping to max_threads() and n_tasks) since the
  // last reset: the per-phase thread counts a caller can check. Nested (inline) calls don't count.
  int max_job_threads() const { return max_job_threads_.load(); }
  void reset_max_job_threads() { max_job_threads_.store(0); }

 private:
  void run(int64_t n_tasks, TaskRef fn, int n_threads);
  void worker_main(int index);
  void run_tasks(int thread);

  ThreadPoolOptions options_;
  std::vector<std::thread> workers_;
  std::mutex call_mutex_;  // one parallel_for at a time

  // Job state, written by the caller before `state_` is published, read by participating workers.
  const TaskRef* fn_ = nullptr;
  const ThreadPlacement* placement_ = nullptr;  // the starter's scope; null: none
  int64_t n_tasks_ = 0;
  std::atomic<int64_t> next_task_{0};
  std::atomic<bool> failed_{false};
  std::exception_ptr error_;
  std::mutex error_mutex_;

  // (generation << 16) | active thread count: one atomic so an idle worker learns whether it
  // takes part without reading any other job field. The caller sets the count to 0 when its
  // own share is done ("closed"): late workers then skip the job.
  std::atomic<uint64_t> state_{0};
  std::atomic<int> in_flight_{0};  // workers that joined the current job and have not left
  std::atomic<int> sleepers_{0};   // workers blocked on wake_cv_
  std::atomic<bool> stop_{false};
  std::atomic<int> max_job_threads_{0};
  PlacementLog placement_log_;

  std::mutex wake_mutex_;
  std::condition_variable wake_cv_;
  std::mutex done_mutex_;
  std::condition_variable done_cv_;
};

}  // namespace edgellm
