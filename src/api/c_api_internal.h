// Shared by the src/api/*.cpp files: the opaque handle, the thread's last error, guard() (the one
// place where every exception becomes a status: nothing may cross the C boundary), and the
// struct_size convention of the header ("Growing without breaking").
#pragma once

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"
#include "edgellm/edgellm.h"
#include "runtime/runtime.h"
#include "runtime/tool_request.h"

// One handle = one Runtime (runtime/runtime.h): the C ABI is a face over it and adds no policy.
struct edgellm_runtime {
  std::unique_ptr<edgellm::Runtime> rt;
  // Threads inside Runtime::embed (edgellm_embed / edgellm_rerank submitting: their calls then
  // block on the request's end, which shutdown delivers) or Runtime::classify (edgellm_classify,
  // whose forward stops at the next layer once shutdown started). destroy waits for this to reach
  // 0 after shutdown, so such a call returns SHUT_DOWN instead of touching a freed runtime.
  std::atomic<int> embed_submitting{0};
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

// A caller's struct read by its struct_size: the bytes the caller has over `defaults` (which
// carry this library's struct_size), the rest kept from `defaults`. NULL: the defaults. A
// struct_size below the first field's end is refused (it did not come from *_default_params()).
// New fields are appended past the previous version's sizeof (docs/c-api.md), so a prefix of
// the caller's size is always whole fields.
template <typename T>
T read_struct(const T* p, T defaults, const char* what) {
  if (p == nullptr) return defaults;
  uint32_t size = 0;
  std::memcpy(&size, p, sizeof size);
  if (size < sizeof(uint32_t) + 1) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string(what) + ".struct_size is " + std::to_string(size) + " (start from its *_default_params())");
  }
  std::memcpy(static_cast<void*>(&defaults), p, std::min<size_t>(size, sizeof(T)));
  defaults.struct_size = sizeof(T);
  return defaults;
}

// The caller-owned-buffer convention of the header for text: *length = text size; the text
// and its NUL are written when capacity > size, else BUFFER_TOO_SMALL and nothing written.
edgellm_status copy_out(std::string_view text, char* buf, size_t capacity, size_t* length);
// The same for bytes (no NUL): written when capacity >= size.
edgellm_status copy_bytes_out(std::string_view bytes, void* buf, size_t capacity, size_t* length);

// A required string argument; throws kInvalidArgument "<what> is NULL".
std::string required(const char* s, const char* what);

// The runtime of a handle; throws kInvalidArgument "runtime is NULL".
Runtime& runtime_of(edgellm_runtime* handle);

// Mirrors of the C enums and structs (c_api_requests.cpp).
ServiceRequest to_request(const edgellm_request_params& p);  // on_finish: finish_callback
// The request's tools / tool_choice fields (r: its input, from to_request) as the runtime's
// ToolRequest, checked (runtime/tool_request.h); kInvalidArgument naming the field.
ToolRequest to_tool_request(const edgellm_request_params& p, const ServiceRequest& r);
// The call parser of a streamed request with tools, shared by its token and finish callbacks
// (both on the scheduler thread, the finish after the last token: no lock).
struct ToolStream {
  explicit ToolStream(ToolCallFormat format) : parser(format) {}
  ToolCallParser parser;
  int32_t next_index = 0;  // the index of the next event (the last one, token -1, included)
};
// The C on_token of a request with tools: each event's text through `stream` (content and call
// deltas in the event). Scheduler thread only, as `stream`.
std::function<bool(const TokenEvent&)> tool_token_callback(edgellm_token_callback fn, void* user,
                                                           std::shared_ptr<ToolStream> stream);
// The C on_finish over a RequestResult (fn may be NULL when only `stream` needs the end);
// `tools`: the reply is parsed into content and calls, by `stream` when the reply was streamed
// through it (its rest is first delivered to token_fn as a last event, token -1).
std::function<void(RequestResult&)> finish_callback(edgellm_finish_callback fn, void* user,
                                                    std::optional<ToolCallFormat> tools,
                                                    std::shared_ptr<ToolStream> stream = nullptr,
                                                    edgellm_token_callback token_fn = nullptr);
Json to_messages(const edgellm_message* messages, size_t n_messages, bool strict_utf8);

}  // namespace edgellm::capi
