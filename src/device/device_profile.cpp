#include "device/device_profile.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "core/error.h"
#include "kernels/cpu_features.h"
#include "platform/cpu_topology.h"
#include "platform/memory_stats.h"

namespace edgellm {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

uint64_t meminfo_kib(const char* key) {
  std::ifstream f("/proc/meminfo");
  std::string line;
  const std::string prefix = std::string(key) + ":";
  while (std::getline(f, line)) {
    if (line.rfind(prefix, 0) == 0) return std::strtoull(line.c_str() + prefix.size(), nullptr, 10);
  }
  return 0;
}

uint64_t cgroup_limit() {
  std::ifstream f("/sys/fs/cgroup/memory.max");
  std::string v;
  if (!(f >> v) || v == "max") return 0;
  return std::strtoull(v.c_str(), nullptr, 10);
}

std::string this_isa() {
  const auto& f = kernels::cpu_features();
#if defined(EDGELLM_ARCH_X86)
  if (f.has_avx512_kernels()) return "avx512_vnni";
  if (f.has_avx2_kernels()) return "avx2";
#elif defined(EDGELLM_ARCH_ARM64)
  if (f.i8mm) return "i8mm";
  if (f.dotprod) return "dotprod";
  if (f.neon) return "neon";
#endif
  (void)f;
  return "scalar";
}

// Typical phones of each tier: per-app memory a foreground app can hold before the low-memory
// killer takes it (PRODUCT.md: 2-4 GB for one app after the system), and the common 1+3+4
// big/mid/little layout of current SoCs.
DeviceProfile phone(const std::string& name, uint64_t total_mib, uint64_t available_mib, uint64_t limit_mib) {
  DeviceProfile d;
  d.name = name;
  d.ram_total_bytes = total_mib * kMiB;
  d.ram_available_bytes = available_mib * kMiB;
  d.app_limit_bytes = limit_mib * kMiB;
  d.isa = "dotprod";
  d.clusters = {{1, 3130000, {}}, {3, 2540000, {}}, {4, 2050000, {}}};
  return d;
}

uint64_t mib_field(const Json& j, const char* key, bool required) {
  const Json* v = j.find(key);
  if (!v || v->is_null()) {
    require(!required, ErrorCode::kInvalidArgument, [&] { return std::string("device profile: '") + key + "' is missing"; });
    return 0;
  }
  require(v->is_number() && v->as_number() >= 0 && v->as_number() < 1e9 && std::isfinite(v->as_number()),
          ErrorCode::kInvalidArgument,
          [&] { return std::string("device profile: '") + key + "' must be a number of MiB >= 0"; });
  return static_cast<uint64_t>(v->as_number() * static_cast<double>(kMiB));
}

}  // namespace

uint64_t DeviceProfile::budget_bytes(double headroom) const {
  uint64_t cap = ram_available_bytes ? ram_available_bytes : ram_total_bytes;
  if (app_limit_bytes && (cap == 0 || app_limit_bytes < cap)) cap = app_limit_bytes;
  headroom = std::clamp(headroom, 0.0, 0.9);
  return static_cast<uint64_t>(static_cast<double>(cap) * (1.0 - headroom));
}

int DeviceProfile::total_cores() const {
  int n = 0;
  for (const auto& c : clusters) n += c.cores;
  return n;
}

int DeviceProfile::fast_cores(int cap) const {
  if (clusters.empty()) return 1;
  // All clusters but the slowest count as fast (big + mid); a single cluster is all fast.
  int n = 0;
  const size_t last = clusters.size() > 1 ? clusters.size() - 1 : clusters.size();
  for (size_t i = 0; i < last; ++i) n += clusters[i].cores;
  return std::max(1, std::min(n, cap));
}

int DeviceProfile::efficiency_cores() const { return clusters.size() > 1 ? clusters.back().cores : 0; }

Json DeviceProfile::to_json() const {
  Json j = Json::object();
  j.set("name", name);
  j.set("ram_total_mib", static_cast<double>(ram_total_bytes) / kMiB);
  j.set("ram_available_mib", static_cast<double>(ram_available_bytes) / kMiB);
  j.set("app_limit_mib", static_cast<double>(app_limit_bytes) / kMiB);
  j.set("isa", isa);
  Json cl = Json::array();
  for (const auto& c : clusters) {
    Json o = Json::object();
    o.set("cores", c.cores);
    o.set("max_mhz", static_cast<double>(c.max_khz) / 1000.0);
    cl.push_back(o);
  }
  j.set("clusters", cl);
  return j;
}

DeviceProfile DeviceProfile::from_json(const Json& j) {
  require(j.is_object(), ErrorCode::kInvalidArgument, "device profile: not a JSON object");
  DeviceProfile d;
  if (const Json* n = j.find("name"); n && n->is_string()) d.name = n->as_string();
  d.ram_total_bytes = mib_field(j, "ram_total_mib", true);
  d.ram_available_bytes = mib_field(j, "ram_available_mib", false);
  d.app_limit_bytes = mib_field(j, "app_limit_mib", false);
  require(d.ram_total_bytes > 0, ErrorCode::kInvalidArgument, "device profile: 'ram_total_mib' must be > 0");
  if (const Json* isa = j.find("isa"); isa && isa->is_string()) d.isa = isa->as_string();
  const Json* cl = j.find("clusters");
  require(cl && cl->is_array() && cl->size() >= 1 && cl->size() <= 8, ErrorCode::kInvalidArgument,
          "device profile: 'clusters' must be an array of 1-8 {cores, max_mhz}");
  for (const Json& c : cl->as_array()) {
    require(c.is_object(), ErrorCode::kInvalidArgument, "device profile: each cluster must be an object");
    const Json* cores = c.find("cores");
    require(cores && cores->is_number() && cores->as_number() >= 1 && cores->as_number() <= 256,
            ErrorCode::kInvalidArgument, "device profile: cluster 'cores' must be 1-256");
    CpuCluster cc;
    cc.cores = static_cast<int>(cores->as_number());
    if (const Json* mhz = c.find("max_mhz"); mhz && mhz->is_number() && mhz->as_number() > 0) {
      cc.max_khz = static_cast<int64_t>(mhz->as_number() * 1000);
    }
    d.clusters.push_back(cc);
  }
  std::stable_sort(d.clusters.begin(), d.clusters.end(),
                   [](const CpuCluster& a, const CpuCluster& b) { return a.max_khz > b.max_khz; });
  return d;
}

DeviceProfile detect_this_device() {
  DeviceProfile d;
  d.name = "this device";
  d.ram_total_bytes = meminfo_kib("MemTotal") * 1024;
  d.ram_available_bytes = available_memory_bytes();
  d.app_limit_bytes = cgroup_limit();
  d.isa = this_isa();
  const CpuTopology topo = detect_cpu_topology();
  std::map<int64_t, CpuCluster, std::greater<>> by_freq;
  for (size_t i = 0; i < topo.online.size(); ++i) {
    CpuCluster& c = by_freq[topo.max_freq_khz[i]];
    c.max_khz = topo.max_freq_khz[i];
    ++c.cores;
    c.cpu_ids.push_back(topo.online[i]);
  }
  for (auto& [f, c] : by_freq) d.clusters.push_back(std::move(c));
  return d;
}

std::vector<std::string> builtin_device_names() { return {"phone-4gb", "phone-8gb", "phone-12gb", "phone-16gb"}; }

DeviceProfile load_device_profile(const std::string& name_or_path) {
  if (name_or_path.empty() || name_or_path == "this") return detect_this_device();
  if (name_or_path == "phone-4gb") return phone(name_or_path, 4096, 1700, 1536);
  if (name_or_path == "phone-8gb") return phone(name_or_path, 8192, 3600, 3072);
  if (name_or_path == "phone-12gb") return phone(name_or_path, 12288, 5600, 4096);
  if (name_or_path == "phone-16gb") return phone(name_or_path, 16384, 8000, 6144);
  std::ifstream f(name_or_path);
  if (!f) {
    std::string names;
    for (const auto& n : builtin_device_names()) names += " " + n;
    throw Error(ErrorCode::kInvalidArgument,
                "device '" + name_or_path + "' is neither 'this', a built-in tier (" + names.substr(1) + ") nor a readable file");
  }
  std::stringstream ss;
  ss << f.rdbuf();
  DeviceProfile d = DeviceProfile::from_json(Json::parse(ss.str()));
  if (d.name.empty()) d.name = name_or_path;
  return d;
}

}  // namespace edgellm
