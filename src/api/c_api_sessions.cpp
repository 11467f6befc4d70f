// The C ABI's sessions: the runtime's session store by id, as bytes and as files.
#include <string>

#include "api/c_api_internal.h"

using namespace edgellm;
using capi::fail;
using capi::guard;

extern "C" {

edgellm_status edgellm_session_import(edgellm_runtime* runtime, const char* id, const void* bytes, size_t n_bytes,
                                      int32_t* positions) {
  if (positions != nullptr) *positions = 0;
  return guard([&] {
    Runtime& rt = capi::runtime_of(runtime);
    const std::string sid = capi::required(id, "id");
    if (bytes == nullptr && n_bytes > 0) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "bytes is NULL but n_bytes > 0");
    const int32_t n = rt.import_session(sid, std::string(static_cast<const char*>(bytes), n_bytes));
    if (positions != nullptr) *positions = n;
    return EDGELLM_OK;
  });
}

edgellm_status edgellm_session_export(edgellm_runtime* runtime, const char* id, void* buf, size_t capacity,
                                      size_t* length) {
  return guard([&] {
    Runtime& rt = capi::runtime_of(runtime);
    const std::string sid = capi::required(id, "id");
    const std::shared_ptr<const std::string> bytes = rt.export_session(sid);
    if (!bytes) return fail(EDGELLM_ERR_NOT_FOUND, "no session is kept under id '" + sid + "'");
    return capi::copy_bytes_out(*bytes, buf, capacity, length);
  });
}

edgellm_status edgellm_session_delete(edgellm_runtime* runtime, const char* id) {
  return guard([&] {
    Runtime& rt = capi::runtime_of(runtime);
    const std::string sid = capi::required(id, "id");
    if (!rt.delete_session(sid)) return fail(EDGELLM_ERR_NOT_FOUND, "no session is kept under id '" + sid + "'");
    return EDGELLM_OK;
  });
}

edgellm_status edgellm_session_list_json(edgellm_runtime* runtime, char* buf, size_t capacity, size_t* length) {
  return guard([&] {
    Runtime& rt = capi::runtime_of(runtime);
    return capi::copy_out(rt.sessions().to_json().dump(), buf, capacity, length);
  });
}

edgellm_status edgellm_session_load_file(edgellm_runtime* runtime, const char* id, const char* path,
                                         int32_t* positions) {
  if (positions != nullptr) *positions = 0;
  return guard([&] {
    Runtime& rt = capi::runtime_of(runtime);
    const int32_t n = rt.load_session_file(capi::required(id, "id"), capi::required(path, "path"));
    if (positions != nullptr) *positions = n;
    return EDGELLM_OK;
  });
}

edgellm_status edgellm_session_save_file(edgellm_runtime* runtime, const char* id, const char* path) {
  return guard([&] {
    Runtime& rt = capi::runtime_of(runtime);
    const std::string sid = capi::required(id, "id");
    if (!rt.save_session_file(sid, capi::required(path, "path"))) {
      return fail(EDGELLM_ERR_NOT_FOUND, "no session is kept under id '" + sid + "'");
    }
    return EDGELLM_OK;
  });
}

}  // extern "C"
