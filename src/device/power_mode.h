// Power modes: how many threads prefill and decode run on, on which cores and at which priority
// (docs/device-fitness.md, "Power modes"). Prefill is compute-bound: it runs on the fast cores.
// Decode reads every weight once per token and is memory-bound: fewer threads already read as
// fast, and in efficiency mode it moves to the efficiency cores at a lower priority to keep the
// device cool.
//
//   mode         prefill                         decode
//   performance  fast cores (<= 4), nice -5      same threads and cores, nice -5
//   balanced     fast cores (<= 4), nice 0       half the prefill threads on the fast cores, nice 0
//   efficiency   fast cores (<= 4), nice 0       the efficiency cores (<= 4), nice 10; without
//                                                efficiency cores half the prefill threads
//
// A nice value below the thread's current one (performance) needs CAP_SYS_NICE or RLIMIT_NICE:
// where it is refused the threads keep their priority and the refusal is reported
// (ThreadPool::placement_log, the service's metrics), never an error.
#pragma once

#include <string>

#include "device/device_profile.h"
#include "platform/thread_placement.h"

namespace edgellm {

struct ContextParams;

enum class PowerMode { kPerformance, kBalanced, kEfficiency };
const char* power_mode_name(PowerMode mode);
// "performance", "balanced", "efficiency"; Error(kInvalidArgument) otherwise.
PowerMode parse_power_mode(const std::string& text);

inline constexpr int kPerformanceNice = -5;
inline constexpr int kEfficiencyDecodeNice = 10;

struct ThreadPlan {
  int prefill = 1;
  int decode = 1;
  bool decode_on_efficiency_cores = false;
  // CPU ids from the profile's clusters (empty when the profile has none: a JSON tier) and the
  // nice value of each phase's worker threads.
  ThreadPlacement prefill_placement;
  ThreadPlacement decode_placement;
};
// Pure: depends only on the profile's clusters (fastest first) and the mode.
ThreadPlan plan_threads(const DeviceProfile& device, PowerMode mode);

// Puts a plan into context parameters: thread counts the caller left at 0 (explicit counts win)
// and both phases' placements.
void apply_thread_plan(const ThreadPlan& plan, ContextParams& params);

}  // namespace edgellm
