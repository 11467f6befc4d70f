// The C ABI of the router: the app's transport callback as a CloudTransport, and the call
// objects it completes later (from any thread, also after the runtime is gone).
#include <functional>
#include <memory>
#include <string>

#include "api/c_api_internal.h"

using namespace edgellm;
using capi::fail;
using capi::guard;

// One call awaiting its answer: owns the router's completion until edgellm_cloud_complete.
struct edgellm_cloud_call {
  std::function<void(CloudReply)> done;
};

namespace {

class CTransport final : public CloudTransport {
 public:
  CTransport(edgellm_cloud_transport fn, void* user) : fn_(fn), user_(user) {}
  void send(CloudCall call, std::function<void(CloudReply)> done) override {
    auto* c = new edgellm_cloud_call{std::move(done)};
    // The app now owns c until it completes it; nothing here touches it afterwards.
    fn_(c, call.tier.c_str(), call.model.c_str(), call.body.c_str(), call.body.size(), user_);
  }

 private:
  edgellm_cloud_transport fn_;
  void* user_;
};

}  // namespace

extern "C" {

edgellm_router_params edgellm_router_default_params(void) {
  edgellm_router_params p{};
  const RouterParams d;
  p.struct_size = sizeof p;
  p.local_threshold = d.local_threshold;
  p.cloud_threshold = d.cloud_threshold;
  p.privacy = d.privacy;
  p.verbatim_turns = d.verbatim_turns;
  p.cloud_timeout_ms = d.cloud_timeout_ms;
  p.cloud_on_failure = d.cloud_on_failure;
  p.cloud_model = nullptr;
  p.cloud_model_large = nullptr;
  p.summary_max_tokens = d.summary_max_tokens;
  p.transport = nullptr;
  p.transport_user_data = nullptr;
  return p;
}

edgellm_status edgellm_set_router(edgellm_runtime* runtime, const edgellm_router_params* params) {
  return guard([&] {
    Runtime& rt = capi::runtime_of(runtime);
    if (params == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "params is NULL");
    const edgellm_router_params p = capi::read_struct(params, edgellm_router_default_params(), "params");
    RouterParams r;
    r.local_threshold = p.local_threshold;
    r.cloud_threshold = p.cloud_threshold;
    r.privacy = p.privacy;
    r.verbatim_turns = p.verbatim_turns;
    r.cloud_timeout_ms = p.cloud_timeout_ms;
    r.cloud_on_failure = p.cloud_on_failure;
    if (p.cloud_model != nullptr) r.cloud_model = p.cloud_model;
    if (p.cloud_model_large != nullptr) r.cloud_model_large = p.cloud_model_large;
    r.summary_max_tokens = p.summary_max_tokens;
    if (p.transport != nullptr) r.transport = std::make_shared<CTransport>(p.transport, p.transport_user_data);
    rt.set_router(std::move(r));
    return EDGELLM_OK;
  });
}

edgellm_status edgellm_cloud_complete(edgellm_cloud_call* call, int32_t http_status, const char* body,
                                      size_t body_len, const char* error) {
  return guard([&] {
    if (call == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "call is NULL");
    // Checked before the call is taken: a refused completion changes nothing, so the app can
    // still complete the call correctly (else the request would wait for its timeout).
    if (body == nullptr && body_len > 0) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "body is NULL but body_len > 0");
    std::unique_ptr<edgellm_cloud_call> owned(call);
    CloudReply reply;
    reply.status = http_status;
    if (body != nullptr) reply.body.assign(body, body_len);
    if (error != nullptr) reply.error = error;
    if (http_status == 0 && reply.error.empty()) reply.error = "no answer";
    if (owned->done) owned->done(std::move(reply));
    return EDGELLM_OK;
  });
}

}  // extern "C"
