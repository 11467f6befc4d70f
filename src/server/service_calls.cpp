#include "server/service_calls.h"

#include <utility>

#include "core/error.h"
#include "runtime/runtime.h"
#include "service/inference_service.h"

namespace edgellm::server {

ServiceCalls::Submitted ServiceCalls::submit(ServiceRequest request) {
  Runtime::Submitted s = runtime_.submit(std::move(request));
  return {s.id, std::move(s.version)};
}
bool ServiceCalls::cancel(RequestId id) { return runtime_.cancel(id); }
ClassifyResult ServiceCalls::classify(ClassifyRequest request) { return runtime_.classify(std::move(request)); }

int32_t ServiceCalls::import_session(const std::string& id, std::string bytes) {
  return runtime_.import_session(id, std::move(bytes));
}
std::shared_ptr<const std::string> ServiceCalls::export_session(const std::string& id) {
  return runtime_.export_session(id);
}
bool ServiceCalls::delete_session(const std::string& id) { return runtime_.delete_session(id); }
size_t ServiceCalls::max_sessions() const { return runtime_.sessions().max_sessions(); }
size_t ServiceCalls::max_session_bytes() const { return runtime_.sessions().max_bytes(); }

std::shared_ptr<InferenceService> ServiceCalls::serving() const {
  std::shared_ptr<InferenceService> svc = runtime_.service();
  require(svc != nullptr, ErrorCode::kCancelled, "the runtime is shutting down");
  return svc;
}

ServedParams ServiceCalls::params() const {
  const std::shared_ptr<InferenceService> svc = serving();
  ServedParams p;
  p.n_ctx = svc->context_params().n_ctx;  // as created: defaults resolved
  p.n_parallel = svc->context_params().n_seq_max;
  p.max_queued = svc->params().max_queued;
  return p;
}

std::string ServiceCalls::model_version() const { return runtime_.model_version(); }

void ServiceCalls::swap_model(const std::string& path, const std::string& version) {
  runtime_.swap_model(path, version);
}
std::string ServiceCalls::reload_from_registry() { return runtime_.reload_from_registry(); }
void ServiceCalls::set_pressure(const PressureSignals& signals) { runtime_.set_pressure(signals); }
Json ServiceCalls::degradation_json() const { return runtime_.degradation_json(); }
void ServiceCalls::pause() { runtime_.pause(); }
void ServiceCalls::resume() { runtime_.resume(); }
bool ServiceCalls::paused() const { return runtime_.paused(); }
void ServiceCalls::trim(std::function<void(size_t)> done) { runtime_.trim(std::move(done)); }
ServiceMetrics ServiceCalls::service_metrics() const { return runtime_.service_metrics(); }
std::vector<std::string> ServiceCalls::live_versions() const { return runtime_.live_versions(); }
uint64_t ServiceCalls::swaps() const { return runtime_.swaps(); }

bool ServiceCalls::routing() const {
  const RouterParams p = runtime_.router_params();
  return p.privacy || p.transport != nullptr;
}
RouterParams ServiceCalls::router_params() const { return runtime_.router_params(); }
RouterCounters ServiceCalls::router_counters() const { return runtime_.router_counters(); }

std::string ServiceCalls::metrics_prometheus() const { return runtime_.metrics_prometheus(); }

}  // namespace edgellm::server
