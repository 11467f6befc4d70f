// The server's worker threads: a fixed number of threads and a short waiting line, so a burst
// is told "busy" (try_submit false -> 503) instead of waiting without bound. The endpoints run
// here (body parsing, tokenizing, waiting for a generation's tokens); the I/O thread never
// blocks on them.
//
// Thread-safety: try_submit from any thread; shutdown from any thread but a worker.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace edgellm::server {

class WorkerPool {
 public:
  WorkerPool(size_t threads, size_t max_waiting);
  ~WorkerPool();  // shutdown()
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Runs `task` on a worker: at once when one is idle, else after the tasks already waiting.
  // False (task dropped) when every thread is busy and max_waiting tasks already wait, or after
  // shutdown(). A task must not throw.
  bool try_submit(std::function<void()> task);
  // Refuses new tasks, lets the running and waiting ones finish, joins the threads. Idempotent.
  void shutdown();

 private:
  void run();

  const size_t max_waiting_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
  size_t idle_ = 0;  // (mutex_) threads not running a task, started or not
  bool stopping_ = false;
  std::mutex join_mutex_;             // held by shutdown()
  std::vector<std::thread> threads_;  // written only by the constructor and shutdown()
};

}  // namespace edgellm::server
