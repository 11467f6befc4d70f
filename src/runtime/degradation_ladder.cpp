#include "runtime/degradation_ladder.h"

#include <algorithm>

namespace edgellm {
namespace {

const char* level_word(int level) {
  static const char* kWords[] = {"none", "moderate", "high", "critical", "free now"};
  return level >= 0 && level <= 4 ? kWords[level] : "?";
}

}  // namespace

const char* rung_name(Rung r) {
  switch (r) {
    case Rung::kNormal: return "normal";
    case Rung::kFewerThreads: return "fewer_threads";
    case Rung::kShorterContext: return "shorter_context";
    case Rung::kInt8Kv: return "int8_kv";
    case Rung::kSmallerModel: return "smaller_model";
    case Rung::kRefuseNew: return "refuse_new";
    case Rung::kEndRunning: return "end_running";
  }
  return "?";
}

std::string PressureSignals::describe() const {
  return "memory " + std::to_string(memory_level) + " (" + level_word(memory_level) + "), thermal " +
         std::to_string(thermal_level) + " (" + level_word(std::min(thermal_level, 3)) + "), power-save " +
         (power_save ? "on" : "off");
}

Rung target_rung(const PressureSignals& s, std::string* reason) {
  static constexpr int kMemory[] = {0, 2, 4, 5, 6};
  static constexpr int kThermal[] = {0, 1, 2, 5};
  const int mem = kMemory[std::clamp(s.memory_level, 0, 4)];
  const int heat = kThermal[std::clamp(s.thermal_level, 0, 3)];
  const int power = s.power_save ? 1 : 0;
  const int target = std::max({mem, heat, power});
  if (reason) {
    if (target == 0) {
      *reason = "no pressure";
    } else if (target == mem) {
      *reason = std::string("memory pressure ") + level_word(std::clamp(s.memory_level, 0, 4));
    } else if (target == heat) {
      *reason = std::string("thermal pressure ") + level_word(std::clamp(s.thermal_level, 0, 3));
    } else {
      *reason = "power-save mode";
    }
  }
  return static_cast<Rung>(target);
}

std::vector<DegradationLadder::Step> DegradationLadder::update(const PressureSignals& signals, int64_t now_ms) {
  std::string reason;
  target_ = target_rung(signals, &reason);
  std::vector<Step> steps;
  const int cur = static_cast<int>(rung_);
  const int want = static_cast<int>(target_);
  if (want > cur) {
    lower_since_ms_ = -1;
    const Rung next = static_cast<Rung>(cur + 1);
    steps.push_back({rung_, next, reason, now_ms});
    rung_ = next;
    ++entered_[static_cast<size_t>(cur + 1)];
    last_reason_[static_cast<size_t>(cur + 1)] = reason;
    last_change_ms_ = now_ms;
  } else if (want < cur) {
    if (lower_since_ms_ < 0) lower_since_ms_ = now_ms;
    const int64_t calm_since = std::max(lower_since_ms_, last_change_ms_);
    if (now_ms - calm_since >= recover_ms_) {
      const Rung next = static_cast<Rung>(cur - 1);
      steps.push_back({rung_, next, "pressure eased (" + signals.describe() + ")", now_ms});
      ++left_[static_cast<size_t>(cur)];
      rung_ = next;
      last_change_ms_ = now_ms;
    }
  } else {
    lower_since_ms_ = -1;
  }
  history_.insert(history_.end(), steps.begin(), steps.end());
  return steps;
}

Json DegradationLadder::metrics_json() const {
  Json j = Json::object();
  j.set("rung", static_cast<int>(rung_));
  j.set("rung_name", rung_name(rung_));
  j.set("target", static_cast<int>(target_));
  Json per = Json::object();
  for (int i = 1; i < kRungCount; ++i) {
    Json r = Json::object();
    r.set("entered", entered_[static_cast<size_t>(i)]);
    r.set("left", left_[static_cast<size_t>(i)]);
    r.set("last_reason", last_reason_[static_cast<size_t>(i)]);
    per.set(rung_name(static_cast<Rung>(i)), r);
  }
  j.set("rungs", per);
  j.set("steps", static_cast<uint64_t>(history_.size()));
  return j;
}

}  // namespace edgellm
