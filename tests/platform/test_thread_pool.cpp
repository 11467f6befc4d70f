// ThreadPool: every task runs exactly once, for any thread count (including more threads than
// cores and per-call counts), nested calls, exceptions, and reuse across many jobs.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "platform/thread_pool.h"

namespace edgellm {
namespace {

void expect_each_once(ThreadPool& pool, int64_t n_tasks, int n_threads) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(n_tasks));
  std::atomic<int> bad_thread{0};
  pool.parallel_for(
      n_tasks,
      [&](int64_t t, int thread) {
        hits[static_cast<size_t>(t)].fetch_add(1);
        const int limit = n_threads <= 0 ? pool.max_threads() : n_threads;
        if (thread < 0 || thread >= limit) bad_thread.fetch_add(1);
      },
      n_threads);
  for (int64_t t = 0; t < n_tasks; ++t) ASSERT_EQ(hits[static_cast<size_t>(t)].load(), 1) << "task " << t;
  EXPECT_EQ(bad_thread.load(), 0);
}

TEST(ThreadPool, EveryTaskOnceForManyShapes) {
  ThreadPool pool(4);
  EXPECT_EQ(pool.max_threads(), 4);
  for (int64_t n : {0, 1, 2, 3, 7, 64, 1000}) {
    for (int threads : {0, 1, 2, 3, 4, 9}) expect_each_once(pool, n, threads);
  }
}

TEST(ThreadPool, MoreThreadsThanCores) {
  const int n = static_cast<int>(std::thread::hardware_concurrency()) * 4 + 3;
  ThreadPool pool(n);
  for (int rep = 0; rep < 20; ++rep) expect_each_once(pool, 5000, 0);
}

TEST(ThreadPool, ManyBackToBackJobsWithVaryingThreadCounts) {
  // Stresses the generation handshake: idle workers must never run or miss a job.
  ThreadPool pool(3);
  std::atomic<int64_t> sum{0};
  for (int job = 0; job < 3000; ++job) {
    pool.parallel_for(17, [&](int64_t t, int) { sum.fetch_add(t + 1); }, 1 + job % 3);
  }
  EXPECT_EQ(sum.load(), 3000 * (17 * 18 / 2));
}

TEST(ThreadPool, WorkersSleepAndWakeUp) {
  ThreadPoolOptions opt;
  opt.spin_iterations = 1;  // go to the condition variable at once
  ThreadPool pool(3, opt);
  for (int rep = 0; rep < 5; ++rep) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    expect_each_once(pool, 100, 0);
  }
}

TEST(ThreadPool, WorkersTakePartInLongJobs) {
  // The caller runs tasks too and closes the job when none are left, so a job only shows that the
  // workers join when a task outlasts their wake-up. The first task to start waits until a task
  // has run on another thread: with working workers that happens within microseconds (whichever
  // thread holds the first task, the others take the rest); a pool whose workers never join this
  // job leaves it waiting until the 30 s deadline and fails. No timing is assumed below that.
  ThreadPool pool(3);
  std::mutex mutex;
  std::condition_variable cv;
  int first = -1;          // the thread that took the first task
  bool other_ran = false;  // a task ran on another thread
  bool timed_out = false;
  std::vector<std::atomic<int>> by_thread(3);
  pool.parallel_for(60, [&](int64_t, int thread) {
    by_thread[static_cast<size_t>(thread)].fetch_add(1);
    std::unique_lock<std::mutex> lock(mutex);
    if (first < 0) {
      first = thread;
      timed_out = !cv.wait_for(lock, std::chrono::seconds(30), [&] { return other_ran; });
    } else if (thread != first) {
      other_ran = true;
      cv.notify_all();
    }
  });
  EXPECT_FALSE(timed_out) << "no worker joined while the first task waited 30 s";
  int used = 0;
  for (auto& c : by_thread) used += c.load() > 0 ? 1 : 0;
  EXPECT_GE(used, 2);
}

TEST(ThreadPool, NestedCallsRunInline) {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> hits(8 * 8);
  pool.parallel_for(8, [&](int64_t outer, int) {
    pool.parallel_for(8, [&](int64_t inner, int thread) {
      EXPECT_EQ(thread, 0);
      hits[static_cast<size_t>(outer * 8 + inner)].fetch_add(1);
    });
  });
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
}

TEST(ThreadPool, ExceptionsPropagateAndThePoolStaysUsable) {
  ThreadPool pool(3);
  EXPECT_THROW(pool.parallel_for(100,
                                 [&](int64_t t, int) {
                                   if (t == 42) throw std::runtime_error("task 42");
                                 }),
               std::runtime_error);
  expect_each_once(pool, 500, 0);
  EXPECT_THROW(pool.parallel_for(1, [](int64_t, int) { throw std::logic_error("serial"); }), std::logic_error);
}

TEST(ThreadPool, ConcurrentCallersAreSerialised) {
  ThreadPool pool(3);
  std::atomic<int64_t> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 3; ++c) {
    callers.emplace_back([&] {
      for (int i = 0; i < 200; ++i) pool.parallel_for(10, [&](int64_t, int) { total.fetch_add(1); });
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(total.load(), 3 * 200 * 10);
}

TEST(ThreadPool, PinningToACpuStillRunsEverything) {
  ThreadPoolOptions opt;
  opt.cpus = {0, 99999};  // an impossible cpu id is ignored, not fatal
  ThreadPool pool(3, opt);
  expect_each_once(pool, 300, 0);
}

}  // namespace
}  // namespace edgellm
