#include "runtime/runtime.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <utility>

#include "core/error.h"
#include "core/log.h"
#include "engine/context.h"
#include "gguf/gguf_reader.h"
#include "kv/session_file.h"
#include "model/architecture.h"
#include "model/model.h"
#include "registry/model_registry.h"

namespace edgellm {
namespace {

// "NAME@VERSION" -> "NAME".
std::string registry_base_name(const std::string& name_or_key) {
  const size_t at = name_or_key.find('@');
  return at == std::string::npos ? name_or_key : name_or_key.substr(0, at);
}

void check_session_id(const std::string& id, size_t max_sessions) {
  require(SessionStore::valid_id(id), ErrorCode::kInvalidArgument,
          "session_id: expected 1 to 64 characters of A-Z a-z 0-9 _ - . (got " + std::to_string(id.size()) + " bytes)");
  require(max_sessions > 0, ErrorCode::kInvalidArgument, "session_id: sessions are off (max_sessions is 0)");
}

// Whether the file's architecture is an encoder (it can only embed). Any problem reading it is
// left to the load that follows, which reports it.
bool is_encoder_file(const std::string& path) {
  try {
    const auto file = gguf::GgufFile::open(path);
    const auto arch = file->get_string("general.architecture");
    return arch.has_value() && find_architecture(*arch).encoder;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

const char* runtime_role_name(RuntimeRole role) {
  return role == RuntimeRole::kEmbed ? "embed" : "generate";
}

Runtime::Runtime(RuntimeParams params)
    : params_(std::move(params)), sessions_(params_.max_sessions, params_.max_session_bytes) {
  if (!params_.registry_dir.empty()) {
    require(!params_.registry_name.empty(), ErrorCode::kInvalidArgument, "runtime: a registry needs a model name");
    ModelRegistry registry(params_.registry_dir);
    const auto manifest = registry.resolve(params_.registry_name);
    require(manifest.has_value(), ErrorCode::kInvalidArgument,
            "runtime: '" + params_.registry_name + "' is not installed in " + params_.registry_dir);
    params_.model_path = registry.path_for_load(params_.registry_name);  // verified by SHA-256
    params_.model_version = manifest->version;
  }
  require(!params_.model_path.empty(), ErrorCode::kInvalidArgument, "runtime: no model path");
  role_ = params_.role;
  if (role_ == RuntimeRole::kGenerate && is_encoder_file(params_.model_path)) role_ = RuntimeRole::kEmbed;
  if (role_ == RuntimeRole::kEmbed) {
    embedder_ = EmbeddingService::open(params_.model_path, params_.embedding);
    return;
  }
  host_ = std::make_unique<ModelHost>(params_.model_path, params_.model_version, params_.service);
  DegradationConfig dc;
  dc.base_model_path = params_.model_path;
  dc.base_version = params_.model_version;
  dc.smaller_models = params_.fallback_models;
  dc.recover_ms = params_.recover_ms;
  dc.read_linux_signals = params_.linux_pressure;
  ladder_ = std::make_unique<DegradationController>(*host_, dc);
  Router::Local local;
  local.submit = [this](ServiceRequest r) { return submit_local(std::move(r)).id; };
  local.cancel = [this](uint64_t id) { return host_->cancel(id); };
  local.new_id = [this] { return host_->reserve_id(); };
  local.validate = [this](ServiceRequest& r) { check_routed(r); };
  router_ = std::make_unique<Router>(std::move(local), RouterParams{});
  router_->set_params(params_.router);  // validates the thresholds
}

Runtime::~Runtime() {
  try {
    shutdown();
  } catch (const std::exception& e) {
    // Destroyed from its own callback: the faces refuse this (WRONG_THREAD) before it gets here.
    log_message(LogLevel::kError, std::string("runtime: destroyed from its own callback: ") + e.what());
  }
}

bool Runtime::on_callback_thread() const {
  return (host_ && host_->on_scheduler_thread()) || (router_ && router_->on_router_thread()) ||
         (embedder_ && embedder_->on_scheduler_thread());
}

void Runtime::require_generator(const char* what) const {
  require(host_ != nullptr, ErrorCode::kUnsupported,
          std::string(what) +
              ": this runtime serves embeddings (role embed); generation, sessions, model swaps and "
              "the router need a runtime opened with a generation model");
}

void Runtime::shutdown() {
  require(!on_callback_thread(), ErrorCode::kInvalidArgument,
          "the runtime cannot be shut down from its own callback (it would wait for itself)");
  stopping_.store(true, std::memory_order_release);
  std::lock_guard<std::mutex> once(shutdown_mutex_);
  if (shut_down_) return;
  if (embedder_) {
    embedder_->shutdown();  // every request gets on_finish (cancelled)
    shut_down_ = true;
    return;
  }
  router_->shutdown();  // routed requests end (their local runs cancelled and delivered)
  ladder_->stop();      // no configuration change after this
  host_->shutdown();    // every other request gets on_finish (cancelled)
  shut_down_ = true;
}

// ------------------------------------------------------------------------------ requests

uint64_t Runtime::embed(EmbeddingRequest request) {
  require(embedder_ != nullptr, ErrorCode::kUnsupported,
          "embed: this runtime generates text; embeddings and rerank scores need a runtime opened with role embed "
          "(an embedding or reranking model)");
  request.on_finish = [version = params_.model_version, user = std::move(request.on_finish)](EmbeddingResult& res) {
    res.model_version = version;
    if (user) user(res);
  };
  return embedder_->submit(std::move(request));
}

EmbeddingMetrics Runtime::embedding_metrics() const {
  return embedder_ ? embedder_->metrics() : EmbeddingMetrics{};
}

Runtime::Submitted Runtime::submit(ServiceRequest request) {
  require_generator("submit");
  if (request.route != RouteMode::kOff) {
    const uint64_t id = router_->submit(std::move(request));
    return {id, host_->current_version()};
  }
  const ModelHost::Submitted s = submit_local(std::move(request));
  return {s.id, s.version};
}

ModelHost::Submitted Runtime::submit_local(ServiceRequest r) {
  if (!r.session_id.empty()) {
    check_session_id(r.session_id, params_.max_sessions);
    require(r.session_load_path.empty() && r.session_in.empty(), ErrorCode::kInvalidArgument,
            "session_id: give a session id or a session file to continue from, not both");
    if (std::shared_ptr<const std::string> saved = sessions_.get(r.session_id)) r.session_in = *saved;
  }
  if (!r.session_load_path.empty()) {
    require(r.session_in.empty(), ErrorCode::kInvalidArgument,
            "session_load_path: the request carries a session already");
    r.session_in = read_session_file(r.session_load_path);  // checked against the model by the service
  }
  if (!r.session_id.empty() || !r.session_save_path.empty()) {
    r.session_out = true;
    r.on_finish = [this, id = r.session_id, path = r.session_save_path,
                   user = std::move(r.on_finish)](RequestResult& res) {
      if (!path.empty()) {
        if (res.session.empty()) {
          res.session_save_failed = true;
          res.session_save_code = ErrorCode::kInvalidArgument;
          res.session_save_error = "no session to save: the request ended with an error";
        } else {
          try {
            write_session_file(path, res.session);
          } catch (const Error& e) {
            res.session_save_failed = true;
            res.session_save_code = e.code();
            res.session_save_error = e.what();
            log_message(LogLevel::kError, std::string("runtime: saving a session file failed: ") + e.what());
          }
        }
      }
      if (!id.empty() && !res.session.empty()) {
        const size_t n = res.session.size();
        res.session_stored = sessions_.put(id, std::move(res.session));  // moved: no copy
        if (!res.session_stored) {
          log_message(LogLevel::kWarn, "runtime: session " + id + " not kept: " + std::to_string(n) +
                                           " bytes, over the session store's " +
                                           std::to_string(params_.max_session_bytes >> 20) + " MiB");
        }
      }
      std::string().swap(res.session);  // the faces never need the bytes: free them before the callback
      if (user) user(res);
    };
  }
  return ladder_->submit(std::move(r));
}

void Runtime::check_routed(ServiceRequest& request) const {
  std::shared_ptr<InferenceService> svc = service();
  require(svc != nullptr, ErrorCode::kCancelled, "the runtime is shutting down");
  (void)check_request(request, svc->model().hparams().n_vocab, svc->params().input_policy);
}

bool Runtime::cancel(uint64_t id) {
  if (embedder_) return embedder_->cancel(id);
  if (router_->cancel(id)) return true;
  return host_->cancel(id);
}

void Runtime::pause() {
  if (embedder_) return embedder_->pause();
  host_->pause();
}
void Runtime::resume() {
  if (embedder_) return embedder_->resume();
  host_->resume();
}

bool Runtime::paused() const {
  if (embedder_) return embedder_->paused();
  std::shared_ptr<InferenceService> svc = service();
  return svc != nullptr && svc->paused();
}

void Runtime::trim(std::function<void(size_t)> done) {
  if (embedder_) return embedder_->trim(std::move(done));
  std::shared_ptr<InferenceService> svc = service();
  require(svc != nullptr, ErrorCode::kCancelled, "the runtime is shutting down");
  svc->trim(std::move(done));
}

void Runtime::warmup(std::function<void(bool, const std::string&)> done) {
  if (embedder_) return embedder_->warmup(std::move(done));
  std::shared_ptr<InferenceService> svc = service();
  require(svc != nullptr, ErrorCode::kCancelled, "the runtime is shutting down");
  svc->warmup(std::move(done));
}

// ------------------------------------------------------------------------------ the model

void Runtime::swap_model(const std::string& path, const std::string& version) {
  require_generator("swap_model");
  require(!version.empty() && version.size() <= 64, ErrorCode::kInvalidArgument, "version: must be 1 to 64 bytes");
  std::lock_guard<std::mutex> serial(swap_mutex_);
  ladder_->swap_base_model(path, version);
}

std::string Runtime::reload_from_registry() {
  require_generator("reload_from_registry");
  require(!params_.registry_dir.empty(), ErrorCode::kInvalidArgument,
          "reload: the runtime was not opened from a registry");
  std::lock_guard<std::mutex> serial(swap_mutex_);
  ModelRegistry registry(params_.registry_dir);
  const std::string name = registry_base_name(params_.registry_name);
  const auto manifest = registry.current(name);
  require(manifest.has_value(), ErrorCode::kInvalidArgument, "reload: '" + name + "' has no current version");
  if (manifest->version == ladder_->base_version()) return host_->current_version();
  const std::string path = registry.path_for_load(manifest->key());  // verified by SHA-256
  ladder_->swap_base_model(path, manifest->version);
  log_message(LogLevel::kInfo, "runtime: reloaded " + manifest->key() + " from the registry");
  return host_->current_version();
}

std::string Runtime::model_version() const {
  return embedder_ ? params_.model_version : host_->current_version();
}
std::vector<std::string> Runtime::live_versions() const {
  return embedder_ ? std::vector<std::string>{params_.model_version} : host_->live_versions();
}
uint64_t Runtime::swaps() const {
  return embedder_ ? 0 : host_->swaps();
}
// ------------------------------------------------------------------------------ classification

ClassifyResult Runtime::classify(ClassifyRequest request) {
  const auto start = std::chrono::steady_clock::now();
  require_generator("classify");
  require(!on_callback_thread(), ErrorCode::kInvalidArgument,
          "classify called from the runtime's own callback (it would wait for the service it runs beside)");
  require(!stopping_.load(std::memory_order_acquire), ErrorCode::kCancelled, "classify: the runtime is shut down");
  require(static_cast<int>(ladder_->rung()) < static_cast<int>(Rung::kRefuseNew), ErrorCode::kDegraded,
          [&] { return std::string("degraded: classify refused at rung ") + rung_name(ladder_->rung()); });
  // Queued on the serving version's service like a request (its deadline, BUSY, shutdown);
  // this thread waits for the scheduler's answer.
  auto done = std::make_shared<std::promise<ClassifyOutcome>>();
  std::future<ClassifyOutcome> answer = done->get_future();
  try {
    host_->submit_classify(std::move(request), [done](ClassifyOutcome& out) { done->set_value(std::move(out)); });
  } catch (const Error& e) {
    // The host stops before the runtime's flag is read again: a shutdown in between is kCancelled.
    if (e.code() == ErrorCode::kCancelled) throw Error(ErrorCode::kCancelled, "classify: the runtime is shut down");
    throw;
  }
  ClassifyOutcome out = answer.get();
  if (out.result.finish_reason == FinishReason::kError) throw Error(out.error_code, out.error);
  out.result.total_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return std::move(out.result);
}

std::shared_ptr<InferenceService> Runtime::service() const {
  return embedder_ ? nullptr : host_->current_service();
}

// ------------------------------------------------------------------------------ degradation

void Runtime::set_pressure(const PressureSignals& s) {
  require(s.memory_level >= 0 && s.memory_level <= 4 && s.thermal_level >= 0 && s.thermal_level <= 3,
          ErrorCode::kInvalidArgument, "pressure: memory_level must be in [0, 4] and thermal_level in [0, 3]");
  if (embedder_) {
    // No ladder for an embedder (its model cannot be swapped for a smaller one): high memory
    // pressure gives its scratch back, the next request makes it again.
    if (s.memory_level >= 2) embedder_->trim();
    return;
  }
  ladder_->set_signals(s);
}

void Runtime::set_fallback_models(std::vector<std::pair<std::string, std::string>> models) {
  require_generator("set_fallback_models");
  ladder_->set_smaller_models(std::move(models));
}

Rung Runtime::rung() const {
  return embedder_ ? Rung::kNormal : ladder_->rung();
}

bool Runtime::wait_degradation_settled(std::chrono::milliseconds timeout) const {
  return embedder_ ? true : ladder_->wait_settled(timeout);
}

Json Runtime::degradation_json() const {
  if (embedder_) {
    Json j = Json::object();
    j.set("ladder", "none (embedding runtime: memory level >= 2 trims the embedder's scratch)");
    return j;
  }
  return ladder_->metrics_json();
}

// ------------------------------------------------------------------------------ sessions

int32_t Runtime::import_session(const std::string& id, std::string bytes) {
  require_generator("import_session");
  check_session_id(id, params_.max_sessions);
  require(!bytes.empty(), ErrorCode::kInvalidArgument, "session: no bytes");
  std::shared_ptr<InferenceService> svc = service();
  require(svc != nullptr, ErrorCode::kCancelled, "the runtime is shutting down");
  const int32_t positions = svc->check_session(bytes);
  const size_t n = bytes.size();
  require(sessions_.put(id, std::move(bytes)), ErrorCode::kInvalidArgument,
          "session: " + std::to_string(n) + " bytes is more than the session store holds (" +
              std::to_string(params_.max_session_bytes) + " bytes)");
  return positions;
}

std::shared_ptr<const std::string> Runtime::export_session(const std::string& id) {
  if (!SessionStore::valid_id(id)) return nullptr;
  return sessions_.get(id);
}

bool Runtime::delete_session(const std::string& id) {
  return SessionStore::valid_id(id) && sessions_.erase(id);
}

int32_t Runtime::load_session_file(const std::string& id, const std::string& path) {
  require_generator("load_session_file");
  check_session_id(id, params_.max_sessions);
  return import_session(id, read_session_file(path));
}

bool Runtime::save_session_file(const std::string& id, const std::string& path) {
  std::shared_ptr<const std::string> bytes = export_session(id);
  if (!bytes) return false;
  write_session_file(path, *bytes);
  return true;
}

// ------------------------------------------------------------------------------ router

void Runtime::set_router(RouterParams params) {
  require_generator("set_router");
  router_->set_params(std::move(params));
}
RouterParams Runtime::router_params() const {
  return router_ ? router_->params() : RouterParams{};
}

// ------------------------------------------------------------------------------ metrics

ServiceMetrics Runtime::service_metrics() const {
  std::shared_ptr<InferenceService> svc = service();
  return svc ? svc->metrics() : ServiceMetrics{};
}

RouterCounters Runtime::router_counters() const {
  return router_ ? router_->counters() : RouterCounters{};
}

Json Runtime::metrics_json() const {
  if (embedder_) {
    Json j = embedder_->metrics().to_json();
    j.set("role", runtime_role_name(role_));
    j.set("model_version", model_version());
    return j;
  }
  Json j = service_metrics().to_json();
  j.set("model_version", model_version());
  Json versions = Json::array();
  for (const std::string& v : live_versions()) versions.push_back(v);
  j.set("live_versions", std::move(versions));
  j.set("swaps", swaps());
  j.set("degradation", degradation_json());
  j.set("router", router_->metrics_json());
  Json s = Json::object();
  s.set("count", static_cast<uint64_t>(sessions_.count()));
  s.set("bytes", static_cast<uint64_t>(sessions_.bytes()));
  s.set("max_sessions", static_cast<uint64_t>(sessions_.max_sessions()));
  s.set("max_bytes", static_cast<uint64_t>(sessions_.max_bytes()));
  j.set("sessions", std::move(s));  // counts only: the ids are the app's (edgellm_session_list_json)
  return j;
}

std::string Runtime::metrics_prometheus() const {
  if (embedder_) return embedder_->metrics().to_prometheus();
  std::string s = service_metrics().to_prometheus();
  s += router_->metrics_prometheus();
  const Json d = degradation_json();
  s += "# HELP edgellm_degradation_rung The degradation ladder's rung in force (0 normal .. 6 end running).\n"
       "# TYPE edgellm_degradation_rung gauge\n"
       "edgellm_degradation_rung " +
       std::to_string(static_cast<int>(rung())) +
       "\n"
       "# HELP edgellm_degradation_steps_total Steps the degradation ladder took (down and up).\n"
       "# TYPE edgellm_degradation_steps_total counter\n"
       "edgellm_degradation_steps_total " +
       std::to_string(d.at("steps").as_int()) +
       "\n"
       "# HELP edgellm_degradation_entered_total Times each rung was entered.\n"
       "# TYPE edgellm_degradation_entered_total counter\n";
  for (const auto& [name, v] : d.at("rungs").as_object()) {
    s += "edgellm_degradation_entered_total{rung=\"" + name + "\"} " + std::to_string(v.at("entered").as_int()) + "\n";
  }
  s += "# HELP edgellm_degradation_refused_total Requests the ladder refused.\n"
       "# TYPE edgellm_degradation_refused_total counter\n"
       "edgellm_degradation_refused_total " +
       std::to_string(d.at("refused_requests").as_int()) +
       "\n"
       "# HELP edgellm_degradation_ended_total Running requests the ladder ended.\n"
       "# TYPE edgellm_degradation_ended_total counter\n"
       "edgellm_degradation_ended_total " +
       std::to_string(d.at("ended_requests").as_int()) + "\n";
  s += "# HELP edgellm_model_swaps_total Model versions switched in (hot swap, ladder).\n"
       "# TYPE edgellm_model_swaps_total counter\n"
       "edgellm_model_swaps_total " +
       std::to_string(swaps()) + "\n";
  s += "# HELP edgellm_sessions Sessions kept by id.\n# TYPE edgellm_sessions gauge\nedgellm_sessions " +
       std::to_string(sessions_.count()) + "\n";
  s += "# HELP edgellm_session_bytes Bytes of the sessions kept.\n# TYPE edgellm_session_bytes gauge\n"
       "edgellm_session_bytes " +
       std::to_string(sessions_.bytes()) + "\n";
  return s;
}

}  // namespace edgellm
