#include "model_core.h"

#include "router.h"

namespace edgellm_napi {

void ModelCore::Use::reset() {
  if (!core_) return;
  {
    std::lock_guard<std::mutex> lock(core_->mu_);
    --core_->uses_;
  }
  core_->cv_.notify_all();
  core_ = nullptr;
  runtime_ = nullptr;
}

ModelCore::Use ModelCore::use() {
  if (!runtime_) return Use();
  std::lock_guard<std::mutex> lock(mu_);
  ++uses_;
  return Use(this, runtime_);
}

void ModelCore::add_transport(std::shared_ptr<RouterTransport> transport) {
  std::lock_guard<std::mutex> lock(mu_);
  transports_.push_back(std::move(transport));
}

bool ModelCore::begin_release() {
  edgellm_runtime* r = runtime_;
  if (!r) return false;
  runtime_ = nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  pending_ = r;
  return true;
}

edgellm_runtime* ModelCore::claim_pending() {
  std::lock_guard<std::mutex> lock(mu_);
  edgellm_runtime* r = pending_;
  pending_ = nullptr;
  if (r) destroying_ = true;
  return r;
}

void ModelCore::destroy(edgellm_runtime* runtime) {
  std::vector<std::shared_ptr<RouterTransport>> transports;
  {
    std::unique_lock<std::mutex> lock(mu_);
    destroying_ = true;
    cv_.wait(lock, [this] { return uses_ == 0; });
  }
  // Every request ends (on_finish) and the router stops calling transports before this returns.
  edgellm_runtime_destroy(runtime);
  {
    std::lock_guard<std::mutex> lock(mu_);
    transports.swap(transports_);
  }
  for (const auto& t : transports) t->shutdown();  // no lock held: it completes calls
  {
    std::lock_guard<std::mutex> lock(mu_);
    destroying_ = false;
  }
  cv_.notify_all();
}

void ModelCore::release_pending() {
  if (edgellm_runtime* r = claim_pending()) destroy(r);
}

void ModelCore::destroy_now() {
  if (edgellm_runtime* r = runtime_) {
    runtime_ = nullptr;
    destroy(r);
    return;
  }
  release_pending();
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return !destroying_; });
}

}  // namespace edgellm_napi
