// The OpenAI-compatible HTTP front of one InferenceService (cpp-httplib, one worker thread per
// connection from a bounded pool).
//
//   POST /v1/chat/completions, /v1/completions   generation, SSE streaming or one JSON body
//   GET  /v1/models, /health, /metrics           model list, liveness, Prometheus text
//   POST /tokenize, /detokenize, /apply-template  llama-server-compatible helpers
//   GET  /                                       the web chat page (embedded, no CDN)
//   POST /v1/sessions/import, /v1/sessions/{id}/export, DELETE /v1/sessions/{id}
//                                                a conversation's KV moving between devices
//
// A generation request is submitted to the service (BUSY -> 429 + Retry-After); its worker
// waits for the first token (errors before it get their own HTTP status), then writes the
// answer. Between chunks the worker checks that the client is still there; when it is gone the
// request is cancelled at once (CompletionChannel::abandon + InferenceService::cancel), so its
// sequence and KV blocks are free after the step in flight.
//
// Sessions: a generation naming "x_edgellm_session": ID continues from the session stored under
// ID (ServiceRequest::session_in: only the new part of the prompt is prefilled) and stores its
// own KV under ID when it ends (session_out). Import checks the bytes against this service's
// model file and KV type (InferenceService::check_session) before storing them.
//
// Thread-safety: construct, then serve() on one thread; stop() from any thread (e.g. a signal
// watcher) ends serve(). The service must outlive the server.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "core/json.h"
#include "server/server_counters.h"
#include "server/server_options.h"
#include "runtime/session_store.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace edgellm {
class InferenceService;
struct RequestResult;
struct ServiceRequest;
}

namespace edgellm::server {

enum class Endpoint;
struct ParsedRequest;
struct ResponseHead;

class HttpServer {
 public:
  // Throws Error(kInvalidArgument) when options.host is not loopback and there is no api_key.
  static void check_options(const ServerOptions& options);
  // check_options(options), then sets up the routes (nothing is bound yet).
  HttpServer(InferenceService& service, ServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds host:port (port 0: a free one) and returns the port. Throws Error(kIo) when the
  // address cannot be bound.
  int bind();
  // Accepts connections until stop(). bind() first.
  void serve();
  // Ends serve(): open generations are cancelled, workers finish their responses. Any thread.
  void stop();

  int port() const { return port_; }
  const ServerCounters& counters() const { return counters_; }

 private:
  void install_routes();
  void handle_generate(const httplib::Request& req, httplib::Response& res, Endpoint endpoint);
  void handle_tokenize(const httplib::Request& req, httplib::Response& res);
  void handle_detokenize(const httplib::Request& req, httplib::Response& res);
  void handle_apply_template(const httplib::Request& req, httplib::Response& res);
  void handle_models(httplib::Response& res);
  void handle_session_import(const httplib::Request& req, httplib::Response& res);
  void handle_session_export(const std::string& id, httplib::Response& res);
  void handle_session_delete(const std::string& id, httplib::Response& res);
  // Stores a finished generation's session bytes under id; the x_edgellm.session of its body.
  Json keep_session(const std::string& id, RequestResult& result);
  // Non-streamed chat with the router on (router.h): local answer, score, maybe the cloud.
  void answer_routed(const Json& body, ParsedRequest p, const ResponseHead& head, httplib::Response& res);
  // Runs one request on the local service to the end (no streaming); throws ApiError when it
  // is refused or fails. *probabilities: the answer's token probabilities (when requested).
  RequestResult run_local(ServiceRequest request, std::vector<float>* probabilities);

  InferenceService& service_;
  ServerOptions options_;
  std::unique_ptr<httplib::Server> http_;
  ServerCounters counters_;
  SessionStore sessions_;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> next_response_id_{1};
  int port_ = -1;
  int listen_fd_ = -1;  // set by httplib's socket-options callback during bind()
};

}  // namespace edgellm::server
