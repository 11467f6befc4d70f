#include "platform/shared_thread_pool.h"

#include <algorithm>
#include <mutex>

#include "platform/cpu_topology.h"

namespace edgellm {

std::shared_ptr<ThreadPool> shared_thread_pool(int n_threads, bool pinned) {
  static std::mutex mutex;
  static std::weak_ptr<ThreadPool> pools[2];  // [unpinned, pinned]
  n_threads = std::max(1, n_threads);
  std::lock_guard<std::mutex> lock(mutex);
  std::weak_ptr<ThreadPool>& slot = pools[pinned ? 1 : 0];
  std::shared_ptr<ThreadPool> pool = slot.lock();
  if (pool && pool->max_threads() >= n_threads) return pool;
  ThreadPoolOptions options;
  if (pinned) options.cpus = detect_cpu_topology().fast_cores;
  pool = std::make_shared<ThreadPool>(n_threads, options);
  slot = pool;
  return pool;
}

}  // namespace edgellm
