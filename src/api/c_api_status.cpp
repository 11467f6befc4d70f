// Version, statuses, the thread's last error and the log callback of the C ABI.
#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "api/c_api_internal.h"
#include "core/log.h"

namespace edgellm::capi {

namespace {

std::string& last_error() {
  thread_local std::string message;
  return message;
}

}  // namespace

void set_last_error(std::string message) { last_error() = std::move(message); }
void clear_last_error() { last_error().clear(); }

edgellm_status status_of(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return EDGELLM_ERR_INVALID_ARGUMENT;
    case ErrorCode::kInvalidFile: return EDGELLM_ERR_INVALID_FILE;
    case ErrorCode::kUnsupported: return EDGELLM_ERR_UNSUPPORTED;
    case ErrorCode::kIo: return EDGELLM_ERR_IO;
    case ErrorCode::kOutOfMemory: return EDGELLM_ERR_OUT_OF_MEMORY;
    case ErrorCode::kContextFull: return EDGELLM_ERR_CONTEXT_FULL;
    case ErrorCode::kCancelled: return EDGELLM_ERR_SHUT_DOWN;  // the only cancellation a call reports
    case ErrorCode::kBusy: return EDGELLM_ERR_BUSY;
    case ErrorCode::kDegraded: return EDGELLM_ERR_DEGRADED;
    case ErrorCode::kNotFound: return EDGELLM_ERR_NOT_FOUND;
    case ErrorCode::kInternal: return EDGELLM_ERR_INTERNAL;
  }
  return EDGELLM_ERR_INTERNAL;
}

edgellm_status copy_out(std::string_view text, char* buf, size_t capacity, size_t* length) {
  if (length == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "length is NULL");
  *length = text.size();
  if (buf == nullptr || capacity <= text.size()) {
    return fail(EDGELLM_ERR_BUFFER_TOO_SMALL, "the buffer holds " + std::to_string(capacity) + " bytes; " +
                                                  std::to_string(text.size() + 1) + " are needed");
  }
  std::memcpy(buf, text.data(), text.size());
  buf[text.size()] = '\0';
  return EDGELLM_OK;
}

edgellm_status copy_bytes_out(std::string_view bytes, void* buf, size_t capacity, size_t* length) {
  if (length == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "length is NULL");
  *length = bytes.size();
  if ((buf == nullptr && !bytes.empty()) || capacity < bytes.size()) {
    return fail(EDGELLM_ERR_BUFFER_TOO_SMALL, "the buffer holds " + std::to_string(capacity) + " bytes; " +
                                                  std::to_string(bytes.size()) + " are needed");
  }
  if (!bytes.empty()) std::memcpy(buf, bytes.data(), bytes.size());
  return EDGELLM_OK;
}

std::string required(const char* s, const char* what) {
  if (s == nullptr) throw Error(ErrorCode::kInvalidArgument, std::string(what) + " is NULL");
  return s;
}

Runtime& runtime_of(edgellm_runtime* handle) {
  if (handle == nullptr || !handle->rt) throw Error(ErrorCode::kInvalidArgument, "runtime is NULL");
  return *handle->rt;
}

}  // namespace edgellm::capi

using namespace edgellm;

extern "C" {

const char* edgellm_version(void) { return "0.2.0"; }
uint32_t edgellm_abi_version(void) { return EDGELLM_ABI_VERSION; }

const char* edgellm_status_name(edgellm_status status) {
  switch (capi::enum_value(status)) {
    case EDGELLM_OK: return "ok";
    case EDGELLM_ERR_INVALID_ARGUMENT: return "invalid_argument";
    case EDGELLM_ERR_BUSY: return "busy";
    case EDGELLM_ERR_NOT_FOUND: return "not_found";
    case EDGELLM_ERR_IO: return "io";
    case EDGELLM_ERR_INVALID_FILE: return "invalid_file";
    case EDGELLM_ERR_UNSUPPORTED: return "unsupported";
    case EDGELLM_ERR_OUT_OF_MEMORY: return "out_of_memory";
    case EDGELLM_ERR_CONTEXT_FULL: return "context_full";
    case EDGELLM_ERR_SHUT_DOWN: return "shut_down";
    case EDGELLM_ERR_BUFFER_TOO_SMALL: return "buffer_too_small";
    case EDGELLM_ERR_WRONG_THREAD: return "wrong_thread";
    case EDGELLM_ERR_INTERNAL: return "internal";
    case EDGELLM_ERR_DEGRADED: return "degraded";
    case EDGELLM_ERR_TIMEOUT: return "timeout";
  }
  return "unknown";
}

const char* edgellm_finish_reason_name(edgellm_finish_reason reason) {
  switch (capi::enum_value(reason)) {
    case EDGELLM_FINISH_STOP: return "stop";
    case EDGELLM_FINISH_LENGTH: return "length";
    case EDGELLM_FINISH_CANCELLED: return "cancelled";
    case EDGELLM_FINISH_TIMEOUT: return "timeout";
    case EDGELLM_FINISH_ERROR: return "error";
    case EDGELLM_FINISH_TOOL_CALLS: return "tool_calls";
  }
  return "unknown";
}

const char* edgellm_last_error(void) { return capi::last_error().c_str(); }

void edgellm_set_log_callback(edgellm_log_callback fn, void* user_data, edgellm_log_level min_level) {
  try {
    // The C enum and LogLevel share their values; the sink signature differs only in the enum type.
    struct Thunk {
      static void call(LogLevel level, const char* message, void* user) {
        auto* self = static_cast<std::pair<edgellm_log_callback, void*>*>(user);
        self->first(static_cast<edgellm_log_level>(level), message, self->second);
      }
    };
    // A call in flight may still read a replaced (fn, user) pair, so pairs are kept for the
    // process's life (a few bytes per replacement; hosts install a logger once).
    static std::mutex mutex;
    static std::vector<std::unique_ptr<std::pair<edgellm_log_callback, void*>>> pairs;
    if (fn == nullptr) {
      set_log_sink(nullptr, nullptr);
      return;
    }
    std::lock_guard<std::mutex> lock(mutex);
    pairs.push_back(std::make_unique<std::pair<edgellm_log_callback, void*>>(fn, user_data));
    const int level = std::clamp(capi::enum_value(min_level), 0, 3);
    set_log_sink(&Thunk::call, pairs.back().get(), static_cast<LogLevel>(level));
  } catch (...) {
  }
}

}  // extern "C"
