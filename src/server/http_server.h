// The OpenAI-compatible HTTP front of one edgellm::Runtime (docs/server.md), the third face
// beside the C ABI and NAPI: every request goes through the Runtime (its request checks, model
// host, ladder, sessions, metrics).
//
//   POST /v1/chat/completions, /v1/completions   generation, SSE streaming or one JSON body
//   GET  /v1/models, /health, /metrics           model list, liveness, Prometheus text
//   POST /tokenize, /detokenize, /apply-template  llama-server-compatible helpers
//   GET  /                                       the web chat page (embedded, no CDN)
//   POST /v1/sessions/import, /v1/sessions/{id}/export, DELETE /v1/sessions/{id}
//                                                a conversation's KV moving between devices
//   POST /v1/embeddings, /v1/rerank              with --embedding-model / --rerank-model, or
//                                                alone with --embeddings / --reranking (embeddings_endpoint.h)
//   /v1/docqa/documents, /search, /ask       document Q&A with --docqa-index (docqa_endpoints.h)
//   POST /admin/swap, /admin/reload, /admin/pressure, GET /admin/degradation
//                                                the model and the ladder, changed while serving
//   POST /admin/pause, /admin/resume, /admin/trim, GET /admin/state
//                                                the Runtime's scheduling and memory
//
// This file is the request path and policy; the pieces live beside it:
//   endpoint_table.h       the endpoints by method and path
//   http_transport.h       connections, parsing, limits, deadlines (Boost.Beast)
//   generation_endpoint.h  the OpenAI generation (streamed and not); routed_chat.h its router path
//   helper_endpoints.h     tokenize, detokenize, apply-template, models, health, metrics, page
//   session_endpoints.h    import, export, delete
//   admin_endpoints.h      swap, reload, pressure, degradation, pause, resume, state, trim (API key only)
//   request_policy.h       Host and Origin checks (DNS rebinding, cross-site requests)
//   service_calls.h        the calls the endpoints make to the model side (the Runtime)
//
// For each request head (on the I/O thread, before any body is read) the server decides, in
// this order: Host allowed (keyless server), Origin allowed, CORS preflight, the endpoint (404,
// 405), the admin endpoints only with an API key configured (403 without), the API key (all but
// / and /health), then admission: the body's bytes within the in-flight budget (503), a helper
// slot for /tokenize, /detokenize, /apply-template (429), the one session-import slot (429), the
// one model-change slot for /admin/swap and /admin/reload (429). Generation is admitted by the
// Runtime (429 when its queue is full, 503 when the degradation ladder refuses new requests).
//
// Thread-safety: construct, bind(), then serve() on one thread; stop() from any other thread
// (e.g. a signal watcher) ends serve(). The runtime must outlive the server.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "docqa/doc_qa.h"
#include "model/pooling_type.h"
#include "server/admission.h"
#include "server/endpoint_table.h"
#include "server/http_transport.h"
#include "server/listening_socket.h"
#include "server/server_counters.h"
#include "server/server_options.h"

namespace edgellm {
class Runtime;
}

namespace edgellm::server {

struct ServerContext;

class HttpServer : private HttpApplication {
 public:
  // Throws Error(kInvalidArgument) when options.host is not loopback and there is no api_key, or
  // a limit is not positive.
  static void check_options(const ServerOptions& options);
  // check_options(options); nothing is bound yet (bind()). An embedding runtime (RuntimeRole::
  // kEmbed) makes an embedding-only server, llama-server's --embeddings / --reranking: attach it
  // with attach_embedding_runtimes (as the embedder or the reranker); the generation endpoints and
  // everything but /v1/models, /health and /metrics then answer 501 not_supported_error.
  HttpServer(Runtime& runtime, ServerOptions options);
  // The same on a socket bound before the model was loaded (ListeningSocket::open).
  HttpServer(Runtime& runtime, ServerOptions options, ListeningSocket socket);
  ~HttpServer() override;
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Embedding runtimes (role kEmbed) beside the generator, for /v1/embeddings and /v1/rerank
  // (embeddings_endpoint.h); null: that endpoint answers 501. `pooling` (kUnspecified: the
  // model's) applies to /v1/embeddings. Before bind(); the runtimes must outlive the server.
  // Throws Error(kInvalidArgument) for a generation runtime, or a reranker without a
  // classification head.
  void attach_embedding_runtimes(Runtime* embedder, const std::string& embedder_name, Runtime* reranker,
                                 const std::string& reranker_name, PoolingType pooling);

  // Document Q&A over HTTP (docqa_endpoints.h) on the index file at `index_path` (created on the
  // first change when absent), embedded by the embedding runtime attached above (required),
  // reranked by its reranker if any, answered by this server's model. Before bind(). Throws
  // Error: kInvalidArgument without an embedding runtime, or for an index built with another
  // embedding model; kInvalidFile for a corrupt index file (unchanged on disk); kIo.
  void attach_docqa(const std::string& index_path, DocQaOptions options);

  // Binds host:port (port 0: a free one) unless constructed with a socket, starts the workers
  // and returns the port. Throws Error(kIo) naming the address when it cannot be bound.
  int bind();
  // Serves until stop(). bind() first.
  void serve();
  // Ends serve(): open generations are cancelled, workers finish their responses. Any thread
  // but serve()'s.
  void stop();

  int port() const { return port_; }
  const ServerCounters& counters() const;

 private:
  RequestPlan plan(const RequestHead& head) override;
  HttpResponse error_response(int status, const std::string& code, const std::string& message) override;
  void on_response(int status) override;
  void on_event(TransportEvent event) override;

  // plan()'s stages, in the order the comment at the top gives: the head's checks (true: p
  // answers it, a refusal or the CORS preflight), admission (false: refused, p answers it;
  // *heavy: memory is given back after it), then the endpoint's handler.
  bool answered_by_head(const RequestHead& head, const EndpointMatch& m, RequestPlan& p);
  bool admit(const RequestHead& head, const EndpointMatch& m, RequestPlan& p, bool* heavy);
  void set_handler(EndpointMatch m, bool heavy, RequestPlan& p);
  void refuse(RequestPlan& p, int status, const char* code, const std::string& message);

  TransportLimits transport_limits() const;
  // A worker's handler, with errors turned into responses and memory given back when idle.
  using Handler = std::function<void(HttpRequest&, ResponseWriter&)>;
  Handler guarded(Handler fn, bool heavy);
  void release_memory_when_idle();

  std::unique_ptr<ServerContext> ctx_;
  std::vector<std::string> allowed_hosts_;  // keyless: the Host names answered
  Admission body_bytes_;                    // request bodies in memory (bytes)
  Admission helpers_;                       // /tokenize, /detokenize, /apply-template running
  Admission imports_;                       // session imports running (1)
  Admission docqa_requests_;                // /v1/docqa/* on workers at once (429 above)
  std::atomic<int> busy_workers_{0};
  std::atomic<bool> trim_due_{false};       // a heavy request ran since memory was last given back
  ListeningSocket socket_;                  // until bind() hands it to the transport
  int port_ = -1;
  std::unique_ptr<HttpTransport> transport_;  // last: its workers use everything above
};

}  // namespace edgellm::server
