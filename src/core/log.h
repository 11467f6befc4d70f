// The library's log: one process-wide sink the host installs (the C ABI's
// edgellm_set_log_callback), so messages reach the app's own logger instead of stderr. Messages
// never contain the user's text (prompts, answers); they say what the engine did and why.
#pragma once

#include <string>

namespace edgellm {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

const char* log_level_name(LogLevel level);

// fn(level, NUL-terminated message, user). Null fn: messages at kWarn and above go to stderr,
// the rest nowhere. Thread-safe; the sink may be called from any thread at once (the scheduler
// thread above all) and is never called while the library holds one of its locks.
using LogSink = void (*)(LogLevel level, const char* message, void* user);
void set_log_sink(LogSink fn, void* user, LogLevel min_level = LogLevel::kInfo);

void log_message(LogLevel level, const std::string& message);

}  // namespace edgellm
