#include "server/worker_pool.h"

#include <utility>

namespace edgellm::server {

WorkerPool::WorkerPool(size_t threads, size_t max_waiting) : max_waiting_(max_waiting) {
  // Idle = not running a task, counted from the start: a thread that has not reached its first
  // wait yet is idle too (counting it only once it waits refused a second request at start-up
  // with 503 while a thread was still starting: HttpHardening.BusyWorkersAnswer503..., stop 45).
  idle_ = threads;
  threads_.reserve(threads);
  for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
}

WorkerPool::~WorkerPool() { shutdown(); }

bool WorkerPool::try_submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return false;
    // Tasks already waiting take the idle threads first.
    if (tasks_.size() >= idle_ + max_waiting_) return false;
    tasks_.push_back(std::move(task));
  }
  wake_.notify_one();
  return true;
}

void WorkerPool::shutdown() {
  std::lock_guard<std::mutex> join_lock(join_mutex_);  // a second caller waits for the first
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void WorkerPool::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
    if (tasks_.empty()) return;  // stopping, nothing left to run
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    --idle_;
    lock.unlock();
    task();
    task = nullptr;  // whatever it captured is released outside the lock
    lock.lock();
    ++idle_;
  }
}

}  // namespace edgellm::server
