#include "tools/bench/probe_cache.h"

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/json.h"
#include "kernels/int8_peak.h"

namespace edgellm::bench {
namespace {

// Everything a cached result depends on; another value measures again.
std::string machine_key(const BenchParams& p, const BenchMachine& m) {
  std::ostringstream k;
  k << m.cpu << "|threads " << m.hardware_threads << "|kernels";
  for (const auto& kernel : kernels::int8_peak_kernels()) k << ' ' << kernel.name;
  k << "|bandwidth " << (p.measure_bandwidth ? p.bandwidth_bytes : 0) << "|int8 "
    << (p.measure_int8_peak ? p.int8_peak_seconds : 0.0);
  return k.str();
}

Json bandwidth_json(const BandwidthResult& r) {
  Json j = Json::object();
  j.set("gbps", r.gbps);
  j.set("seconds", r.seconds);
  j.set("bytes", static_cast<uint64_t>(r.bytes));
  j.set("n_threads", r.n_threads);
  return j;
}

BandwidthResult bandwidth_from(const Json& j) {
  BandwidthResult r;
  r.gbps = j.at("gbps").as_number();
  r.seconds = j.at("seconds").as_number();
  r.bytes = static_cast<size_t>(j.at("bytes").as_int());
  r.n_threads = static_cast<int>(j.at("n_threads").as_int());
  return r;
}

Json machine_json(const BenchMachine& m) {
  Json j = Json::object();
  j.set("bandwidth_measured", m.bandwidth_measured);
  j.set("bandwidth_1", bandwidth_json(m.bandwidth_1));
  j.set("bandwidth_all", bandwidth_json(m.bandwidth_all));
  Json peaks = Json::array();
  for (const auto& r : m.int8_peak) {
    Json p = Json::object();
    p.set("kernel", r.kernel);
    p.set("instruction", r.instruction);
    p.set("n_threads", r.n_threads);
    p.set("macs_per_second", r.macs_per_second);
    p.set("seconds", r.seconds);
    p.set("macs_per_cpu_second", r.macs_per_cpu_second);
    p.set("iterations", r.iterations);
    peaks.push_back(p);
  }
  j.set("int8_peak", peaks);
  return j;
}

void machine_from(const Json& j, BenchMachine* m) {
  m->bandwidth_measured = j.at("bandwidth_measured").as_bool();
  m->bandwidth_1 = bandwidth_from(j.at("bandwidth_1"));
  m->bandwidth_all = bandwidth_from(j.at("bandwidth_all"));
  m->int8_peak.clear();
  for (const auto& p : j.at("int8_peak").as_array()) {
    Int8PeakResult r;
    r.kernel = p.at("kernel").as_string();
    r.instruction = p.at("instruction").as_string();
    r.n_threads = static_cast<int>(p.at("n_threads").as_int());
    r.macs_per_second = p.at("macs_per_second").as_number();
    r.seconds = p.at("seconds").as_number();
    r.macs_per_cpu_second = p.at("macs_per_cpu_second").as_number();
    r.iterations = p.at("iterations").as_int();
    m->int8_peak.push_back(std::move(r));
  }
}

std::string utc_date(int64_t t) {
  const std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

}  // namespace

std::string default_probe_cache_path() {
  if (const char* d = std::getenv("EDGELLM_CACHE_DIR"); d != nullptr && *d != '\0') {
    return std::string(d) + "/machine-probes.json";
  }
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0') {
    return std::string(x) + "/edgellm/machine-probes.json";
  }
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') {
    return std::string(h) + "/.cache/edgellm/machine-probes.json";
  }
  return {};
}

BenchMachine describe_machine_cached(const BenchParams& params, const std::string& cache_path, bool refresh,
                                     std::string* note) {
  BenchParams none = params;  // the CPU name and thread count only
  none.measure_bandwidth = false;
  none.measure_int8_peak = false;
  BenchMachine m = describe_machine(none);
  if (!params.measure_bandwidth && !params.measure_int8_peak) {
    if (note) *note = "machine probes: skipped";
    return m;
  }
  const std::string key = machine_key(params, m);
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  Json cache = Json::object();
  if (!cache_path.empty()) {
    std::ifstream in(cache_path, std::ios::binary);
    if (in) {
      std::ostringstream ss;
      ss << in.rdbuf();
      try {
        cache = Json::parse(ss.str());
        if (!cache.is_object()) cache = Json::object();
      } catch (const Error&) {
        cache = Json::object();  // a damaged cache is measured again and rewritten
      }
    }
  }
  if (!refresh) {
    if (const Json* e = cache.find(key); e != nullptr && e->is_object()) {
      try {
        const int64_t when = e->at("measured_at").as_int();
        if (now - when >= 0 && now - when < int64_t{kProbeCacheMaxAgeDays} * 86400) {
          machine_from(e->at("machine"), &m);
          if (note) {
            *note = "machine probes: cached " + utc_date(when) + " in " + cache_path + " (--reprobe measures again)";
          }
          return m;
        }
      } catch (const Error&) {
        // an entry of another layout: measured again below
      }
    }
  }
  m = describe_machine(params);
  std::string written = "measured";
  if (!cache_path.empty()) {
    Json entry = Json::object();
    entry.set("measured_at", now);
    entry.set("machine", machine_json(m));
    cache.set(key, entry);
    try {
      std::filesystem::create_directories(std::filesystem::path(cache_path).parent_path());
      write_file_atomic(cache_path, cache.dump(2) + "\n");
      written = "measured, cached in " + cache_path;
    } catch (const std::exception& e) {
      written = std::string("measured (not cached: ") + e.what() + ")";
    }
  }
  if (note) *note = "machine probes: " + written;
  return m;
}

}  // namespace edgellm::bench
