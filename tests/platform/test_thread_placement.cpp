// platform/thread_placement.h and the pool's use of it: a worker that takes part in a job started
// under a placement runs on its CPUs at its nice value, read back from the kernel inside the task
// (sched_getaffinity, getpriority on the thread id); the caller takes the CPUs but keeps its
// priority; a priority the system refuses (an unprivileged thread asking for a lower nice) is
// counted and noted, never fatal; the per-job thread count is what the caller asked for.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "platform/thread_pool.h"

namespace edgellm {
namespace {

struct Seen {
  int thread;
  std::vector<int> cpus;
  int nice;
};

// Runs a job long enough that every worker joins, each task reading its thread's placement.
std::vector<Seen> observe(ThreadPool& pool, int n_threads) {
  std::mutex m;
  std::vector<Seen> seen;
  pool.parallel_for(
      8 * n_threads,
      [&](int64_t, int thread) {
        Seen s{thread, current_thread_cpus(), current_thread_nice()};
        {
          std::lock_guard<std::mutex> lock(m);
          seen.push_back(s);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(3));
      },
      n_threads);
  return seen;
}

// Keeps the test process's main thread where it was.
struct RestoreCallerCpus {
  std::vector<int> cpus = current_thread_cpus();
  ~RestoreCallerCpus() { apply_placement_to_current_thread(ThreadPlacement{cpus, std::nullopt}, false); }
};

TEST(ThreadPlacement, WorkersTakeThePhaseCpusAndNiceTheCallerOnlyTheCpus) {
  RestoreCallerCpus restore;
  const std::vector<int> all = restore.cpus;
  ASSERT_FALSE(all.empty());
  const int caller_nice = current_thread_nice();
  ThreadPool pool(3);

  // Phase A: one CPU, nice +3 (lowering the priority is always permitted).
  const ThreadPlacement a{{all.front()}, caller_nice + 3};
  {
    const ScopedThreadPlacement scope(&a);
    for (const Seen& s : observe(pool, 3)) {
      EXPECT_EQ(s.cpus, a.cpus) << "thread " << s.thread;
      EXPECT_EQ(s.nice, s.thread == 0 ? caller_nice : caller_nice + 3) << "thread " << s.thread;
    }
  }
  // Phase B: every CPU, nice +5; worker 2 is left out of a 2-thread job and keeps phase A's.
  const ThreadPlacement b{all, caller_nice + 5};
  {
    const ScopedThreadPlacement scope(&b);
    for (const Seen& s : observe(pool, 2)) {
      EXPECT_LT(s.thread, 2);
      EXPECT_EQ(s.cpus, all) << "thread " << s.thread;
      EXPECT_EQ(s.nice, s.thread == 0 ? caller_nice : caller_nice + 5) << "thread " << s.thread;
    }
  }
  // No placement: nothing is changed, every thread stays as the last placement left it.
  for (const Seen& s : observe(pool, 3)) {
    const int expect = s.thread == 0 ? caller_nice : s.thread == 1 ? caller_nice + 5 : caller_nice + 3;
    EXPECT_EQ(s.nice, expect) << "thread " << s.thread;
  }
  const auto log = pool.placement_log();
  EXPECT_EQ(log.nice_denied, 0u);
  EXPECT_EQ(log.affinity_failed, 0u);
  EXPECT_GE(log.nice_applied, 3u);  // workers 1, 2 in A; worker 1 in B
  EXPECT_TRUE(log.note.empty()) << log.note;
}

TEST(ThreadPlacement, RefusedPriorityIsNotedAndTheJobStillRuns) {
  // In a child without CAP_SYS_NICE (root drops to nobody), ask for a nice below the current one.
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(77);
    const int before = current_thread_nice();
    ThreadPool pool(2);
    const ThreadPlacement up{{}, before - 5};
    const ScopedThreadPlacement scope(&up);
    int bad = 0;
    for (const Seen& s : observe(pool, 2)) bad += s.nice != before ? 1 : 0;
    const auto log = pool.placement_log();
    if (bad != 0) _exit(10);
    if (log.nice_denied < 1 || log.nice_applied != 0) _exit(11);
    if (log.note.find("not permitted") == std::string::npos) _exit(12);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << "NOT CHECKED ON THIS HOST: cannot drop privileges here";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: a worker's nice changed, 11: not counted as denied, 12: no note";
}

TEST(ThreadPlacement, MaxJobThreadsIsWhatTheCallerAskedFor) {
  ThreadPool pool(3);
  pool.parallel_for(100, [](int64_t, int) {}, 1);
  EXPECT_EQ(pool.max_job_threads(), 1);
  pool.parallel_for(1, [](int64_t, int) {}, 3);  // one task: one thread
  EXPECT_EQ(pool.max_job_threads(), 1);
  pool.parallel_for(100, [](int64_t, int) {}, 2);
  EXPECT_EQ(pool.max_job_threads(), 2);
  pool.reset_max_job_threads();
  pool.parallel_for(100, [](int64_t, int) {}, 0);
  EXPECT_EQ(pool.max_job_threads(), 3);
}

TEST(ThreadPlacement, Text) {
  EXPECT_EQ((ThreadPlacement{{0, 1, 2, 3, 6}, 10}).to_string(), "cpus 0-3,6, nice 10");
  EXPECT_EQ(ThreadPlacement{}.to_string(), "cpus unchanged, nice unchanged");
  EXPECT_TRUE(ThreadPlacement{}.empty());
}

}  // namespace
}  // namespace edgellm
