// One binding source, two Node-API hosts: Node.js (node_api.h, NAPI_MODULE) and OpenHarmony /
// HarmonyOS (napi/native_api.h, registered by a static constructor calling napi_module_register).
// Everything else in bindings/napi/ is plain Node-API C calls that both hosts provide: NAPI_VERSION 8,
// and only functions HarmonyOS exports at API 12 or lower (scripts/check-napi-ohos.sh enforces both
// the imports of edgellm.node and a compile of this source against an OHOS-only header).
#ifndef EDGELLM_NAPI_COMPAT_H
#define EDGELLM_NAPI_COMPAT_H

#ifndef NAPI_VERSION
#define NAPI_VERSION 8
#endif

#if defined(EDGELLM_NAPI_OHOS)
#include <napi/native_api.h>
// `import m from 'libedgellm_napi.so'` looks the module up by the .so name without "lib".
#define EDGELLM_NAPI_MODULE_NAME "edgellm_napi"
#define EDGELLM_NAPI_REGISTER(init_fn)                                                                             \
  static napi_module edgellm_napi_module = {1, 0, nullptr, init_fn, EDGELLM_NAPI_MODULE_NAME, nullptr, {nullptr}}; \
  extern "C" __attribute__((constructor)) void edgellm_napi_register_module(void) {                                \
    napi_module_register(&edgellm_napi_module);                                                                    \
  }
#else
#include <node_api.h>
#define EDGELLM_NAPI_REGISTER(init_fn) NAPI_MODULE(edgellm, init_fn)
#endif

#endif  // EDGELLM_NAPI_COMPAT_H
