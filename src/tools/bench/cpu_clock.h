// CPU time of a clock (CLOCK_PROCESS_CPUTIME_ID: every thread of the process;
// CLOCK_THREAD_CPUTIME_ID: the calling thread) in seconds: the bench's rates per CPU-second,
// which other processes' load on the cores does not drag down the way it does wall time.
#pragma once

#include <time.h>

namespace edgellm::bench {

inline double cpu_seconds(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace edgellm::bench
