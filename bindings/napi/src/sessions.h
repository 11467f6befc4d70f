// The Model's session methods (sessions.cpp). JS thread; `core` may hold a released runtime
// (promises reject with SHUT_DOWN); the synchronous ones take the live runtime.
#ifndef EDGELLM_NAPI_SESSIONS_H
#define EDGELLM_NAPI_SESSIONS_H

#include <edgellm/edgellm.h>

#include <memory>

#include "compat.h"
#include "model_core.h"

namespace edgellm_napi {

// exportSession(id) -> Promise<ArrayBuffer | null>
napi_value export_session(napi_env env, const std::shared_ptr<ModelCore>& core, napi_value id);
// importSession(id, data: ArrayBuffer | TypedArray | DataView) -> Promise<positions>
napi_value import_session(napi_env env, const std::shared_ptr<ModelCore>& core, napi_value id, napi_value data);
// loadSessionFile(id, path) -> Promise<positions>
napi_value load_session_file(napi_env env, const std::shared_ptr<ModelCore>& core, napi_value id, napi_value path);
// saveSessionFile(id, path) -> Promise<boolean> (false: no session under id)
napi_value save_session_file(napi_env env, const std::shared_ptr<ModelCore>& core, napi_value id, napi_value path);
// deleteSession(id) -> boolean (false: none); listSessions() -> SessionList. Throw on failure.
napi_value delete_session(napi_env env, edgellm_runtime* runtime, napi_value id);
napi_value list_sessions(napi_env env, edgellm_runtime* runtime);

}  // namespace edgellm_napi

#endif  // EDGELLM_NAPI_SESSIONS_H
