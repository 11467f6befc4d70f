// A JS class whose every object owns one native handle and is made from C++ only (Model by
// load(), DocQA by openDocQA()): `new Model()` from JS carries no handle and is refused. The
// maker parks the handle in a slot of AddonData while it calls the constructor, which takes it
// from there and wraps it (the object's finalizer deletes it). JS thread only.
#ifndef EDGELLM_NAPI_NATIVE_CLASS_H
#define EDGELLM_NAPI_NATIVE_CLASS_H

#include <memory>
#include <utility>

#include "addon.h"
#include "js.h"

namespace edgellm_napi {

// The class's constructor: wraps the parked handle, or throws INVALID_ARGUMENT `refusal` when
// none is parked (called from JS).
template <class Handle>
napi_value construct_native(napi_env env, napi_callback_info info, void* AddonData::*slot, const char* refusal) {
  napi_value self = nullptr;
  void* instance = nullptr;
  if (napi_get_cb_info(env, info, nullptr, nullptr, &self, nullptr) != napi_ok) return nullptr;
  if (napi_get_instance_data(env, &instance) != napi_ok || !instance) return nullptr;
  auto* data = static_cast<AddonData*>(instance);
  auto* handle = static_cast<Handle*>(data->*slot);
  if (!handle) {
    throw_error(env, "INVALID_ARGUMENT", refusal);
    return nullptr;
  }
  data->*slot = nullptr;  // one object per handle, even if the wrap fails
  if (napi_wrap(
          env, self, handle, [](napi_env, void* d, void*) { delete static_cast<Handle*>(d); }, nullptr, nullptr) !=
      napi_ok) {
    delete handle;
    throw_napi_failure(env, "napi_wrap");
    return nullptr;
  }
  return self;
}

// A new object of the class whose constructor reference is `ctor`, owning a Handle{core};
// nullptr with an exception pending (`what`) if it cannot be made.
template <class Handle, class Core>
napi_value new_native(napi_env env, napi_ref AddonData::*ctor, void* AddonData::*slot, std::shared_ptr<Core> core,
                      const char* what) {
  void* instance = nullptr;
  napi_value cls = nullptr, obj = nullptr;
  if (napi_get_instance_data(env, &instance) != napi_ok || !instance ||
      napi_get_reference_value(env, static_cast<AddonData*>(instance)->*ctor, &cls) != napi_ok) {
    throw_napi_failure(env, what);
    return nullptr;
  }
  auto* data = static_cast<AddonData*>(instance);
  data->*slot = new Handle{std::move(core)};  // the constructor takes it
  const bool ok = napi_new_instance(env, cls, 0, nullptr, &obj) == napi_ok;
  if (data->*slot) {  // the constructor did not run
    delete static_cast<Handle*>(data->*slot);
    data->*slot = nullptr;
  }
  if (!ok) {
    throw_napi_failure(env, what);
    return nullptr;
  }
  return obj;
}

}  // namespace edgellm_napi

#endif  // EDGELLM_NAPI_NATIVE_CLASS_H
