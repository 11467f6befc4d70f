// The C ABI of device fitness: the planner and the model registry (edgellm.h, "device fitness").
#include <optional>
#include <string>

#include "api/c_api_internal.h"
#include "core/json.h"
#include "device/device_profile.h"
#include "device/planner.h"
#include "registry/crash_loop_guard.h"
#include "registry/model_registry.h"

using namespace edgellm;
using edgellm::capi::fail;
using edgellm::capi::guard;

namespace {

double number_or(const Json& j, const char* key, double fallback) {
  const Json* v = j.find(key);
  if (!v || v->is_null()) return fallback;
  if (!v->is_number()) throw Error(ErrorCode::kInvalidArgument, std::string("plan request: '") + key + "' must be a number");
  return v->as_number();
}

}  // namespace

edgellm_status edgellm_plan_json(const char* request_json, char* buf, size_t capacity, size_t* length) {
  return guard([&] {
    if (request_json == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "request_json is NULL");
    if (length == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "length is NULL");
    Json req;
    try {
      req = Json::parse(request_json, 32);
    } catch (const Error& e) {
      return fail(EDGELLM_ERR_INVALID_ARGUMENT, std::string("request_json: ") + e.what());
    }
    if (!req.is_object()) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "request_json must be a JSON object");
    DeviceProfile device;
    const Json* d = req.find("device");
    if (d == nullptr || d->is_null()) {
      device = detect_this_device();
    } else if (d->is_string()) {
      device = load_device_profile(d->as_string());
    } else {
      device = DeviceProfile::from_json(*d);
    }
    PlanOptions o;
    o.max_ctx = static_cast<int32_t>(number_or(req, "max_ctx", o.max_ctx));
    o.min_ctx = static_cast<int32_t>(number_or(req, "min_ctx", o.min_ctx));
    o.n_parallel = static_cast<int32_t>(number_or(req, "n_parallel", o.n_parallel));
    o.headroom = number_or(req, "headroom", o.headroom);
    if (const Json* p = req.find("power_mode"); p && p->is_string()) o.power = parse_power_mode(p->as_string());
    o.min_decode_tokens_per_second = number_or(req, "min_decode_tokens_per_second", 0);
    if (const Json* dm = req.find("draft_model"); dm && !dm->is_null()) {
      if (!dm->is_string()) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "request_json: 'draft_model' must be a path");
      o.draft_model = dm->as_string();
    }
    std::vector<PlanCandidate> candidates;
    std::optional<ModelRegistry> registry;
    std::optional<CrashLoopGuard> crash_guard;
    if (const Json* r = req.find("registry"); r && r->is_string()) {
      registry.emplace(r->as_string());
      crash_guard.emplace(registry->guard_dir());
      o.guard = &*crash_guard;
      const std::vector<ModelManifest> manifests = registry->list();
      const std::vector<std::optional<double>> scores = ranking_task_scores(manifests);
      for (size_t i = 0; i < manifests.size(); ++i) {
        const ModelManifest& m = manifests[i];
        candidates.push_back({m.key(), registry->model_path(m), scores[i], m.prefill_tokens_per_second,
                              m.decode_tokens_per_second});
      }
    }
    if (const Json* ms = req.find("models"); ms && ms->is_array()) {
      for (const Json& m : ms->as_array()) {
        if (!m.is_string()) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "request_json: 'models' must hold paths");
        candidates.push_back({m.as_string(), m.as_string(), std::nullopt});
      }
    }
    if (candidates.empty()) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "request_json names no models and no registry");
    return capi::copy_out(make_plan(device, candidates, o).to_json().dump(), buf, capacity, length);
  });
}

edgellm_status edgellm_registry_install(const char* registry_dir, const char* file_path, const char* name,
                                        const char* version, const char* sha256, bool move_file, char* buf,
                                        size_t capacity, size_t* length) {
  return guard([&] {
    if (!registry_dir || !file_path || !name || !version || !length) {
      return fail(EDGELLM_ERR_INVALID_ARGUMENT, "registry_dir, file_path, name, version and length are required");
    }
    ModelRegistry reg(registry_dir);
    ModelManifest m;
    m.name = name;
    m.version = version;
    ModelRegistry::InstallOptions io;
    io.expected_sha256 = sha256 ? sha256 : "";
    if (!io.expected_sha256.empty() && !is_sha256_hex(io.expected_sha256)) {
      return fail(EDGELLM_ERR_INVALID_ARGUMENT, "sha256 must be 64 hex digits");
    }
    const ModelManifest done = move_file ? reg.install_moved(file_path, m, io) : reg.install_file(file_path, m, io);
    return capi::copy_out(done.to_json().dump(), buf, capacity, length);
  });
}

edgellm_status edgellm_registry_resolve(const char* registry_dir, const char* name_or_key, char* buf, size_t capacity,
                                        size_t* length) {
  return guard([&] {
    if (!registry_dir || !name_or_key || !length) {
      return fail(EDGELLM_ERR_INVALID_ARGUMENT, "registry_dir, name_or_key and length are required");
    }
    ModelRegistry reg(registry_dir);
    if (!reg.resolve(name_or_key)) {
      return fail(EDGELLM_ERR_NOT_FOUND, std::string("'") + name_or_key + "' is not installed in " + registry_dir);
    }
    return capi::copy_out(reg.path_for_load(name_or_key), buf, capacity, length);
  });
}

edgellm_status edgellm_registry_list_json(const char* registry_dir, char* buf, size_t capacity, size_t* length) {
  return guard([&] {
    if (!registry_dir || !length) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "registry_dir and length are required");
    ModelRegistry reg(registry_dir);
    const Json out = registry_listing_json(reg, CrashLoopGuard(reg.guard_dir()));
    return capi::copy_out(out.dump(), buf, capacity, length);
  });
}

edgellm_status edgellm_registry_set_current(const char* registry_dir, const char* name, const char* version) {
  return guard([&] {
    if (!registry_dir || !name || !version) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "registry_dir, name and version are required");
    ModelRegistry reg(registry_dir);
    if (!reg.get(name, version)) {
      return fail(EDGELLM_ERR_NOT_FOUND, std::string(name) + "@" + version + " is not installed in " + registry_dir);
    }
    reg.set_current(name, version);
    return EDGELLM_OK;
  });
}

edgellm_status edgellm_registry_remove(const char* registry_dir, const char* name, const char* version) {
  return guard([&] {
    if (!registry_dir || !name || !version) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "registry_dir, name and version are required");
    ModelRegistry reg(registry_dir);
    if (!reg.get(name, version)) {
      return fail(EDGELLM_ERR_NOT_FOUND, std::string(name) + "@" + version + " is not installed in " + registry_dir);
    }
    const auto current = reg.current(name);
    if (current && current->version == version) {
      return fail(EDGELLM_ERR_INVALID_ARGUMENT, std::string(name) + "@" + version +
                                                    " is the current version: make another one current first");
    }
    reg.remove(name, version);
    return EDGELLM_OK;
  });
}
