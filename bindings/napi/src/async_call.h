// run_async: one blocking library call (a swap, a session file, the registry, the planner) on a
// libuv worker thread, its promise settled on the JS thread:
//
//   JS thread: run_async() -> Promise     worker: work(runtime, &error) -> status     JS thread:
//   (a Use holds the runtime, so a        (the Use is dropped right after, so a       OK: resolve(env)
//   release() after this call waits)      release never waits for the JS thread)      else: reject {code}
//
// With a core, the call fails with SHUT_DOWN (rejected, nothing run) once the model is released.
#ifndef EDGELLM_NAPI_ASYNC_CALL_H
#define EDGELLM_NAPI_ASYNC_CALL_H

#include <edgellm/edgellm.h>

#include <functional>
#include <memory>
#include <string>

#include "compat.h"
#include "model_core.h"

namespace edgellm_napi {

// Worker thread: the library call(s) on `runtime` (nullptr without a core). Returns the status;
// on failure fills *error (last_error_message on the worker thread).
using AsyncWork = std::function<edgellm_status(edgellm_runtime* runtime, std::string* error)>;
// JS thread, after an OK status: the value the promise resolves with (nullptr: an exception is
// pending, and the promise rejects with it).
using AsyncResolve = std::function<napi_value(napi_env env)>;

// The promise, or nullptr with an exception pending when not even that could be made. `core`
// may be null (module functions).
napi_value run_async(napi_env env, const char* name, const std::shared_ptr<ModelCore>& core, AsyncWork work,
                     AsyncResolve resolve);

// A promise rejected with {code, message} at once.
napi_value rejected_promise(napi_env env, const std::string& code, const std::string& message);

}  // namespace edgellm_napi

#endif  // EDGELLM_NAPI_ASYNC_CALL_H
