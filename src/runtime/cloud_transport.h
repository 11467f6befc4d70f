// How the router reaches the cloud: a transport the host provides, so the library itself opens
// no socket and links no network code. Each face supplies one:
//   C ABI   a C callback (edgellm_router_params.transport) that later calls edgellm_cloud_complete
//   NAPI    an async JS function (ArkTS: built on @ohos.net.http; Node: fetch)
//   CLI     tools/fetch/https_transport: libcurl, certificates verified
//
// A call is one OpenAI chat-completions POST to the tier's endpoint. The transport knows the
// endpoints (URL, key); the router only names the tier and builds the body.
#pragma once

#include <functional>
#include <string>

namespace edgellm {

struct CloudCall {
  std::string tier;   // "small" (low confidence, the usual cloud) or "large" (the second tier)
  std::string model;  // the model name the body asks for
  std::string body;   // the request JSON (router_policy.h: cloud_request_body)
};

struct CloudReply {
  int status = 0;     // HTTP status of the answer; 0 when there was none (transport failure)
  std::string body;   // the answer's body
  std::string error;  // why there is no answer ("connection refused", "certificate rejected")
};

class CloudTransport {
 public:
  virtual ~CloudTransport() = default;
  // Starts one call and returns. `done` must be called exactly once, from any thread, now or
  // later; it never blocks and may be called after the router has given up on the call (a
  // timeout, a cancelled request, the runtime destroyed): the reply is then dropped.
  virtual void send(CloudCall call, std::function<void(CloudReply)> done) = 0;
};

}  // namespace edgellm
