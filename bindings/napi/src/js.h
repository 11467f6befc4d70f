// Small helpers over Node-API values and errors. Every function runs on the JS thread.
//
// Convention: a helper returns false (or nullptr) when a Node-API call failed; a JS exception is
// then pending (the helper throws one if the engine did not), so a caller returns nullptr from its
// callback and JS sees the exception.
#ifndef EDGELLM_NAPI_JS_H
#define EDGELLM_NAPI_JS_H

#include <edgellm/edgellm.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "compat.h"

namespace edgellm_napi {

// "BUSY", "INVALID_ARGUMENT", ...: the C ABI status name in upper case (the `code` of errors).
std::string status_code(edgellm_status status);

// An Error whose `code` is `code` and whose message is `message` (nullptr if even that failed).
napi_value make_error(napi_env env, std::string_view code, std::string_view message);
// Rejects deferred with make_error(code, message); when a JS exception is pending (e.g. an
// options getter threw), with that exception instead.
void reject_error(napi_env env, napi_deferred deferred, std::string_view code, std::string_view message);
// Throws make_error(code, message) unless an exception is already pending.
void throw_error(napi_env env, std::string_view code, std::string_view message);
// Throws for a failed Node-API call (napi_get_last_error_info's message) unless one is pending.
void throw_napi_failure(napi_env env, const char* what);
// Creates and queues an async work named `name` (execute on a libuv worker, complete on the JS
// thread, which must napi_delete_async_work *work). False with an exception pending, and nothing
// queued, when either step fails: `data` then still belongs to the caller.
bool start_async_work(napi_env env, const char* name, napi_async_execute_callback execute,
                      napi_async_complete_callback complete, void* data, napi_async_work* work);
// The error for a failed C ABI call made on this thread: code from status, message from
// edgellm_last_error() (read at once: the next library call on this thread replaces it).
std::string last_error_message(edgellm_status status);

// Value constructors (nullptr on failure, exception pending).
napi_value js_string(napi_env env, std::string_view s);
napi_value js_number(napi_env env, double v);
napi_value js_bool(napi_env env, bool v);
napi_value js_undefined(napi_env env);
napi_value js_object(napi_env env);

// [v0, v1, ...] as JS numbers (token ids, probabilities); nullptr on failure.
template <typename T>
napi_value js_number_array(napi_env env, const std::vector<T>& v) {
  napi_value a = nullptr;
  if (napi_create_array_with_length(env, v.size(), &a) != napi_ok) return nullptr;
  for (size_t i = 0; i < v.size(); ++i) {
    napi_value n = js_number(env, static_cast<double>(v[i]));
    if (!n || napi_set_element(env, a, static_cast<uint32_t>(i), n) != napi_ok) return nullptr;
  }
  return a;
}

// obj[name] = value; false on failure.
bool set_property(napi_env env, napi_value obj, const char* name, napi_value value);

// JSON.parse(text) / JSON.stringify(value) with the engine's own JSON object (nullptr / false
// with an exception pending on failure).
napi_value parse_json(napi_env env, std::string_view text);
bool stringify_json(napi_env env, napi_value value, std::string* out);

// A library text output by the caller-owned-buffer convention: fill(buf, capacity, &length).
// Asks the size first, then fills; retries while the output grew (metrics). Only for calls
// without side effects.
template <typename Fill>
edgellm_status read_library_text(Fill fill, std::string* out) {
  size_t length = 0;
  edgellm_status st = fill(nullptr, 0, &length);
  for (int attempt = 0; attempt < 8 && st == EDGELLM_ERR_BUFFER_TOO_SMALL; ++attempt) {
    out->assign(length + 1 + (attempt == 0 ? 0 : length / 4 + 256), '\0');
    st = fill(out->data(), out->size(), &length);
  }
  if (st == EDGELLM_OK) out->resize(length);
  return st;
}

// Reads a JS string as UTF-8 into *out; false (nothing thrown) when value is not a string.
bool read_string(napi_env env, napi_value value, std::string* out);
napi_valuetype type_of(napi_env env, napi_value value);

// Reads fields of an optional options object, collecting the first type error so the caller can
// report it as it must (a rejection for load and generate, a throw for synchronous calls).
// Absent fields (undefined) leave the output unchanged: the C ABI default stays.
class OptionReader {
 public:
  // `object` may be undefined/null (no options). `what` names it in messages ("options").
  OptionReader(napi_env env, napi_value object, const char* what);

  void integer(const char* name, int32_t min, int32_t max, int32_t* out);
  void int64(const char* name, int64_t min, int64_t max, int64_t* out);
  void uint64(const char* name, uint64_t* out);  // a non-negative safe integer
  void number(const char* name, float* out);
  void number(const char* name, double* out);
  void boolean(const char* name, bool* out);
  void string(const char* name, std::string* out);
  // One of `choices` (nullptr-terminated); *out receives its index.
  void choice(const char* name, const char* const* choices, int* out);
  // One of `choices` as choice() reads it, or an integer passed on as it is: the C ABI's enum
  // value, whose range the Runtime checks in the words every face shares (priority).
  void choice_or_integer(const char* name, const char* const* choices, int* out);
  // The raw value of a field (undefined when absent or when there is no object).
  napi_value field(const char* name);

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  void fail(std::string message);

 private:
  napi_env env_;
  napi_value object_ = nullptr;  // nullptr: no options given
  std::string what_;
  std::string error_;
};

}  // namespace edgellm_napi

#endif  // EDGELLM_NAPI_JS_H
