#include "platform/thread_pool.h"

#include <algorithm>

#if defined(__linux__)
#include <sched.h>
#endif

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif

namespace edgellm {

namespace {

// Set while a thread executes tasks of some pool: a nested parallel_for then runs inline instead
// of deadlocking on a pool whose threads are all busy.
thread_local bool t_inside_task = false;

// The placement of the jobs this thread starts (ScopedThreadPlacement), and the one it last
// applied to itself as a job's caller.
thread_local const ThreadPlacement* t_scope_placement = nullptr;
thread_local std::vector<int> t_caller_cpus;  // empty: none applied yet

// Spin step: a pause instruction, and every kYieldEvery steps a sched_yield so that on an
// oversubscribed machine (more runnable threads than cores) the thread we wait for gets the core.
constexpr int kYieldEvery = 64;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(_M_X64)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

constexpr int kStateCountBits = 16;
constexpr uint64_t kStateCountMask = (uint64_t{1} << kStateCountBits) - 1;

void pin_current_thread(int cpu) {
#if defined(__linux__)
  if (cpu < 0 || cpu >= CPU_SETSIZE) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  // Failure (cpu offline, restricted cgroup) only costs performance: ignore it.
  (void)sched_setaffinity(0, sizeof set, &set);
#else
  (void)cpu;
#endif
}

}  // namespace

ScopedThreadPlacement::ScopedThreadPlacement(const ThreadPlacement* placement) : previous_(t_scope_placement) {
  t_scope_placement = placement;
}
ScopedThreadPlacement::~ScopedThreadPlacement() { t_scope_placement = previous_; }

ThreadPool::ThreadPool(int n_threads, const ThreadPoolOptions& options) : options_(options) {
  n_threads = std::clamp(n_threads, 1, static_cast<int>(kStateCountMask));
  workers_.reserve(static_cast<size_t>(n_threads - 1));
  for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this, i] { worker_main(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(wake_mutex_);
    stop_.store(true, std::memory_order_release);
  }
  wake_cv_.notify_all();
  for (auto& w : workers_) {
    if (w.joinable()) w.join();
  }
}

void ThreadPool::run_tasks(int thread) {
  const bool was_inside = t_inside_task;
  t_inside_task = true;
  for (;;) {
    if (failed_.load(std::memory_order_relaxed)) break;
    const int64_t task = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (task >= n_tasks_) break;
    try {
      (*fn_)(task, thread);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex_);
      if (!error_) error_ = std::current_exception();
      failed_.store(true, std::memory_order_relaxed);
    }
  }
  t_inside_task = was_inside;
}

void ThreadPool::worker_main(int index) {
  if (!options_.cpus.empty()) pin_current_thread(options_.cpus[static_cast<size_t>(index) % options_.cpus.size()]);
  uint64_t seen_generation = 0;
  ThreadPlacement applied;  // the last placement this worker applied to itself
  bool has_applied = false;
  for (;;) {
    uint64_t state = state_.load(std::memory_order_acquire);
    // Spin first: in a forward pass the next job arrives within microseconds.
    for (int i = 0; i < options_.spin_iterations && (state >> kStateCountBits) == seen_generation &&
                    !stop_.load(std::memory_order_relaxed);
         ++i) {
      if (i % kYieldEvery == kYieldEvery - 1) {
        std::this_thread::yield();
      } else {
        cpu_relax();
      }
      state = state_.load(std::memory_order_acquire);
    }
    if ((state >> kStateCountBits) == seen_generation && !stop_.load(std::memory_order_acquire)) {
      std::unique_lock<std::mutex> lock(wake_mutex_);
      sleepers_.fetch_add(1);
      wake_cv_.wait(lock, [&] {
        return stop_.load(std::memory_order_acquire) ||
               (state_.load(std::memory_order_acquire) >> kStateCountBits) != seen_generation;
      });
      sleepers_.fetch_sub(1);
      state = state_.load(std::memory_order_acquire);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen_generation = state >> kStateCountBits;
    const int active = static_cast<int>(state & kStateCountMask);
    if (index >= active) continue;  // not part of this job, or the job is already closed

    // Join: announce ourselves, then check the job is still open. The caller closes the job
    // (active count 0) before it waits for in_flight_ to drain; with both sides sequentially
    // consistent, either the caller sees us and waits, or we see the closed job and leave.
    in_flight_.fetch_add(1);
    if (state_.load() == state) {
      if (placement_ != nullptr && (!has_applied || applied != *placement_)) {
        placement_log_.record(*placement_, apply_placement_to_current_thread(*placement_, true), true);
        applied = *placement_;
        has_applied = true;
      }
      run_tasks(index);
    }
    if (in_flight_.fetch_sub(1) == 1) {
      std::lock_guard<std::mutex> lock(done_mutex_);
      done_cv_.notify_one();
    }
  }
}

void ThreadPool::run(int64_t n_tasks, TaskRef fn, int n_threads) {
  if (n_tasks <= 0) return;
  if (n_threads <= 0 || n_threads > max_threads()) n_threads = max_threads();
  n_threads = static_cast<int>(std::min<int64_t>(n_threads, n_tasks));
  if (!t_inside_task) {
    int seen = max_job_threads_.load(std::memory_order_relaxed);
    while (n_threads > seen && !max_job_threads_.compare_exchange_weak(seen, n_threads)) {
    }
    // The caller works as thread 0: it takes the CPU set (a comparison of a few ints per job;
    // the syscall only when the phase changed).
    const ThreadPlacement* p = t_scope_placement;
    if (p != nullptr && !p->cpus.empty() && t_caller_cpus != p->cpus) {
      placement_log_.record(*p, apply_placement_to_current_thread(*p, false), false);
      t_caller_cpus = p->cpus;
    }
  }
  if (n_threads == 1 || t_inside_task) {
    // Serial path: nested calls and single-thread jobs never touch the workers.
    const bool was_inside = t_inside_task;
    t_inside_task = true;
    try {
      for (int64_t t = 0; t < n_tasks; ++t) fn(t, 0);
    } catch (...) {
      t_inside_task = was_inside;
      throw;
    }
    t_inside_task = was_inside;
    return;
  }

  std::lock_guard<std::mutex> call_lock(call_mutex_);
  fn_ = &fn;
  placement_ = t_scope_placement;
  n_tasks_ = n_tasks;
  next_task_.store(0, std::memory_order_relaxed);
  failed_.store(false, std::memory_order_relaxed);
  error_ = nullptr;
  const uint64_t generation = (state_.load(std::memory_order_relaxed) >> kStateCountBits) + 1;
  {
    // Publishing under the mutex closes the window where a worker checked the predicate and is
    // about to sleep: it either sees the new generation or is counted in sleepers_.
    std::lock_guard<std::mutex> lock(wake_mutex_);
    state_.store(generation << kStateCountBits | static_cast<uint64_t>(n_threads));
  }
  if (sleepers_.load() > 0) wake_cv_.notify_all();

  run_tasks(0);

  // Close the job: workers that have not joined yet (descheduled on a busy machine) stay out,
  // so we only wait for the ones actually running tasks.
  state_.store(generation << kStateCountBits);
  for (int i = 0; i < options_.spin_iterations && in_flight_.load() != 0; ++i) {
    if (i % kYieldEvery == kYieldEvery - 1) {
      std::this_thread::yield();
    } else {
      cpu_relax();
    }
  }
  if (in_flight_.load() != 0) {
    std::unique_lock<std::mutex> lock(done_mutex_);
    done_cv_.wait(lock, [&] { return in_flight_.load() == 0; });
  }
  fn_ = nullptr;
  placement_ = nullptr;
  if (error_) {
    std::exception_ptr e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
}

}  // namespace edgellm
