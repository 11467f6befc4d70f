// The pieces of the addon that meet in module.cpp: load() (load.cpp), the Model class
// (model.cpp: its synchronous methods and the ones on worker threads; sessions.cpp), generate
// (generation.cpp), warmup / trim (warmup.cpp), setRouter (router.cpp), the registry and the
// planner (registry.cpp). JS thread only.
#ifndef EDGELLM_NAPI_ADDON_H
#define EDGELLM_NAPI_ADDON_H

#include <memory>

#include "compat.h"
#include "model_core.h"

namespace edgellm_napi {

// Per-env state (napi_set_instance_data): the Model constructor, for load() to instantiate.
struct AddonData {
  napi_ref model_constructor = nullptr;
  void* constructing = nullptr;  // the handle new_model is passing to the constructor right now
  napi_ref docqa_constructor = nullptr;
  void* constructing_docqa = nullptr;  // the same for new DocQA objects (docqa.cpp)
};

// Defines class Model on exports and records its constructor in data. False: exception pending.
bool define_model_class(napi_env env, napi_value exports, AddonData* data);
// A new Model object owning core (nullptr: exception pending).
napi_value new_model(napi_env env, std::shared_ptr<ModelCore> core);
// The core of a Model object; nullptr (no exception) when `value` is not one.
std::shared_ptr<ModelCore> model_core_of(napi_env env, napi_value value);

// load(modelPath, options?) -> Promise<Model>.
napi_value load(napi_env env, napi_callback_info info);
// pack(modelPath, options?: { packDir, threads }) -> Promise<void> (pack.cpp).
napi_value pack(napi_env env, napi_callback_info info);

// Model.generate: a Generation { id, result, cancel } (never throws for bad input: the result
// promise rejects). core may hold a released runtime (result rejects with SHUT_DOWN).
napi_value generate(napi_env env, const std::shared_ptr<ModelCore>& core, napi_value input, napi_value options,
                    napi_value on_token);
// Model.warmup -> Promise<{ran, reason}>, settled when the library's warm-up callback ran (or
// skipped); Model.trim -> Promise<bytes released> (warmup.cpp).
napi_value warmup(napi_env env, const std::shared_ptr<ModelCore>& core);
napi_value trim(napi_env env, const std::shared_ptr<ModelCore>& core);

// Module functions over the registry and the planner, each -> Promise (registry.cpp):
// registryInstall, registryResolve, registryList, registrySetCurrent, registryRemove, plan.
bool define_registry_functions(napi_env env, napi_value exports);

}  // namespace edgellm_napi

#endif  // EDGELLM_NAPI_ADDON_H
