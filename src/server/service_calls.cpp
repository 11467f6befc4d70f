#include "server/service_calls.h"

#include <utility>

#include "service/inference_service.h"

namespace edgellm::server {

RequestId ServiceCalls::submit(ServiceRequest request) { return service_.submit(std::move(request)); }
bool ServiceCalls::cancel(RequestId id) { return service_.cancel(id); }
int32_t ServiceCalls::check_session(std::string_view bytes) const { return service_.check_session(bytes); }
const Tokenizer& ServiceCalls::tokenizer() const { return service_.tokenizer(); }
const ChatTemplate& ServiceCalls::chat_template() const { return service_.chat_template(); }
ServiceMetrics ServiceCalls::metrics() const { return service_.metrics(); }

ServedParams ServiceCalls::params() const {
  ServedParams p;
  p.n_ctx = service_.context_params().n_ctx;  // as created: defaults resolved
  p.n_parallel = service_.context_params().n_seq_max;
  p.max_queued = service_.params().max_queued;
  return p;
}

}  // namespace edgellm::server
