#include "js.h"

#include <cctype>
#include <cmath>
#include <limits>
#include <utility>

namespace edgellm_napi {

std::string status_code(edgellm_status status) {
  std::string code = edgellm_status_name(status);
  for (char& c : code) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return code;
}

napi_value make_error(napi_env env, std::string_view code, std::string_view message) {
  napi_value js_code = js_string(env, code);
  napi_value js_message = js_string(env, message);
  napi_value error = nullptr;
  if (!js_code || !js_message || napi_create_error(env, js_code, js_message, &error) != napi_ok) return nullptr;
  return error;
}

static bool exception_pending(napi_env env) {
  bool pending = false;
  return napi_is_exception_pending(env, &pending) == napi_ok && pending;
}

void reject_error(napi_env env, napi_deferred deferred, std::string_view code, std::string_view message) {
  napi_value error = nullptr;
  if (exception_pending(env)) {
    napi_get_and_clear_last_exception(env, &error);
  } else {
    error = make_error(env, code, message);
    if (!error) napi_get_and_clear_last_exception(env, &error);
  }
  napi_reject_deferred(env, deferred, error ? error : js_undefined(env));
}

void throw_error(napi_env env, std::string_view code, std::string_view message) {
  if (exception_pending(env)) return;
  napi_value error = make_error(env, code, message);
  if (error) napi_throw(env, error);
}

bool start_async_work(napi_env env, const char* name, napi_async_execute_callback execute,
                      napi_async_complete_callback complete, void* data, napi_async_work* work) {
  napi_value js_name = js_string(env, name);
  if (!js_name || napi_create_async_work(env, nullptr, js_name, execute, complete, data, work) != napi_ok) {
    throw_napi_failure(env, "napi_create_async_work");
    return false;
  }
  if (napi_queue_async_work(env, *work) != napi_ok) {
    napi_delete_async_work(env, *work);
    throw_napi_failure(env, "napi_queue_async_work");
    return false;
  }
  return true;
}

void throw_napi_failure(napi_env env, const char* what) {
  if (exception_pending(env)) return;
  const napi_extended_error_info* info = nullptr;
  std::string message = std::string(what) + ": ";
  if (napi_get_last_error_info(env, &info) == napi_ok && info && info->error_message) {
    message += info->error_message;
  } else {
    message += "Node-API call failed";
  }
  throw_error(env, "INTERNAL", message);
}

std::string last_error_message(edgellm_status status) {
  std::string message = edgellm_last_error();
  if (message.empty()) message = edgellm_status_name(status);
  return message;
}

napi_value js_string(napi_env env, std::string_view s) {
  napi_value v = nullptr;
  if (napi_create_string_utf8(env, s.data(), s.size(), &v) != napi_ok) return nullptr;
  return v;
}

napi_value js_number(napi_env env, double x) {
  napi_value v = nullptr;
  if (napi_create_double(env, x, &v) != napi_ok) return nullptr;
  return v;
}

napi_value js_bool(napi_env env, bool b) {
  napi_value v = nullptr;
  if (napi_get_boolean(env, b, &v) != napi_ok) return nullptr;
  return v;
}

napi_value js_undefined(napi_env env) {
  napi_value v = nullptr;
  if (napi_get_undefined(env, &v) != napi_ok) return nullptr;
  return v;
}

napi_value js_object(napi_env env) {
  napi_value v = nullptr;
  if (napi_create_object(env, &v) != napi_ok) return nullptr;
  return v;
}

bool set_property(napi_env env, napi_value obj, const char* name, napi_value value) {
  return obj && value && napi_set_named_property(env, obj, name, value) == napi_ok;
}

static napi_value json_function(napi_env env, const char* name, napi_value* json) {
  napi_value global = nullptr, fn = nullptr;
  if (napi_get_global(env, &global) != napi_ok || napi_get_named_property(env, global, "JSON", json) != napi_ok ||
      napi_get_named_property(env, *json, name, &fn) != napi_ok) {
    return nullptr;
  }
  return fn;
}

napi_value parse_json(napi_env env, std::string_view text) {
  napi_value json = nullptr, parsed = nullptr, s = js_string(env, text);
  napi_value parse = s ? json_function(env, "parse", &json) : nullptr;
  if (!parse || napi_call_function(env, json, parse, 1, &s, &parsed) != napi_ok) {
    throw_napi_failure(env, "JSON.parse");
    return nullptr;
  }
  return parsed;
}

bool stringify_json(napi_env env, napi_value value, std::string* out) {
  napi_value json = nullptr, text = nullptr;
  napi_value stringify = json_function(env, "stringify", &json);
  if (!stringify || napi_call_function(env, json, stringify, 1, &value, &text) != napi_ok) {
    throw_napi_failure(env, "JSON.stringify");
    return false;
  }
  if (!read_string(env, text, out)) {
    throw_error(env, "INVALID_ARGUMENT", "the value cannot be written as JSON");
    return false;
  }
  return true;
}

napi_valuetype type_of(napi_env env, napi_value value) {
  napi_valuetype t = napi_undefined;
  if (!value || napi_typeof(env, value, &t) != napi_ok) return napi_undefined;
  return t;
}

bool read_string(napi_env env, napi_value value, std::string* out) {
  if (type_of(env, value) != napi_string) return false;
  size_t length = 0;
  if (napi_get_value_string_utf8(env, value, nullptr, 0, &length) != napi_ok) return false;
  std::string s(length, '\0');
  // The call writes a NUL after `length` bytes: give it length + 1 (std::string owns that byte).
  if (napi_get_value_string_utf8(env, value, s.data(), length + 1, &length) != napi_ok) return false;
  s.resize(length);
  *out = std::move(s);
  return true;
}

OptionReader::OptionReader(napi_env env, napi_value object, const char* what) : env_(env), what_(what) {
  napi_valuetype t = type_of(env, object);
  if (t == napi_undefined || t == napi_null) return;
  if (t != napi_object) {
    fail(what_ + " must be an object");
    return;
  }
  object_ = object;
}

void OptionReader::fail(std::string message) {
  if (error_.empty()) error_ = std::move(message);
}

napi_value OptionReader::field(const char* name) {
  if (!object_ || !ok()) return nullptr;
  napi_value v = nullptr;
  if (napi_get_named_property(env_, object_, name, &v) != napi_ok) {
    fail(what_ + "." + name + " cannot be read");
    return nullptr;
  }
  napi_valuetype t = type_of(env_, v);
  return t == napi_undefined ? nullptr : v;
}

// A JS number that is an integer within [min, max] (both within 2^53).
static bool integral_in(double x, double min, double max) {
  return std::isfinite(x) && std::floor(x) == x && x >= min && x <= max;
}

void OptionReader::integer(const char* name, int32_t min, int32_t max, int32_t* out) {
  int64_t v = *out;
  int64(name, min, max, &v);
  if (ok()) *out = static_cast<int32_t>(v);
}

void OptionReader::int64(const char* name, int64_t min, int64_t max, int64_t* out) {
  napi_value v = field(name);
  if (!v) return;
  double x = 0;
  if (type_of(env_, v) != napi_number || napi_get_value_double(env_, v, &x) != napi_ok ||
      !integral_in(x, static_cast<double>(min), static_cast<double>(max))) {
    fail(what_ + "." + name + " must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
    return;
  }
  *out = static_cast<int64_t>(x);
}

void OptionReader::uint64(const char* name, uint64_t* out) {
  constexpr int64_t kMaxSafe = (int64_t{1} << 53) - 1;
  int64_t v = 0;
  napi_value present = field(name);
  if (!present) return;
  int64(name, 0, kMaxSafe, &v);
  if (ok()) *out = static_cast<uint64_t>(v);
}

void OptionReader::number(const char* name, float* out) {
  napi_value v = field(name);
  if (!v) return;
  double x = 0;
  if (type_of(env_, v) != napi_number || napi_get_value_double(env_, v, &x) != napi_ok || !std::isfinite(x) ||
      std::fabs(x) > std::numeric_limits<float>::max()) {
    fail(what_ + "." + name + " must be a finite number");
    return;
  }
  *out = static_cast<float>(x);
}

void OptionReader::number(const char* name, double* out) {
  napi_value v = field(name);
  if (!v) return;
  double x = 0;
  if (type_of(env_, v) != napi_number || napi_get_value_double(env_, v, &x) != napi_ok || !std::isfinite(x)) {
    fail(what_ + "." + name + " must be a finite number");
    return;
  }
  *out = x;
}

void OptionReader::string(const char* name, std::string* out) {
  napi_value v = field(name);
  if (!v) return;
  if (!read_string(env_, v, out)) fail(what_ + "." + name + " must be a string");
}

void OptionReader::boolean(const char* name, bool* out) {
  napi_value v = field(name);
  if (!v) return;
  bool b = false;
  if (type_of(env_, v) != napi_boolean || napi_get_value_bool(env_, v, &b) != napi_ok) {
    fail(what_ + "." + name + " must be a boolean");
    return;
  }
  *out = b;
}

void OptionReader::choice(const char* name, const char* const* choices, int* out) {
  napi_value v = field(name);
  if (!v) return;
  std::string s;
  if (read_string(env_, v, &s)) {
    for (int i = 0; choices[i]; ++i) {
      if (s == choices[i]) {
        *out = i;
        return;
      }
    }
  }
  std::string list;
  for (int i = 0; choices[i]; ++i) list += std::string(i ? ", '" : "'") + choices[i] + "'";
  fail(what_ + "." + name + " must be one of " + list);
}

void OptionReader::choice_or_integer(const char* name, const char* const* choices, int* out) {
  napi_value v = field(name);
  if (v && type_of(env_, v) == napi_number) {
    integer(name, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max(), out);
  } else {
    choice(name, choices, out);
  }
}

}  // namespace edgellm_napi
