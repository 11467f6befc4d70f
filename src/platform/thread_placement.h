// Where and at which priority the threads of one phase of the forward pass run. Prefill is
// compute-bound and wants the big cores; decode is memory-bound and, in efficiency mode, may run
// on the little cores at a lower priority (device/power_mode.h chooses; docs/device-fitness.md,
// "Power modes"). Only the raw Linux calls musl and bionic have are used: sched_setaffinity /
// sched_getaffinity on the calling thread (pid 0) and setpriority / getpriority on its thread id
// (on Linux a nice value belongs to a thread, not to the process) — no pthread_*_np.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace edgellm {

struct ThreadPlacement {
  std::vector<int> cpus;    // CPUs the phase's threads may run on (ascending); empty: leave as is
  std::optional<int> nice;  // nice value of the pool's worker threads (-20..19); nullopt: leave as is

  bool empty() const { return cpus.empty() && !nice; }
  bool operator==(const ThreadPlacement& o) const { return cpus == o.cpus && nice == o.nice; }
  bool operator!=(const ThreadPlacement& o) const { return !(*this == o); }
  std::string to_string() const;  // "cpus 4-7, nice 10", "cpus unchanged, nice unchanged"
};

// What applying a placement to one thread did: 0 or the errno of the failed call.
struct PlacementResult {
  int affinity_errno = 0;
  int nice_errno = 0;
};

// Applies `p` to the calling thread: its CPU set when p.cpus is not empty, its nice value when
// p.nice is set and `with_nice`. Never throws. Raising the priority (a lower nice than now)
// without CAP_SYS_NICE fails with EPERM / EACCES; lowering it is always permitted.
PlacementResult apply_placement_to_current_thread(const ThreadPlacement& p, bool with_nice);

// The calling thread's CPU set (ascending) and nice value, read back from the kernel (tests,
// reports). Empty / 0 where the platform has no such call.
std::vector<int> current_thread_cpus();
int current_thread_nice();

// Counts of what applying placements achieved on a pool's threads, with the first failure as a
// one-line note (a priority the system refused is reported here, never thrown). Thread-safe.
class PlacementLog {
 public:
  void record(const ThreadPlacement& p, const PlacementResult& r, bool with_nice);

  struct Snapshot {
    uint64_t affinity_applied = 0, affinity_failed = 0;
    uint64_t nice_applied = 0, nice_denied = 0;
    std::string note;  // "" when nothing failed
  };
  Snapshot snapshot() const;

 private:
  std::atomic<uint64_t> affinity_applied_{0}, affinity_failed_{0}, nice_applied_{0}, nice_denied_{0};
  mutable std::mutex note_mutex_;
  std::string note_;
};

}  // namespace edgellm
