#include "model_core.h"

namespace edgellm_napi {

edgellm_service* ModelCore::begin_release() {
  edgellm_service* s = service_;
  if (!s) return nullptr;
  service_ = nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  releasing_ = true;
  return s;
}

void ModelCore::end_release() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    releasing_ = false;
  }
  released_cv_.notify_all();
}

void ModelCore::destroy_now() {
  if (edgellm_service* s = service_) {
    service_ = nullptr;
    edgellm_service_destroy(s);
    return;
  }
  std::unique_lock<std::mutex> lock(mu_);
  released_cv_.wait(lock, [this] { return !releasing_; });
}

}  // namespace edgellm_napi
