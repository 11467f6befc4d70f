// Model.setRouter: the library's router with a JS transport (edgellm.h, "the router").
//
//   router thread (the library's)          JS thread
//   transport(call, tier, model, body) --> CallMessage::deliver: transport({tier, model, body})
//     keeps the call under an id,            returns a Promise (or a value); its then() gets two
//     posts a CallMessage (never waits)      native functions bound to the id
//                                           onFulfilled({status, body} | {error}) / onRejected /
//                                           a throw -> complete(id): edgellm_cloud_complete
//
// The JS function is never called with a library lock held (the router calls the C transport
// without one, and the call reaches JS through the thread-safe function's queue) nor with ours.
// Each call is completed exactly once: by its settled promise, or, when the runtime is destroyed
// first, by shutdown() (with an error; the library drops it). A promise that settles after that
// finds its id gone and does nothing, so release() never waits for JS and nothing leaks.
#ifndef EDGELLM_NAPI_ROUTER_H
#define EDGELLM_NAPI_ROUTER_H

#include <edgellm/edgellm.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "compat.h"

namespace edgellm_napi {

class RouterTransport : public std::enable_shared_from_this<RouterTransport> {
 public:
  // Creates the thread-safe function that calls `fn` (JS thread). nullptr with an exception
  // pending on failure.
  static std::shared_ptr<RouterTransport> create(napi_env env, napi_value fn);
  ~RouterTransport();

  // The C transport (edgellm_router_params.transport); user_data is the RouterTransport. Router
  // thread.
  static void on_call(edgellm_cloud_call* call, const char* tier, const char* model, const char* body,
                      size_t body_len, void* user_data);

  // Completes call `id` unless it was completed already (any thread; no lock held while the
  // library is called).
  void complete(uint64_t id, int32_t http_status, const std::string& body, const std::string& error);
  // True while call `id` awaits its answer.
  bool pending(uint64_t id);
  // After the runtime is destroyed (no more on_call): completes every pending call with an
  // error and releases the thread-safe function. Any thread; idempotent.
  void shutdown();

 private:
  RouterTransport() = default;
  static void call_js(napi_env env, napi_value fn, void* context, void* data);
  static void finalize(napi_env env, void* data, void* hint);

  std::mutex mu_;
  napi_threadsafe_function tsfn_ = nullptr;  // guarded by mu_; nullptr once released or finalized
  bool closed_ = false;                      // guarded by mu_
  uint64_t next_id_ = 1;                     // guarded by mu_
  std::unordered_map<uint64_t, edgellm_cloud_call*> calls_;  // guarded by mu_
};

// Model.setRouter(options): reads RouterOptions into edgellm_router_params and sets them; throws
// (INVALID_ARGUMENT, SHUT_DOWN) with an exception pending and returns nullptr on failure.
class ModelCore;
napi_value set_router(napi_env env, const std::shared_ptr<ModelCore>& core, napi_value options);

}  // namespace edgellm_napi

#endif  // EDGELLM_NAPI_ROUTER_H
