// What a device offers one app: memory (total, available now, the per-app limit the system
// enforces), CPU clusters (big / mid / little by max frequency) and the SIMD level the kernels
// will use. Read from this machine (/proc/meminfo, cgroup v2 memory.max, cpufreq) or from a
// JSON profile for a device tier that is not this machine (docs/device-fitness.md):
//   {"name": "phone-8gb", "ram_total_mib": 8192, "ram_available_mib": 3600,
//    "app_limit_mib": 3072, "isa": "dotprod",
//    "clusters": [{"cores": 1, "max_mhz": 3130}, {"cores": 3, "max_mhz": 2540},
//                 {"cores": 4, "max_mhz": 2050}]}
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/json.h"

namespace edgellm {

struct CpuCluster {
  int cores = 0;
  int64_t max_khz = 0;  // 0: unknown
  std::vector<int> cpu_ids;  // this machine's CPU numbers (empty in a JSON profile)
};

struct DeviceProfile {
  std::string name;
  uint64_t ram_total_bytes = 0;
  uint64_t ram_available_bytes = 0;  // MemAvailable now (0: unknown)
  uint64_t app_limit_bytes = 0;      // what the system lets one app use (cgroup memory.max here); 0: none known
  std::vector<CpuCluster> clusters;  // fastest first
  std::string isa;                   // "avx512_vnni", "avx2", "scalar", "i8mm", "dotprod", "neon"

  // The bytes a plan may use: the smaller of the app limit and what is available, less
  // `headroom` (a fraction: what the app itself, the system's fluctuation and the allocator need).
  uint64_t budget_bytes(double headroom) const;
  int total_cores() const;
  // Cores of the fastest clusters, counted from the fastest, up to `cap` (4 by default: more
  // threads are not faster on phones, PRODUCT.md): the prefill / performance decode threads.
  int fast_cores(int cap = 4) const;
  // Cores of the slowest cluster (the efficiency cores); 0 when all clusters are alike.
  int efficiency_cores() const;

  Json to_json() const;
  // Validates every field (Error kInvalidArgument naming the field).
  static DeviceProfile from_json(const Json& j);
};

// This machine, now. Never throws (unknown values stay 0).
DeviceProfile detect_this_device();
// Built-in tiers: "phone-4gb", "phone-8gb", "phone-12gb", "phone-16gb" (typical per-app
// limits and a 1+3+4 cluster layout; docs/device-fitness.md says where the numbers come from).
std::vector<std::string> builtin_device_names();
// "this" (detect_this_device), a built-in name, or a path to a JSON profile. Throws
// Error(kInvalidArgument) for an unknown name, kIo / kInvalidFile for a bad file.
DeviceProfile load_device_profile(const std::string& name_or_path);

}  // namespace edgellm
