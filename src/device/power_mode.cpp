#include "device/power_mode.h"

#include <algorithm>

#include "core/error.h"
#include "engine/context.h"

namespace edgellm {

const char* power_mode_name(PowerMode mode) {
  switch (mode) {
    case PowerMode::kPerformance: return "performance";
    case PowerMode::kBalanced: return "balanced";
    case PowerMode::kEfficiency: return "efficiency";
  }
  return "?";
}

PowerMode parse_power_mode(const std::string& text) {
  if (text == "performance") return PowerMode::kPerformance;
  if (text == "balanced") return PowerMode::kBalanced;
  if (text == "efficiency") return PowerMode::kEfficiency;
  throw Error(ErrorCode::kInvalidArgument, "power mode '" + text + "' is not one of performance, balanced, efficiency");
}

ThreadPlan plan_threads(const DeviceProfile& device, PowerMode mode) {
  ThreadPlan t;
  t.prefill = device.fast_cores(4);
  // The fast cores are every cluster but the slowest (one cluster: all of them), as fast_cores()
  // counts them; the efficiency cores are the slowest cluster when there are several.
  std::vector<int> fast_cpus, efficiency_cpus;
  const size_t n = device.clusters.size();
  for (size_t i = 0; i < n; ++i) {
    const auto& ids = device.clusters[i].cpu_ids;
    auto& to = (n > 1 && i == n - 1) ? efficiency_cpus : fast_cpus;
    to.insert(to.end(), ids.begin(), ids.end());
  }
  std::sort(fast_cpus.begin(), fast_cpus.end());
  std::sort(efficiency_cpus.begin(), efficiency_cpus.end());
  t.prefill_placement.cpus = fast_cpus;
  t.decode_placement.cpus = fast_cpus;
  switch (mode) {
    case PowerMode::kPerformance:
      t.decode = t.prefill;
      t.prefill_placement.nice = t.decode_placement.nice = kPerformanceNice;
      break;
    case PowerMode::kBalanced:
      // About half the fast cores already saturate a phone's memory bus in decode; the rest
      // only add heat.
      t.decode = std::max(1, (t.prefill + 1) / 2);
      t.prefill_placement.nice = t.decode_placement.nice = 0;
      break;
    case PowerMode::kEfficiency:
      if (device.efficiency_cores() > 0) {
        t.decode = std::min(4, device.efficiency_cores());
        t.decode_on_efficiency_cores = true;
        t.decode_placement.cpus = efficiency_cpus;
      } else {
        t.decode = std::max(1, t.prefill / 2);
      }
      t.prefill_placement.nice = 0;
      t.decode_placement.nice = kEfficiencyDecodeNice;
      break;
  }
  return t;
}

void apply_thread_plan(const ThreadPlan& plan, ContextParams& params) {
  if (params.n_threads == 0) params.n_threads = plan.decode;
  if (params.n_threads_batch == 0) params.n_threads_batch = plan.prefill;
  params.placement = plan.decode_placement;
  params.placement_batch = plan.prefill_placement;
}

}  // namespace edgellm
