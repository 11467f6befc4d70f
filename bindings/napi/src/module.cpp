// Module entry: exports { load, Model, version } and registers with the host
// (compat.h: NAPI_MODULE for Node.js, napi_module_register from a constructor for OHOS).
#include "addon.h"
#include "js.h"

namespace edgellm_napi {
namespace {

napi_value version(napi_env env, napi_callback_info) { return js_string(env, edgellm_version()); }

napi_value init(napi_env env, napi_value exports) {
  if (edgellm_abi_version() != EDGELLM_ABI_VERSION) {
    throw_error(env, "INTERNAL", "libedgellm ABI version differs from the header the addon was built with");
    return nullptr;
  }
  auto* data = new AddonData();
  if (napi_set_instance_data(
          env, data,
          [](napi_env env, void* d, void*) {
            auto* data = static_cast<AddonData*>(d);
            if (data->model_constructor) napi_delete_reference(env, data->model_constructor);
            delete data;
          },
          nullptr) != napi_ok) {
    delete data;
    throw_napi_failure(env, "napi_set_instance_data");
    return nullptr;
  }
  napi_value load_fn = nullptr, version_fn = nullptr;
  if (!define_model_class(env, exports, data) ||
      napi_create_function(env, "load", NAPI_AUTO_LENGTH, load, nullptr, &load_fn) != napi_ok ||
      napi_create_function(env, "version", NAPI_AUTO_LENGTH, version, nullptr, &version_fn) != napi_ok ||
      !set_property(env, exports, "load", load_fn) || !set_property(env, exports, "version", version_fn)) {
    throw_napi_failure(env, "module init");
    return nullptr;
  }
  return exports;
}

}  // namespace
}  // namespace edgellm_napi

static napi_value edgellm_napi_init(napi_env env, napi_value exports) { return edgellm_napi::init(env, exports); }

EDGELLM_NAPI_REGISTER(edgellm_napi_init)
