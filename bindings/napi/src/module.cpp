// Module entry: exports { load, pack, Model, version, abiVersion, registryInstall, registryResolve,
// registryList, registrySetCurrent, registryRemove, plan } and registers with the host
// (compat.h: NAPI_MODULE for Node.js, napi_module_register from a constructor for OHOS).
#include "addon.h"
#include "docqa.h"
#include "js.h"

#if defined(EDGELLM_NAPI_OHOS)
#include <hilog/log.h>
#endif

namespace edgellm_napi {
namespace {

#if defined(EDGELLM_NAPI_OHOS)
// On the device the library's log lines go to hilog (`hilog -T EdgeLLM`). The callback may run on
// any thread, concurrently; OH_LOG_Print is thread-safe. Messages never contain the user's text
// (edgellm.h), so they are public.
void to_hilog(edgellm_log_level level, const char* message, void*) {
  const LogLevel hilog_level = level == EDGELLM_LOG_ERROR  ? LOG_ERROR
                               : level == EDGELLM_LOG_WARN ? LOG_WARN
                               : level == EDGELLM_LOG_INFO ? LOG_INFO
                                                           : LOG_DEBUG;
  OH_LOG_Print(LOG_APP, hilog_level, 0xE11A, "EdgeLLM", "%{public}s", message);
}
#endif

napi_value version(napi_env env, napi_callback_info) {
  return js_string(env, edgellm_version());
}

napi_value abi_version(napi_env env, napi_callback_info) {
  return js_number(env, edgellm_abi_version());
}

napi_value init(napi_env env, napi_value exports) {
  if (edgellm_abi_version() != EDGELLM_ABI_VERSION) {
    throw_error(env, "INTERNAL", "libedgellm ABI version differs from the header the addon was built with");
    return nullptr;
  }
#if defined(EDGELLM_NAPI_OHOS)
  edgellm_set_log_callback(to_hilog, nullptr, EDGELLM_LOG_INFO);
#endif
  auto* data = new AddonData();
  if (napi_set_instance_data(
          env, data,
          [](napi_env env, void* d, void*) {
            auto* data = static_cast<AddonData*>(d);
            if (data->model_constructor) napi_delete_reference(env, data->model_constructor);
            if (data->docqa_constructor) napi_delete_reference(env, data->docqa_constructor);
            delete data;
          },
          nullptr) != napi_ok) {
    delete data;
    throw_napi_failure(env, "napi_set_instance_data");
    return nullptr;
  }
  napi_value load_fn = nullptr, pack_fn = nullptr, version_fn = nullptr, abi_fn = nullptr;
  if (!define_model_class(env, exports, data) || !define_registry_functions(env, exports) ||
      !define_docqa(env, exports, data) ||
      napi_create_function(env, "abiVersion", NAPI_AUTO_LENGTH, abi_version, nullptr, &abi_fn) != napi_ok ||
      !set_property(env, exports, "abiVersion", abi_fn) ||
      napi_create_function(env, "load", NAPI_AUTO_LENGTH, load, nullptr, &load_fn) != napi_ok ||
      napi_create_function(env, "pack", NAPI_AUTO_LENGTH, pack, nullptr, &pack_fn) != napi_ok ||
      napi_create_function(env, "version", NAPI_AUTO_LENGTH, version, nullptr, &version_fn) != napi_ok ||
      !set_property(env, exports, "load", load_fn) || !set_property(env, exports, "pack", pack_fn) ||
      !set_property(env, exports, "version", version_fn)) {
    throw_napi_failure(env, "module init");
    return nullptr;
  }
  return exports;
}

}  // namespace
}  // namespace edgellm_napi

static napi_value edgellm_napi_init(napi_env env, napi_value exports) {
  return edgellm_napi::init(env, exports);
}

EDGELLM_NAPI_REGISTER(edgellm_napi_init)
