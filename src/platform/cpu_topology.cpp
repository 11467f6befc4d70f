#include "platform/cpu_topology.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

namespace edgellm {

namespace {

bool read_first_line(const std::string& path, std::string& line) {
  std::ifstream in(path);
  if (!in) return false;
  std::getline(in, line);
  return true;
}

bool parse_int(const std::string& s, int64_t& out) {
  if (s.empty() || s.size() > 18) return false;
  int64_t v = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    v = v * 10 + (c - '0');
  }
  out = v;
  return true;
}

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// Upper bound on CPU ids we accept from a cpulist (protects against "0-4000000000").
constexpr int64_t kMaxCpuId = 4095;

}  // namespace

std::vector<int> parse_cpu_list(const std::string& text) {
  std::set<int> ids;
  std::stringstream ss(trim(text));
  std::string part;
  while (std::getline(ss, part, ',')) {
    part = trim(part);
    if (part.empty()) return {};
    const size_t dash = part.find('-');
    int64_t lo = 0, hi = 0;
    if (dash == std::string::npos) {
      if (!parse_int(part, lo)) return {};
      hi = lo;
    } else if (!parse_int(part.substr(0, dash), lo) || !parse_int(part.substr(dash + 1), hi)) {
      return {};
    }
    if (lo > hi || hi > kMaxCpuId) return {};
    for (int64_t i = lo; i <= hi; ++i) ids.insert(static_cast<int>(i));
  }
  return {ids.begin(), ids.end()};
}

CpuTopology detect_cpu_topology(const std::string& sysfs_cpu_dir) {
  CpuTopology topo;
  std::string line;
  if (read_first_line(sysfs_cpu_dir + "/online", line)) topo.online = parse_cpu_list(line);
  if (topo.online.empty()) {
    const int n = std::max(1u, std::thread::hardware_concurrency());
    for (int i = 0; i < n; ++i) topo.online.push_back(i);
  }
  int64_t best = 0;
  for (int cpu : topo.online) {
    int64_t freq = 0;
    std::string f;
    if (read_first_line(sysfs_cpu_dir + "/cpu" + std::to_string(cpu) + "/cpufreq/cpuinfo_max_freq", f)) {
      if (!parse_int(trim(f), freq)) freq = 0;
    }
    topo.max_freq_khz.push_back(freq);
    best = std::max(best, freq);
  }
  // The slowest cluster among the cores whose frequency is known (0 = unknown).
  int64_t slowest = 0;
  for (const int64_t f : topo.max_freq_khz) {
    if (f > 0 && (slowest == 0 || f < slowest)) slowest = f;
  }
  for (size_t i = 0; i < topo.online.size(); ++i) {
    const int64_t f = topo.max_freq_khz[i];
    // Unknown frequencies (0) everywhere: every online core counts as big.
    if (best == 0 || f == best) topo.big_cores.push_back(topo.online[i]);
    // One cluster (or nothing known): every core. Several: all but the slowest cluster's; a
    // core whose frequency is unknown among known ones is left out (it may be a little one).
    if (best == 0 || slowest == best || f > slowest) topo.fast_cores.push_back(topo.online[i]);
  }
  return topo;
}

int default_thread_count() {
  static const int n = std::max(1, detect_cpu_topology().n_fast());
  return n;
}

}  // namespace edgellm
