// Device pressure as Linux reports it, turned into the ladder's levels. On a phone the host app
// feeds the levels it gets from the platform (memory-level and thermal callbacks, power-save
// mode) through the API; on Linux (and where HarmonyOS exposes the same files) these readings
// are combined with them (the higher level wins). Every reader tolerates a missing or
// unreadable file (that source then says nothing).
//
//   /proc/pressure/memory                "some avg10=S ..." / "full avg10=F ...": % of time stalled
//   <cgroup>/memory.events               high / max / oom / oom_kill counters (deltas matter)
//   /sys/class/thermal/thermal_zone*/temp  millidegrees C; the hottest zone counts
#pragma once

#include <cstdint>
#include <string>

#include "runtime/degradation_ladder.h"

namespace edgellm {

struct LinuxPressure {
  bool psi = false;
  double some_avg10 = 0, full_avg10 = 0;
  bool memory_events = false;
  uint64_t high = 0, max = 0, oom = 0, oom_kill = 0;
  bool thermal = false;
  double max_temp_c = 0;
};

// Reads the files under the given roots ("/proc", "/sys/fs/cgroup", "/sys/class/thermal" on a
// real system; tests pass a folder of fake files). Never throws.
LinuxPressure read_linux_pressure(const std::string& proc_root = "/proc",
                                  const std::string& cgroup_root = "/sys/fs/cgroup",
                                  const std::string& thermal_root = "/sys/class/thermal");

// Levels from a reading and the previous one (memory.events counters are cumulative):
//   memory: full avg10 >= 10 % or a new oom / oom_kill -> 3; some avg10 >= 30 % or a new "max"
//           event -> 2; some avg10 >= 10 % or a new "high" event -> 1
//   thermal: >= 65 C -> 3, >= 55 C -> 2, >= 45 C -> 1 (the hottest zone)
PressureSignals signals_from_linux(const LinuxPressure& now, const LinuxPressure& before);

}  // namespace edgellm
