// The C ABI of the degradation ladder: pressure in, the fallback model, the ladder's state out.
#include <string>

#include "api/c_api_internal.h"

using namespace edgellm;
using capi::fail;
using capi::guard;

extern "C" {

edgellm_status edgellm_set_pressure(edgellm_runtime* runtime, const edgellm_pressure* pressure) {
  return guard([&] {
    Runtime& rt = capi::runtime_of(runtime);
    if (pressure == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "pressure is NULL");
    edgellm_pressure defaults{};
    defaults.struct_size = sizeof defaults;
    const edgellm_pressure p = capi::read_struct(pressure, defaults, "pressure");
    PressureSignals s;
    s.memory_level = p.memory_level;
    s.thermal_level = p.thermal_level;
    s.power_save = p.power_save;
    rt.set_pressure(s);
    return EDGELLM_OK;
  });
}

edgellm_status edgellm_set_fallback_model(edgellm_runtime* runtime, const char* model_path, const char* version) {
  return guard([&] {
    Runtime& rt = capi::runtime_of(runtime);
    if (model_path == nullptr) {
      rt.set_fallback_models({});
      return EDGELLM_OK;
    }
    const std::string v = version != nullptr ? version : "fallback";
    if (v.empty() || v.size() > 64) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "version must be 1 to 64 bytes");
    rt.set_fallback_models({{model_path, v}});
    return EDGELLM_OK;
  });
}

edgellm_status edgellm_degradation_json(edgellm_runtime* runtime, char* buf, size_t capacity, size_t* length) {
  return guard([&] { return capi::copy_out(capi::runtime_of(runtime).degradation_json().dump(), buf, capacity, length); });
}

edgellm_status edgellm_swap_model(edgellm_runtime* runtime, const char* model_path, const char* version) {
  return guard([&] {
    Runtime& rt = capi::runtime_of(runtime);
    const std::string path = capi::required(model_path, "model_path");
    const std::string v = capi::required(version, "version");
    if (rt.on_callback_thread()) {
      return fail(EDGELLM_ERR_WRONG_THREAD, "edgellm_swap_model called from the runtime's own callback");
    }
    rt.swap_model(path, v);
    return EDGELLM_OK;
  });
}

edgellm_status edgellm_reload_registry(edgellm_runtime* runtime, char* version_buf, size_t capacity, size_t* length) {
  return guard([&] {
    Runtime& rt = capi::runtime_of(runtime);
    if (rt.on_callback_thread()) {
      return fail(EDGELLM_ERR_WRONG_THREAD, "edgellm_reload_registry called from the runtime's own callback");
    }
    const std::string v = rt.reload_from_registry();
    if (length == nullptr && version_buf == nullptr) return EDGELLM_OK;
    return capi::copy_out(v, version_buf, capacity, length);
  });
}

}  // extern "C"
