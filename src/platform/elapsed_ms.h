#pragma once
// Milliseconds between two steady-clock points: the unit every request statistic is reported in
// (queue, TTFT, total; service and embedding service alike).
#include <chrono>

namespace edgellm {

inline double ms_between(std::chrono::steady_clock::time_point from, std::chrono::steady_clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

}  // namespace edgellm
