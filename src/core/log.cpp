#include "core/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>

namespace edgellm {

namespace {

// The sink and its user pointer change together: a reader takes both under a shared snapshot.
// Installing a sink is rare, logging is not hot either (a few lines per request at most), so a
// mutex copy is enough; the sink itself is called after the mutex is released.
struct Sink {
  LogSink fn = nullptr;
  void* user = nullptr;
  LogLevel min_level = LogLevel::kInfo;
};

std::mutex& sink_mutex() {
  static std::mutex m;
  return m;
}

Sink& sink() {
  static Sink s;
  return s;
}

}  // namespace

const char* log_level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
  }
  return "info";
}

void set_log_sink(LogSink fn, void* user, LogLevel min_level) {
  std::lock_guard<std::mutex> lock(sink_mutex());
  sink() = Sink{fn, user, min_level};
}

void log_message(LogLevel level, const std::string& message) {
  Sink s;
  {
    std::lock_guard<std::mutex> lock(sink_mutex());
    s = sink();
  }
  if (s.fn != nullptr) {
    if (level >= s.min_level) s.fn(level, message.c_str(), s.user);
    return;
  }
  if (level >= LogLevel::kWarn) std::fprintf(stderr, "edgellm %s: %s\n", log_level_name(level), message.c_str());
}

}  // namespace edgellm
