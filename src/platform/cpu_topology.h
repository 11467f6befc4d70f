// Which CPUs run the forward pass. On a big.LITTLE phone (cores grouped in clusters by
// cpuinfo_max_freq) the default is every core that is not in the slowest cluster: the little
// cores only slow a synchronised matmul down, while the mid cores add real throughput
// (1 prime + 3 mid + 4 little -> 4 threads; 2 + 6 -> 2; 4 + 4 -> 4; one cluster -> all).
// Decode and prefill use the same default (device/power_mode.h plans other splits).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace edgellm {

struct CpuTopology {
  std::vector<int> online;          // online CPU ids, ascending
  std::vector<int64_t> max_freq_khz;  // per entry of `online`; 0 when unknown
  std::vector<int> big_cores;       // ids with the highest max frequency (all online if unknown)
  std::vector<int> fast_cores;      // ids not in the slowest cluster (all online when there is one
                                    // cluster or the frequencies are unknown)
  int n_big() const { return static_cast<int>(big_cores.size()); }
  int n_fast() const { return static_cast<int>(fast_cores.size()); }
};

// Parses a cpulist such as "0-3,5,7-8" (the format of /sys/devices/system/cpu/online).
// Returns an empty vector for malformed text.
std::vector<int> parse_cpu_list(const std::string& text);

// Reads `sysfs_cpu_dir` (normally /sys/devices/system/cpu): `online`, then
// cpuN/cpufreq/cpuinfo_max_freq for each online CPU. Falls back to hardware_concurrency CPUs
// numbered 0..n-1 when `online` is unreadable. Never throws.
CpuTopology detect_cpu_topology(const std::string& sysfs_cpu_dir = "/sys/devices/system/cpu");

// The default thread count: the number of fast cores (at least 1), computed once.
int default_thread_count();

}  // namespace edgellm
