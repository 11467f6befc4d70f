#include "runtime/pressure_signals.h"

#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace edgellm {
namespace {

bool read_text(const std::string& path, std::string* out) {
  std::ifstream f(path);
  if (!f) return false;
  std::stringstream ss;
  ss << f.rdbuf();
  *out = ss.str();
  return true;
}

// "some avg10=1.23 avg60=..." -> 1.23 for prefix "some".
bool psi_avg10(const std::string& text, const char* kind, double* out) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(kind, 0) != 0) continue;
    const size_t p = line.find("avg10=");
    if (p == std::string::npos) return false;
    *out = std::strtod(line.c_str() + p + 6, nullptr);
    return true;
  }
  return false;
}

}  // namespace

LinuxPressure read_linux_pressure(const std::string& proc_root, const std::string& cgroup_root,
                                  const std::string& thermal_root) {
  LinuxPressure p;
  std::string text;
  if (read_text(proc_root + "/pressure/memory", &text)) {
    p.psi = psi_avg10(text, "some", &p.some_avg10);
    psi_avg10(text, "full", &p.full_avg10);
  }
  if (read_text(cgroup_root + "/memory.events", &text)) {
    p.memory_events = true;
    std::istringstream in(text);
    std::string key;
    uint64_t value = 0;
    while (in >> key >> value) {
      if (key == "high") p.high = value;
      if (key == "max") p.max = value;
      if (key == "oom") p.oom = value;
      if (key == "oom_kill") p.oom_kill = value;
    }
  }
  if (DIR* d = ::opendir(thermal_root.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      if (std::strncmp(e->d_name, "thermal_zone", 12) != 0) continue;
      if (!read_text(thermal_root + "/" + e->d_name + "/temp", &text)) continue;
      const double c = std::strtod(text.c_str(), nullptr) / 1000.0;
      if (c > -100 && c < 200) {
        p.thermal = true;
        p.max_temp_c = std::max(p.max_temp_c, c);
      }
    }
    ::closedir(d);
  }
  return p;
}

PressureSignals signals_from_linux(const LinuxPressure& now, const LinuxPressure& before) {
  PressureSignals s;
  if (now.psi) {
    if (now.some_avg10 >= 10) s.memory_level = 1;
    if (now.some_avg10 >= 30) s.memory_level = 2;
    if (now.full_avg10 >= 10) s.memory_level = 3;
  }
  if (now.memory_events && before.memory_events) {
    if (now.high > before.high) s.memory_level = std::max(s.memory_level, 1);
    if (now.max > before.max) s.memory_level = std::max(s.memory_level, 2);
    if (now.oom > before.oom || now.oom_kill > before.oom_kill) s.memory_level = std::max(s.memory_level, 3);
  }
  if (now.thermal) {
    if (now.max_temp_c >= 45) s.thermal_level = 1;
    if (now.max_temp_c >= 55) s.thermal_level = 2;
    if (now.max_temp_c >= 65) s.thermal_level = 3;
  }
  return s;
}

}  // namespace edgellm
