#include "server/server_counters.h"

namespace edgellm::server {
namespace {

void counter(std::string& out, const char* name, const char* help, uint64_t value) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " counter\n" + name + " " +
         std::to_string(value) + "\n";
}

}  // namespace

std::string ServerCounters::to_prometheus() const {
  std::string out;
  counter(out, "edgellm_http_requests_total", "HTTP requests received.", http_requests.load());
  counter(out, "edgellm_http_client_errors_total", "Responses with a 4xx status.", http_4xx.load());
  counter(out, "edgellm_http_busy_total", "Responses 429 (waiting queue full).", http_429.load());
  counter(out, "edgellm_http_server_errors_total", "Responses with a 5xx status.", http_5xx.load());
  counter(out, "edgellm_http_client_disconnects_total", "Generations cancelled because the client disconnected.",
          client_disconnects.load());
  counter(out, "edgellm_http_streams_total", "Streamed (SSE) responses started.", streams.load());
  counter(out, "edgellm_http_connections_total", "Connections accepted.", connections.load());
  counter(out, "edgellm_http_connections_refused_total",
          "Connections refused over --max-connections or --max-client-connections.", connections_refused.load());
  counter(out, "edgellm_http_timeouts_total", "Request heads, bodies or writes that missed their deadline.",
          timeouts.load());
  counter(out, "edgellm_http_overloaded_total",
          "Requests answered 503 because every worker was busy or the request-body budget was spent.",
          overloaded.load());
  return out;
}

}  // namespace edgellm::server
