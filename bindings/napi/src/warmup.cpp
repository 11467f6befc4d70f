// Model.warmup(): edgellm_warmup runs a short forward on the scheduler thread; its completion
// comes back through an AsyncOp channel and resolves the promise (also when the library skipped
// it: low memory, requests running, shutting down; warm-up is an optimisation, not a result).
#include "addon.h"
#include "async_op.h"
#include "js.h"

namespace edgellm_napi {

namespace {

class Warmup final : public AsyncOp {
 public:
  Warmup(std::shared_ptr<ModelCore> core, napi_deferred deferred) : AsyncOp(std::move(core)), deferred_(deferred) {}

  class Done final : public Message {
   public:
    explicit Done(Warmup* w) : w_(w) {}
    void deliver(napi_env env) override {
      w_->settled(env);
      napi_resolve_deferred(env, w_->deferred_, js_undefined(env));
    }

   private:
    Warmup* w_;
  };

  // Scheduler thread.
  static void on_done(bool, const char*, void* user_data) noexcept {
    auto* w = static_cast<Warmup*>(user_data);
    w->post(w->done_.release());
    w->close();
  }

  napi_deferred deferred_;
  std::unique_ptr<Done> done_ = std::make_unique<Done>(this);  // allocated up front
};

}  // namespace

napi_value warmup(napi_env env, const std::shared_ptr<ModelCore>& core) {
  napi_deferred deferred = nullptr;
  napi_value promise = nullptr;
  if (napi_create_promise(env, &deferred, &promise) != napi_ok) {
    throw_napi_failure(env, "napi_create_promise");
    return nullptr;
  }
  if (!core->service()) {
    reject_error(env, deferred, status_code(EDGELLM_ERR_SHUT_DOWN), "the model was released");
    return promise;
  }
  auto* w = new Warmup(core, deferred);
  if (!w->open(env, "edgellm.warmup")) return nullptr;  // w is gone
  edgellm_status st = edgellm_warmup(core->service(), &Warmup::on_done, w);
  if (st != EDGELLM_OK) {
    std::string message = last_error_message(st);
    w->settled(env);
    w->close();
    reject_error(env, deferred, status_code(st), message);
  }
  return promise;
}

}  // namespace edgellm_napi
