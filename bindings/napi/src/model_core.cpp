#include "model_core.h"

namespace edgellm_napi {

bool ModelCore::begin_release() {
  edgellm_service* s = service_;
  if (!s) return false;
  service_ = nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  pending_ = s;
  return true;
}

edgellm_service* ModelCore::claim_pending() {
  std::lock_guard<std::mutex> lock(mu_);
  edgellm_service* s = pending_;
  pending_ = nullptr;
  if (s) destroying_ = true;
  return s;
}

void ModelCore::destroyed() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    destroying_ = false;
  }
  destroyed_cv_.notify_all();
}

void ModelCore::release_pending() {
  if (edgellm_service* s = claim_pending()) {
    edgellm_service_destroy(s);
    destroyed();
  }
}

void ModelCore::destroy_now() {
  if (edgellm_service* s = service_) {
    service_ = nullptr;
    edgellm_service_destroy(s);
    return;
  }
  release_pending();
  std::unique_lock<std::mutex> lock(mu_);
  destroyed_cv_.wait(lock, [this] { return !destroying_; });
}

}  // namespace edgellm_napi
