// The C ABI of the hot swap and the degradation ladder (edgellm.h, "hot swap, degradation").
#include <string>

#include "api/c_api_internal.h"

using namespace edgellm;
using edgellm::capi::fail;
using edgellm::capi::guard;

extern "C" {

edgellm_status edgellm_swap_model(edgellm_service* service, const char* model_path, const char* version) {
  return guard([&] {
    if (service == nullptr || model_path == nullptr || version == nullptr) {
      return fail(EDGELLM_ERR_INVALID_ARGUMENT, "service, model_path and version are required");
    }
    const std::string v = version;
    if (v.empty() || v.size() > 64) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "version must be 1-64 bytes");
    if (service->host->on_scheduler_thread()) {
      return fail(EDGELLM_ERR_WRONG_THREAD, "edgellm_swap_model called from the service's own callback");
    }
    service->host->swap_model(model_path, v, service->host->current_params());
    return EDGELLM_OK;
  });
}

edgellm_status edgellm_set_pressure(edgellm_service* service, const edgellm_pressure* pressure) {
  return guard([&] {
    if (service == nullptr || pressure == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "service or pressure is NULL");
    if (pressure->memory_level < 0 || pressure->memory_level > 4 || pressure->thermal_level < 0 ||
        pressure->thermal_level > 3) {
      return fail(EDGELLM_ERR_INVALID_ARGUMENT, "memory_level must be 0-4 and thermal_level 0-3");
    }
    PressureSignals s;
    s.memory_level = pressure->memory_level;
    s.thermal_level = pressure->thermal_level;
    s.power_save = pressure->power_save;
    service->ladder->set_signals(s);
    return EDGELLM_OK;
  });
}

edgellm_status edgellm_set_fallback_model(edgellm_service* service, const char* model_path, const char* version) {
  return guard([&] {
    if (service == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "service is NULL");
    if (model_path == nullptr) {
      service->ladder->set_smaller_models({});
      return EDGELLM_OK;
    }
    const std::string v = version != nullptr ? version : "fallback";
    if (v.empty() || v.size() > 64) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "version must be 1-64 bytes");
    service->ladder->set_smaller_models({{model_path, v}});
    return EDGELLM_OK;
  });
}

edgellm_status edgellm_degradation_json(edgellm_service* service, char* buf, size_t capacity, size_t* length) {
  return guard([&] {
    if (service == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "service is NULL");
    return capi::copy_out(service->ladder->metrics_json().dump(), buf, capacity, length);
  });
}

}  // extern "C"
