// The degradation ladder: device pressure (memory, heat, power-save) mapped to how far the
// service steps down, one rung at a time, and back up with hysteresis. Pure logic (no threads,
// no clock of its own): the DegradationController feeds it signals and the time and applies
// the steps it takes (docs/device-fitness.md, "The ladder").
//
//   rung 0 normal
//   rung 1 fewer threads          (decode and prefill threads halved / efficiency cores)
//   rung 2 shorter context        (new requests get half the context)
//   rung 3 int8 KV                (new requests' KV in Q8_0: half the KV memory)
//   rung 4 smaller model          (the registry's next smaller model, when there is one)
//   rung 5 refuse new requests    (status DEGRADED with the reason)
//   rung 6 end running requests   (each ends with DEGRADED and the reason: the only rung that
//                                  touches running requests)
//
// Signals -> target rung (the highest any signal asks for):
//   power-save on                          1
//   thermal level 1 / 2 / 3                1 / 2 / 5
//   memory level  1 / 2 / 3 / 4            2 / 4 / 5 / 6   (4: the host says memory must be
//                                                           freed now, e.g. onTrimMemory COMPLETE)
// Moving: toward a higher target the ladder steps down one rung per update (each step applied
// in order); toward a lower target it steps up one rung only after the target has stayed lower
// for `recover_ms` since the last change (hysteresis: a pressure that flickers does not make
// the service rebuild itself every second).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/json.h"

namespace edgellm {

enum class Rung : int {
  kNormal = 0,
  kFewerThreads = 1,
  kShorterContext = 2,
  kInt8Kv = 3,
  kSmallerModel = 4,
  kRefuseNew = 5,
  kEndRunning = 6,
};
inline constexpr int kRungCount = 7;
const char* rung_name(Rung r);

struct PressureSignals {
  int memory_level = 0;   // 0 none, 1 moderate, 2 high, 3 critical, 4 free memory now
  int thermal_level = 0;  // 0 none, 1 warm, 2 hot, 3 critical
  bool power_save = false;

  bool operator==(const PressureSignals&) const = default;
  std::string describe() const;  // "memory 2 (high), thermal 0, power-save off"
};

// The rung the signals ask for, and which signal decided it.
Rung target_rung(const PressureSignals& s, std::string* reason = nullptr);

class DegradationLadder {
 public:
  explicit DegradationLadder(int64_t recover_ms = 10000) : recover_ms_(recover_ms) {}

  struct Step {
    Rung from, to;
    std::string reason;
    int64_t at_ms;
  };
  // Feeds the current signals at time now_ms (monotonic). Returns the step taken (at most one
  // per call), if any. Call again while pending() to continue down (or up, once the hold ends).
  std::vector<Step> update(const PressureSignals& signals, int64_t now_ms);
  // More steps are due now (the target is further down) or later (further up, after the hold).
  bool pending() const { return target_ != rung_; }

  Rung rung() const { return rung_; }
  Rung target() const { return target_; }
  const std::vector<Step>& history() const { return history_; }
  // Times each rung was entered going down / left going up, and the last reason per rung.
  Json metrics_json() const;

 private:
  int64_t recover_ms_;
  Rung rung_ = Rung::kNormal;
  Rung target_ = Rung::kNormal;
  int64_t last_change_ms_ = 0;
  int64_t lower_since_ms_ = -1;  // when the target first went below the rung (hysteresis)
  std::array<uint64_t, kRungCount> entered_{};
  std::array<uint64_t, kRungCount> left_{};
  std::array<std::string, kRungCount> last_reason_{};
  std::vector<Step> history_;
};

}  // namespace edgellm
