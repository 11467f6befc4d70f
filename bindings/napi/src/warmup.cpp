// Model.warmup() and Model.trim(): the library runs them on the scheduler thread and calls back
// once; the completion comes back through an AsyncOp channel and resolves the promise:
//   warmup -> { ran, reason } (also when the library skipped it: low memory, requests running,
//             shutting down; warm-up is an optimisation, not a result)
//   trim   -> the bytes released
#include <string>

#include "addon.h"
#include "async_op.h"
#include "js.h"

namespace edgellm_napi {

namespace {

class Completion final : public AsyncOp {
 public:
  Completion(std::shared_ptr<ModelCore> core, napi_deferred deferred) : AsyncOp(std::move(core)), deferred_(deferred) {}

  class Done final : public Message {
   public:
    explicit Done(Completion* c) : c_(c) {}
    void deliver(napi_env env) override {
      c_->settled(env);
      napi_value value = nullptr;
      if (c_->trim_) {
        value = js_number(env, static_cast<double>(c_->bytes_));
      } else {
        value = js_object(env);
        if (!set_property(env, value, "ran", js_bool(env, c_->ran_)) ||
            !set_property(env, value, "reason", js_string(env, c_->reason_))) {
          value = nullptr;
        }
      }
      if (value) {
        napi_resolve_deferred(env, c_->deferred_, value);
      } else {
        reject_error(env, c_->deferred_, "INTERNAL", "the result could not be built");
      }
    }

   private:
    Completion* c_;
  };

  // Scheduler thread. The fields are written before the post, read after delivery.
  static void on_warmup(bool ran, const char* reason, void* user_data) noexcept {
    auto* c = static_cast<Completion*>(user_data);
    c->ran_ = ran;
    try {
      c->reason_ = reason ? reason : "";
    } catch (...) {
    }
    c->finish();
  }
  static void on_trim(uint64_t bytes, void* user_data) noexcept {
    auto* c = static_cast<Completion*>(user_data);
    c->bytes_ = bytes;
    c->finish();
  }

  napi_deferred deferred_;
  bool trim_ = false;
  bool ran_ = false;
  std::string reason_;
  uint64_t bytes_ = 0;

 private:
  void finish() noexcept {
    post(done_.release());
    close();
  }
  std::unique_ptr<Done> done_ = std::make_unique<Done>(this);  // allocated up front
};

napi_value start(napi_env env, const std::shared_ptr<ModelCore>& core, bool trim) {
  napi_deferred deferred = nullptr;
  napi_value promise = nullptr;
  if (napi_create_promise(env, &deferred, &promise) != napi_ok) {
    throw_napi_failure(env, "napi_create_promise");
    return nullptr;
  }
  if (!core->runtime()) {
    reject_error(env, deferred, status_code(EDGELLM_ERR_SHUT_DOWN), "the model was released");
    return promise;
  }
  auto* c = new Completion(core, deferred);
  c->trim_ = trim;
  if (!c->open(env, trim ? "edgellm.trim" : "edgellm.warmup")) return nullptr;  // c is gone
  const edgellm_status st = trim ? edgellm_trim(core->runtime(), &Completion::on_trim, c)
                                 : edgellm_warmup(core->runtime(), &Completion::on_warmup, c);
  if (st != EDGELLM_OK) {
    std::string message = last_error_message(st);
    c->settled(env);
    c->close();
    reject_error(env, deferred, status_code(st), message);
  }
  return promise;
}

}  // namespace

napi_value warmup(napi_env env, const std::shared_ptr<ModelCore>& core) { return start(env, core, false); }
napi_value trim(napi_env env, const std::shared_ptr<ModelCore>& core) { return start(env, core, true); }

}  // namespace edgellm_napi
