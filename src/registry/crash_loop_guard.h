// Crash-loop guard: the failure users report most on phones is an app killed by the system
// while it loads a model too large for the device (OOM kill: no exception, no stack trace, and
// the app loads the same model again on the next start). The guard turns that into a handled
// case: a marker file is written (and fsynced) before a load and removed after it, so a marker
// found at the next start means the previous load was killed. After `max_killed_loads`
// consecutive killed loads of one configuration it is marked unfit for this device, and the
// planner (planner.h) picks something smaller.
//
// Files under dir (the registry's guard/ folder):
//   loading-<key>   the count of loads of <key> started and never finished ("2\n")
//   unfit.json      {"<key>": {"reason": "...", "killed_loads": 2}}
// <key> is a configuration key: "NAME@VERSION" plus whatever changes memory ("/ctx=4096/kv=f16"),
// made of [A-Za-z0-9._@=/-] ('/' is stored as '+' in file names).
//
// Thread safety: one process loads a given key at a time (the app's own model loading);
// different keys may be guarded concurrently.
#pragma once

#include <string>
#include <vector>

namespace edgellm {

class CrashLoopGuard {
 public:
  // Creates `dir` when missing. Throws Error(kIo).
  explicit CrashLoopGuard(std::string dir, int max_killed_loads = 2);

  struct Decision {
    bool allowed = true;
    int killed_loads = 0;  // loads of this key that were started and never finished, before now
    std::string reason;    // why not allowed
  };
  // Before loading `key`: refuses a key marked unfit; marks it unfit (and refuses) when the
  // earlier loads that never finished reach max_killed_loads; otherwise records one more
  // started load (fsynced before returning) and allows it.
  Decision begin(const std::string& key);
  // After the load returned (successfully or with an ordinary error: not a kill).
  void end(const std::string& key);

  bool is_unfit(const std::string& key, std::string* reason = nullptr) const;
  std::vector<std::string> unfit_keys() const;
  // Forgets a key's markers and unfit mark (`edgellm registry reset KEY`, or after an update).
  void clear(const std::string& key);

 private:
  std::string marker_path(const std::string& key) const;
  void mark_unfit(const std::string& key, int killed, const std::string& reason);

  std::string dir_;
  int max_killed_loads_;
};

// RAII: begin() in the constructor (throws Error(kUnsupported) with the reason when refused),
// end() in the destructor unless the process dies first — which is the point.
class GuardedLoad {
 public:
  GuardedLoad(CrashLoopGuard& guard, std::string key);
  ~GuardedLoad();
  GuardedLoad(const GuardedLoad&) = delete;
  GuardedLoad& operator=(const GuardedLoad&) = delete;

 private:
  CrashLoopGuard& guard_;
  std::string key_;
};

}  // namespace edgellm
