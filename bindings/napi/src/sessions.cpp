// The Model's session methods (edgellm.h, "sessions"): conversations the runtime keeps by id, as
// bytes (ArrayBuffer) and as files. Copies and file I/O of up to max_session_bytes run on worker
// threads (promises); delete and list are quick and synchronous.
#include <cstring>
#include <memory>
#include <string>

#include "addon.h"
#include "async_call.h"
#include "js.h"
#include "sessions.h"

namespace edgellm_napi {

namespace {

// The bytes of an ArrayBuffer, a typed array or a DataView (its own range), copied on the JS
// thread (the app may change or detach the buffer once the call returns).
bool copy_bytes(napi_env env, napi_value value, std::string* out) {
  bool is = false;
  void* data = nullptr;
  size_t length = 0;
  if (napi_is_arraybuffer(env, value, &is) == napi_ok && is) {
    if (napi_get_arraybuffer_info(env, value, &data, &length) != napi_ok) return false;
  } else if (napi_is_typedarray(env, value, &is) == napi_ok && is) {
    // The element count differs between hosts (OHOS reports bytes): byteLength says it for both.
    napi_typedarray_type type;
    size_t count = 0, offset = 0;
    napi_value buffer = nullptr, byte_length = nullptr;
    double n = 0;
    if (napi_get_typedarray_info(env, value, &type, &count, &data, &buffer, &offset) != napi_ok ||
        napi_get_named_property(env, value, "byteLength", &byte_length) != napi_ok ||
        napi_get_value_double(env, byte_length, &n) != napi_ok || n < 0) {
      return false;
    }
    length = static_cast<size_t>(n);
  } else if (napi_is_dataview(env, value, &is) == napi_ok && is) {
    napi_value buffer = nullptr;
    size_t offset = 0;
    if (napi_get_dataview_info(env, value, &length, &data, &buffer, &offset) != napi_ok) return false;
  } else {
    return false;
  }
  out->assign(static_cast<const char*>(data), length);
  return true;
}

bool read_id(napi_env env, napi_value value, std::string* id) { return read_string(env, value, id); }

}  // namespace

napi_value export_session(napi_env env, const std::shared_ptr<ModelCore>& core, napi_value id_value) {
  auto id = std::make_shared<std::string>();
  if (!read_id(env, id_value, id.get())) return rejected_promise(env, "INVALID_ARGUMENT", "id must be a string");
  auto bytes = std::make_shared<std::string>();
  auto found = std::make_shared<bool>(true);
  return run_async(
      env, "edgellm.exportSession", core,
      [id, bytes, found](edgellm_runtime* rt, std::string* error) {
        size_t length = 0;
        edgellm_status st = edgellm_session_export(rt, id->c_str(), nullptr, 0, &length);
        // A concurrent request may replace the session between the two calls: ask again.
        for (int attempt = 0; attempt < 8 && st == EDGELLM_ERR_BUFFER_TOO_SMALL; ++attempt) {
          bytes->assign(length, '\0');
          st = edgellm_session_export(rt, id->c_str(), bytes->data(), bytes->size(), &length);
        }
        if (st == EDGELLM_ERR_NOT_FOUND) {
          *found = false;
          return EDGELLM_OK;
        }
        if (st != EDGELLM_OK) *error = last_error_message(st);
        bytes->resize(length);
        return st;
      },
      [bytes, found](napi_env env) -> napi_value {
        if (!*found) {
          napi_value null = nullptr;
          napi_get_null(env, &null);
          return null;
        }
        void* data = nullptr;
        napi_value buffer = nullptr;
        if (napi_create_arraybuffer(env, bytes->size(), &data, &buffer) != napi_ok) return nullptr;
        if (!bytes->empty()) std::memcpy(data, bytes->data(), bytes->size());
        return buffer;
      });
}

napi_value import_session(napi_env env, const std::shared_ptr<ModelCore>& core, napi_value id_value,
                          napi_value data_value) {
  auto id = std::make_shared<std::string>();
  auto bytes = std::make_shared<std::string>();
  if (!read_id(env, id_value, id.get())) return rejected_promise(env, "INVALID_ARGUMENT", "id must be a string");
  if (!copy_bytes(env, data_value, bytes.get())) {
    return rejected_promise(env, "INVALID_ARGUMENT", "data must be an ArrayBuffer, a typed array or a DataView");
  }
  auto positions = std::make_shared<int32_t>(0);
  return run_async(
      env, "edgellm.importSession", core,
      [id, bytes, positions](edgellm_runtime* rt, std::string* error) {
        const edgellm_status st = edgellm_session_import(rt, id->c_str(), bytes->data(), bytes->size(), positions.get());
        if (st != EDGELLM_OK) *error = last_error_message(st);
        return st;
      },
      [positions](napi_env env) { return js_number(env, *positions); });
}

napi_value load_session_file(napi_env env, const std::shared_ptr<ModelCore>& core, napi_value id_value,
                             napi_value path_value) {
  auto id = std::make_shared<std::string>();
  auto path = std::make_shared<std::string>();
  if (!read_id(env, id_value, id.get())) return rejected_promise(env, "INVALID_ARGUMENT", "id must be a string");
  if (!read_string(env, path_value, path.get())) return rejected_promise(env, "INVALID_ARGUMENT", "path must be a string");
  auto positions = std::make_shared<int32_t>(0);
  return run_async(
      env, "edgellm.loadSessionFile", core,
      [id, path, positions](edgellm_runtime* rt, std::string* error) {
        const edgellm_status st = edgellm_session_load_file(rt, id->c_str(), path->c_str(), positions.get());
        if (st != EDGELLM_OK) *error = last_error_message(st);
        return st;
      },
      [positions](napi_env env) { return js_number(env, *positions); });
}

napi_value save_session_file(napi_env env, const std::shared_ptr<ModelCore>& core, napi_value id_value,
                             napi_value path_value) {
  auto id = std::make_shared<std::string>();
  auto path = std::make_shared<std::string>();
  if (!read_id(env, id_value, id.get())) return rejected_promise(env, "INVALID_ARGUMENT", "id must be a string");
  if (!read_string(env, path_value, path.get())) return rejected_promise(env, "INVALID_ARGUMENT", "path must be a string");
  auto found = std::make_shared<bool>(true);
  return run_async(
      env, "edgellm.saveSessionFile", core,
      [id, path, found](edgellm_runtime* rt, std::string* error) {
        const edgellm_status st = edgellm_session_save_file(rt, id->c_str(), path->c_str());
        if (st == EDGELLM_ERR_NOT_FOUND) {
          *found = false;
          return EDGELLM_OK;
        }
        if (st != EDGELLM_OK) *error = last_error_message(st);
        return st;
      },
      [found](napi_env env) { return js_bool(env, *found); });
}

napi_value delete_session(napi_env env, edgellm_runtime* rt, napi_value id_value) {
  std::string id;
  if (!read_id(env, id_value, &id)) {
    throw_error(env, "INVALID_ARGUMENT", "id must be a string");
    return nullptr;
  }
  const edgellm_status st = edgellm_session_delete(rt, id.c_str());
  if (st == EDGELLM_ERR_NOT_FOUND) return js_bool(env, false);
  if (st != EDGELLM_OK) {
    throw_error(env, status_code(st), last_error_message(st));
    return nullptr;
  }
  return js_bool(env, true);
}

napi_value list_sessions(napi_env env, edgellm_runtime* rt) {
  std::string json;
  const edgellm_status st = read_library_text(
      [rt](char* buf, size_t capacity, size_t* length) { return edgellm_session_list_json(rt, buf, capacity, length); },
      &json);
  if (st != EDGELLM_OK) {
    throw_error(env, status_code(st), last_error_message(st));
    return nullptr;
  }
  return parse_json(env, json);
}

}  // namespace edgellm_napi
