// Shared by the src/api/*.cpp files: the opaque handle, the thread's last error, and guard(),
// the one place where every exception becomes a status (nothing may cross the C boundary).
#pragma once

#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <string_view>

#include "core/error.h"
#include "edgellm/edgellm.h"
#include "runtime/degradation_controller.h"
#include "service/inference_service.h"
#include "runtime/model_host.h"

// One handle = a ModelHost (the hot swap: the current InferenceService, plus old ones draining)
// and the degradation ladder over it. Calls about "the model" (tokenize, metrics, pause...) go to
// the current service.
struct edgellm_service {
  std::unique_ptr<edgellm::ModelHost> host;
  std::unique_ptr<edgellm::DegradationController> ladder;  // destroyed before host
  // The service that serves new requests now (valid while held).
  std::shared_ptr<edgellm::InferenceService> current() const { return host->current_service(); }
};

namespace edgellm::capi {

void set_last_error(std::string message);
void clear_last_error();

// Engine error code -> C status.
edgellm_status status_of(ErrorCode code);

// Runs fn() -> edgellm_status; any exception becomes a status and the thread's last error.
template <typename Fn>
edgellm_status guard(Fn&& fn) noexcept {
  try {
    clear_last_error();
    return fn();
  } catch (const Error& e) {
    try {
      set_last_error(e.what());
    } catch (...) {
    }
    return status_of(e.code());
  } catch (const std::bad_alloc&) {
    try {
      set_last_error("out of memory");
    } catch (...) {
    }
    return EDGELLM_ERR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    try {
      set_last_error(e.what());
    } catch (...) {
    }
    return EDGELLM_ERR_INTERNAL;
  } catch (...) {
    return EDGELLM_ERR_INTERNAL;
  }
}

// The int behind an enum value that came from C. A C caller may store any int in an enum
// field (C enums are ints); loading an out-of-range value as the C++ enum type is undefined
// behaviour, so the bytes are copied into an int and compared as one.
template <typename E>
int enum_value(const E& e) {
  static_assert(sizeof(E) == sizeof(int), "the C ABI's enums are int-sized");
  int v = 0;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

inline edgellm_status fail(edgellm_status status, std::string message) {
  set_last_error(std::move(message));
  return status;
}

// The caller-owned-buffer convention of the header for text: *length = text size; the text
// and its NUL are written when capacity > size, else BUFFER_TOO_SMALL and nothing written.
edgellm_status copy_out(std::string_view text, char* buf, size_t capacity, size_t* length);

}  // namespace edgellm::capi
