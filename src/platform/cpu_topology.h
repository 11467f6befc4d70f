// Which CPUs are "big": on big.LITTLE phones the cores with the highest cpuinfo_max_freq run
// the forward pass; the little ones only slow a synchronised matmul down.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace edgellm {

struct CpuTopology {
  std::vector<int> online;          // online CPU ids, ascending
  std::vector<int64_t> max_freq_khz;  // per entry of `online`; 0 when unknown
  std::vector<int> big_cores;       // ids with the highest max frequency (all online if unknown)
  int n_big() const { return static_cast<int>(big_cores.size()); }
};

// Parses a cpulist such as "0-3,5,7-8" (the format of /sys/devices/system/cpu/online).
// Returns an empty vector for malformed text.
std::vector<int> parse_cpu_list(const std::string& text);

// Reads `sysfs_cpu_dir` (normally /sys/devices/system/cpu): `online`, then
// cpuN/cpufreq/cpuinfo_max_freq for each online CPU. Falls back to hardware_concurrency CPUs
// numbered 0..n-1 when `online` is unreadable. Never throws.
CpuTopology detect_cpu_topology(const std::string& sysfs_cpu_dir = "/sys/devices/system/cpu");

// The default thread count: the number of big cores (at least 1), computed once.
int default_thread_count();

}  // namespace edgellm
