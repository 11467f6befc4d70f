#include "runtime/model_host.h"

#include <chrono>

#include "core/error.h"
#include "core/log.h"
#include "model/model.h"

namespace edgellm {
ModelHost::ModelHost(const std::string& path, std::string version, const ServiceParams& params) {
  auto g = std::make_shared<Generation>();
  g->version = std::move(version);
  g->params = params;
  g->model = Model::load(path, params.load);
  g->service = std::make_shared<InferenceService>(g->model, params);
  current_ = std::move(g);
  reaper_ = std::thread([this] { reap(); });
}

ModelHost::~ModelHost() { shutdown(); }

void ModelHost::shutdown() {
  std::lock_guard<std::mutex> once(shutdown_mutex_);
  std::vector<std::shared_ptr<Generation>> all;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    all = retired_;
    if (current_) all.push_back(current_);
  }
  changed_.notify_all();
  if (reaper_.joinable()) reaper_.join();  // finishes a generation it was shutting down
  for (auto& g : all) g->service->shutdown();  // every request gets on_finish (cancelled)
}

ModelHost::Submitted ModelHost::submit(ServiceRequest request) {
  std::shared_ptr<Generation> g;
  uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    require(!stopping_ && current_, ErrorCode::kCancelled, "the model host is shutting down");
    g = current_;
    // Counted before the submit, under the lock: a swap that retires g now cannot reap it
    // before this request is accounted for.
    g->outstanding->fetch_add(1);
    id = next_id_++;
    routes_[id] = Route{g, 0, false};
  }
  auto outstanding = g->outstanding;
  if (request.on_token) {
    request.on_token = [id, user = std::move(request.on_token)](const TokenEvent& e) {
      TokenEvent mine = e;
      mine.id = id;
      return user(mine);
    };
  }
  request.on_finish = [this, id, outstanding, version = g->version,
                       user = std::move(request.on_finish)](RequestResult& r) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      routes_.erase(id);
    }
    if (user) {
      r.id = id;
      r.model_version = version;
      user(r);
    }
    if (outstanding->fetch_sub(1) == 1) {
      // Wake the reaper (it re-checks under the lock). No host lock is held by the service.
      std::lock_guard<std::mutex> lock(mutex_);
      changed_.notify_all();
    }
  };
  RequestId inner = 0;
  try {
    inner = g->service->submit(std::move(request));
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    routes_.erase(id);
    outstanding->fetch_sub(1);  // not accepted: no on_finish will come
    changed_.notify_all();
    throw;
  }
  bool cancel_now = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = routes_.find(id); it != routes_.end()) {  // absent: it has finished already
      it->second.inner = inner;
      cancel_now = it->second.cancel_requested;
    }
  }
  if (cancel_now) g->service->cancel(inner);
  return {id, g->version};
}

void ModelHost::submit_classify(ClassifyRequest request, std::function<void(ClassifyOutcome&)> on_finish) {
  std::shared_ptr<Generation> g;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    require(!stopping_ && current_, ErrorCode::kCancelled, "the model host is shutting down");
    g = current_;
    g->outstanding->fetch_add(1);  // before the submit, under the lock (as submit() does)
  }
  auto outstanding = g->outstanding;
  auto done = [this, outstanding, user = std::move(on_finish)](ClassifyOutcome& out) {
    if (user) user(out);
    if (outstanding->fetch_sub(1) == 1) {
      std::lock_guard<std::mutex> lock(mutex_);
      changed_.notify_all();
    }
  };
  try {
    (void)g->service->submit_classify(std::move(request), std::move(done));
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    outstanding->fetch_sub(1);  // not accepted: no on_finish will come
    changed_.notify_all();
    throw;
  }
}

uint64_t ModelHost::reserve_id() {
  std::lock_guard<std::mutex> lock(mutex_);
  return next_id_++;
}

bool ModelHost::cancel(uint64_t id) {
  std::shared_ptr<Generation> g;
  RequestId inner = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = routes_.find(id);
    if (it == routes_.end()) return false;
    if (it->second.inner == 0) {
      it->second.cancel_requested = true;  // submit() is still returning: it cancels then
      return true;
    }
    g = it->second.generation;
    inner = it->second.inner;
  }
  return g->service->cancel(inner);
}

void ModelHost::install(std::shared_ptr<Generation> next) {
  std::string old;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) {
      next->service->shutdown();
      throw Error(ErrorCode::kCancelled, "the model host is shutting down");
    }
    old = current_->version;
    if (paused_) next->service->pause();  // before it is visible: nothing runs on it
    retired_.push_back(std::move(current_));
    current_ = std::move(next);
  }
  ++swaps_;
  changed_.notify_all();
  log_message(LogLevel::kInfo, "model host: switched from version " + old + " to " + current_version());
}

void ModelHost::swap_model(const std::string& path, const std::string& version, const ServiceParams& params) {
  auto g = std::make_shared<Generation>();
  g->version = version;
  g->params = params;
  g->model = Model::load(path, params.load);  // throws: nothing changed, the current one serves
  g->service = std::make_shared<InferenceService>(g->model, params);
  install(std::move(g));
}

void ModelHost::reconfigure(const ServiceParams& params) {
  auto g = std::make_shared<Generation>();
  std::shared_ptr<const Model> draft;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    require(current_ != nullptr, ErrorCode::kCancelled, "the model host is shutting down");
    g->version = current_->version;
    g->model = current_->model;  // the same mapping: no reload
    // The same draft model file: its mapping too.
    if (!params.draft_model_path.empty() && params.draft_model_path == current_->params.draft_model_path) {
      draft = current_->service->draft_model();
    }
  }
  g->params = params;
  g->service = std::make_shared<InferenceService>(g->model, params, std::move(draft));
  install(std::move(g));
}

void ModelHost::pause() {
  std::lock_guard<std::mutex> lock(mutex_);  // pause() only sets a flag in the service
  paused_ = true;
  if (current_) current_->service->pause();
  for (const auto& g : retired_) g->service->pause();
}

void ModelHost::resume() {
  std::lock_guard<std::mutex> lock(mutex_);
  paused_ = false;
  if (current_) current_->service->resume();
  for (const auto& g : retired_) g->service->resume();
}

bool ModelHost::on_scheduler_thread() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (current_ && current_->service->on_scheduler_thread()) return true;
  for (const auto& g : retired_) {
    if (g->service->on_scheduler_thread()) return true;
  }
  return false;
}

std::string ModelHost::current_version() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return current_ ? current_->version : std::string();
}

ServiceParams ModelHost::current_params() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return current_ ? current_->params : ServiceParams{};
}

std::shared_ptr<InferenceService> ModelHost::current_service() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return current_ ? current_->service : nullptr;
}

std::vector<std::string> ModelHost::live_versions() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> v;
  if (current_) v.push_back(current_->version);
  for (const auto& g : retired_) v.push_back(g->version);
  return v;
}

bool ModelHost::wait_drained(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] { return retired_.empty() && reaping_ == 0; });
}

void ModelHost::reap() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] {
      if (stopping_) return true;
      for (const auto& g : retired_) {
        if (g->outstanding->load() == 0) return true;
      }
      return false;
    });
    if (stopping_) return;
    std::vector<std::shared_ptr<Generation>> done;
    for (auto it = retired_.begin(); it != retired_.end();) {
      if ((*it)->outstanding->load() == 0) {
        done.push_back(std::move(*it));
        it = retired_.erase(it);
        ++reaping_;
      } else {
        ++it;
      }
    }
    lock.unlock();
    for (auto& g : done) {
      g->service->shutdown();  // no request left: returns at once after joining the scheduler
      g->service.reset();
      const std::string version = g->version;
      g.reset();  // the last reference to an old Model unmaps its file
      log_message(LogLevel::kInfo, "model host: version " + version + " drained and released");
    }
    lock.lock();
    reaping_ -= static_cast<int>(done.size());
    changed_.notify_all();  // wait_drained
  }
}

}  // namespace edgellm
