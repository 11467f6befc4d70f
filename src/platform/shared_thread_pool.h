// One thread pool for every Context (and the load-time repacking) of a process: N contexts or a
// reloaded model must not each start their own workers on the same few big cores, where they
// would only preempt one another. Contexts take the pool by shared_ptr, so it lives as long as
// its last user.
#pragma once

#include <memory>

#include "platform/thread_pool.h"

namespace edgellm {

// The process-wide pool with at least `n_threads` threads (pinned to the big cores when `pinned`;
// pinned and unpinned pools are kept apart). When the current pool is smaller a larger one
// replaces it for later callers; earlier callers keep theirs until they release it.
// Thread-safe. parallel_for calls from different threads on one pool are serialised by the pool.
std::shared_ptr<ThreadPool> shared_thread_pool(int n_threads, bool pinned = false);

}  // namespace edgellm
