#include "server/http_server.h"

#include <exception>
#include <string>
#include <utility>

#include "core/error.h"
#include "core/log.h"
#include "runtime/runtime.h"
#include "server/admin_endpoints.h"
#include "server/api_error.h"
#include "server/api_response.h"
#include "server/auth.h"
#include "server/classify_endpoint.h"
#include "server/docqa_endpoints.h"
#include "server/embeddings_endpoint.h"
#include "server/endpoint_table.h"
#include "server/generation_endpoint.h"
#include "server/helper_endpoints.h"
#include "server/memory_policy.h"
#include "server/request_policy.h"
#include "server/server_context.h"
#include "server/session_endpoints.h"

namespace edgellm::server {
namespace {

const char* error_type(int status) {
  if (status == 401) return "authentication_error";
  if (status == 403) return "permission_error";
  if (status == 429) return "rate_limit_error";
  return status >= 500 ? "server_error" : "invalid_request_error";
}

// llama-server's embedding mode (--embeddings, --reranking): what an endpoint the server does
// not serve answers (501 not_supported_error, llama-server's wording where it has one), or
// nullptr for one it serves.
const char* embedding_only_refusal(EndpointId ep, bool embeds, bool reranks) {
  switch (ep) {
    case EndpointId::kModels:
    case EndpointId::kHealth:
    case EndpointId::kMetrics:
      return nullptr;
    case EndpointId::kEmbeddings:
      return embeds ? nullptr : "This server does not support embeddings. Start it with `--embeddings`";
    case EndpointId::kRerank:
      return reranks ? nullptr : "This server does not support reranking. Start it with `--reranking`";
    case EndpointId::kChat:
    case EndpointId::kCompletion:
      return "This server does not support completions. Start it without `--embeddings`";
    default:
      return "This server serves embeddings only (started with --embeddings or --reranking): this endpoint needs a "
             "generation model. Serve one with -m and add the embedder with --embedding-model FILE";
  }
}

// /v1/docqa/* requests at once (each holds a worker; one at a time uses the index).
constexpr uint64_t kDocqaRequestsAtOnce = 4;

// Request bodies of at least this size make a request "heavy" (memory is given back after).
constexpr uint64_t kHeavyBody = uint64_t{64} << 10;

}  // namespace

void HttpServer::check_options(const ServerOptions& o) {
  if (!is_loopback_host(o.host) && o.api_key.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "--host " + o.host +
                                                 " is reachable from other machines: give --api-key KEY "
                                                 "(clients send 'Authorization: Bearer KEY')");
  }
  if (o.max_body_bytes == 0 || o.max_json_depth < 2 || o.deadline_ms <= 0 || o.read_timeout_s <= 0 ||
      o.write_timeout_s <= 0 || o.max_connections == 0 || o.max_client_connections == 0 || o.helper_slots == 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "server options: body size, JSON depth, deadlines, connection limits and helper slots must be positive");
  }
}

HttpServer::HttpServer(Runtime& runtime, ServerOptions options)
    : HttpServer(runtime, std::move(options), ListeningSocket()) {}

HttpServer::HttpServer(Runtime& runtime, ServerOptions options, ListeningSocket socket)
    : ctx_((check_options(options), std::make_unique<ServerContext>(runtime, std::move(options)))),
      allowed_hosts_(allowed_host_names(ctx_->options.host, ctx_->options.allowed_hosts)),
      body_bytes_(ctx_->options.max_body_bytes_in_flight > 0
                      ? ctx_->options.max_body_bytes_in_flight
                      : std::max<uint64_t>(16 * uint64_t{ctx_->options.max_body_bytes}, ctx_->options.max_body_bytes)),
      helpers_(ctx_->options.helper_slots),
      imports_(1),
      docqa_requests_(kDocqaRequestsAtOnce),
      socket_(std::move(socket)) {
  ctx_->embedding_only = runtime.role() == RuntimeRole::kEmbed;
  if (ctx_->options.model_name.empty()) ctx_->options.model_name = "edgellm";
  use_serving_allocator_policy();
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::attach_embedding_runtimes(Runtime* embedder, const std::string& embedder_name, Runtime* reranker,
                                           const std::string& reranker_name, PoolingType pooling) {
  require(!transport_, ErrorCode::kInvalidArgument, "attach_embedding_runtimes after bind()");
  for (Runtime* rt : {embedder, reranker}) {
    require(rt == nullptr || rt->role() == RuntimeRole::kEmbed, ErrorCode::kInvalidArgument,
            "an embedding or rerank model must be one (a BERT-family encoder, or a decoder opened with role embed)");
  }
  require(reranker == nullptr || reranker->embedding_service()->can_rerank(), ErrorCode::kInvalidArgument,
          "--rerank-model: '" + reranker_name + "' has no classification head (it embeds; a reranker is a cross-encoder)");
  ctx_->embedder = embedder;
  ctx_->embedder_name = embedder_name;
  ctx_->reranker = reranker;
  ctx_->reranker_name = reranker_name;
  ctx_->embedding_pooling = pooling;
}

void HttpServer::attach_docqa(const std::string& index_path, DocQaOptions options) {
  require(!transport_, ErrorCode::kInvalidArgument, "attach_docqa after bind()");
  require(ctx_->embedder != nullptr, ErrorCode::kInvalidArgument,
          "--docqa-index needs --embedding-model FILE (the model that embeds the documents and questions)");
  ctx_->docqa = std::make_shared<ServedDocQa>(*ctx_->embedder, ctx_->service.runtime(), ctx_->reranker, index_path,
                                              std::move(options));
}

const ServerCounters& HttpServer::counters() const { return ctx_->counters; }

TransportLimits HttpServer::transport_limits() const {
  const ServerOptions& o = ctx_->options;
  // An embedding-only server has no generation service: its embedder admits one forward and
  // queues EmbeddingServiceParams::max_queued (8) behind it.
  const ServedParams p = ctx_->embedding_only ? ServedParams{0, 1, 8} : ctx_->service.params();
  TransportLimits l;
  l.head_timeout = std::chrono::seconds(o.read_timeout_s);
  l.body_timeout = std::chrono::seconds(o.read_timeout_s);
  l.write_timeout = std::chrono::seconds(o.write_timeout_s);
  l.max_connections = o.max_connections;
  l.max_client_connections = o.max_client_connections;
  // Generations hold a worker for their whole answer, but the service admits only
  // n_parallel + max_queued of them (429 for more, answered in microseconds); helpers hold one
  // within their slots, an import within its one, document Q&A within its few; the rest answer
  // refusals and cheap requests.
  l.worker_threads = o.http_threads > 0
                         ? static_cast<size_t>(o.http_threads)
                         : static_cast<size_t>(p.n_parallel + p.max_queued) + o.helper_slots + 1 + 4 +
                               (ctx_->docqa ? kDocqaRequestsAtOnce : 0);
  l.max_waiting_tasks = o.http_waiting > 0 ? static_cast<size_t>(o.http_waiting) : 4 * l.worker_threads;
  l.retry_after_s = o.retry_after_s;
  return l;
}

int HttpServer::bind() {
  if (transport_) return port_;
  if (!socket_.valid()) socket_ = ListeningSocket::open(ctx_->options.host, ctx_->options.port);
  transport_ = std::make_unique<HttpTransport>(static_cast<HttpApplication&>(*this), transport_limits(), std::move(socket_));
  port_ = transport_->port();
  return port_;
}

void HttpServer::serve() {
  if (!transport_) throw Error(ErrorCode::kInvalidArgument, "HttpServer::serve before bind");
  transport_->run();
}

void HttpServer::stop() {
  // Workers waiting on a generation see `stopping` and cancel it, so the pool can be joined.
  ctx_->stopping.store(true);
  if (transport_) transport_->stop();
}

HttpResponse HttpServer::error_response(int status, const std::string& code, const std::string& message) {
  return server::error_response(ApiError(status, error_type(status), code, message), ctx_->options.retry_after_s);
}

void HttpServer::on_response(int status) {
  ServerCounters& c = ctx_->counters;
  if (status == 429) c.http_429.fetch_add(1);
  if (status >= 500) {
    c.http_5xx.fetch_add(1);
  } else if (status >= 400) {
    c.http_4xx.fetch_add(1);
  }
}

void HttpServer::on_event(TransportEvent event) {
  ServerCounters& c = ctx_->counters;
  switch (event) {
    case TransportEvent::kConnectionAccepted: c.connections.fetch_add(1); break;
    case TransportEvent::kConnectionRefused: c.connections_refused.fetch_add(1); break;
    case TransportEvent::kTimeout: c.timeouts.fetch_add(1); break;
    case TransportEvent::kWorkersBusy: c.overloaded.fetch_add(1); break;
  }
}

RequestPlan HttpServer::plan(const RequestHead& h) {
  ServerContext& ctx = *ctx_;
  ctx.counters.http_requests.fetch_add(1);
  RequestPlan p;
  if (!ctx.options.cors_origin.empty()) {
    p.headers.emplace_back("Access-Control-Allow-Origin", ctx.options.cors_origin);
    p.headers.emplace_back("Vary", "Origin");
  }
  EndpointMatch m = match_endpoint(h.method, h.path);
  bool heavy = false;
  if (answered_by_head(h, m, p) || !admit(h, m, p, &heavy)) return p;
  set_handler(std::move(m), heavy, p);
  return p;
}

void HttpServer::refuse(RequestPlan& p, int status, const char* code, const std::string& message) {
  p.respond = error_response(status, code, message);
}

bool HttpServer::answered_by_head(const RequestHead& h, const EndpointMatch& m, RequestPlan& p) {
  const ServerOptions& o = ctx_->options;
  const std::string_view host = h.header("Host");
  // DNS rebinding: a page whose name now points at 127.0.0.1 still sends its own name.
  if (o.api_key.empty() && !host_allowed(host, allowed_hosts_)) {
    refuse(p, 403, "host_not_allowed",
           "Host '" + valid_utf8(std::string(host)) +
               "' does not name this server: a server without an API key answers localhost, 127.0.0.1, "
               "[::1] and its --host (add names with --allowed-hosts)");
    return true;
  }
  // Cross-site requests: browsers send Origin; only the server's own page and --cors-origin may call.
  if (const std::string_view origin = h.header("Origin"); !origin_allowed(origin, host, o.cors_origin)) {
    refuse(p, 403, "origin_not_allowed",
           "requests from the web page at " + valid_utf8(std::string(origin)) +
               " are refused (allow one origin with --cors-origin)");
    return true;
  }
  if (h.method == "OPTIONS") {
    if (o.cors_origin.empty()) {
      refuse(p, 404, "not_found", "no such endpoint (CORS is off)");
      return true;
    }
    HttpResponse r;
    r.status = 204;
    r.headers = {{"Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS"},
                 {"Access-Control-Allow-Headers", "Authorization, Content-Type"},
                 {"Access-Control-Max-Age", "600"}};
    p.respond = std::move(r);
    return true;
  }
  if (!m.found) {
    refuse(p, 404, "not_found", "no such endpoint");
    return true;
  }
  if (!m.method_ok) {
    p.headers.emplace_back("Allow", m.allow);
    refuse(p, 405, "method_not_allowed", h.method + " is not allowed here (allowed: " + m.allow + ")");
    return true;
  }
  // admin_endpoints.h: they load files and change the serving model; without a key nothing
  // tells the operator from any other local process, so a keyless server has none.
  if (is_admin(m.ep) && o.api_key.empty()) {
    refuse(p, 403, "admin_needs_api_key",
           "the admin endpoints are off on a server without an API key (start it with --api-key or "
           "--api-key-env)");
    return true;
  }
  if (m.ep != EndpointId::kPage && m.ep != EndpointId::kHealth && !authorized(h.header("Authorization"), o.api_key)) {
    refuse(p, 401, "invalid_api_key", "missing or wrong API key (send 'Authorization: Bearer KEY')");
    return true;
  }
  if (ctx_->stopping.load() && m.ep != EndpointId::kHealth) {
    refuse(p, 503, "shutting_down", "the server is stopping");
    return true;
  }
  if (ctx_->embedding_only) {
    if (const char* why = embedding_only_refusal(m.ep, ctx_->embedder != nullptr, ctx_->reranker != nullptr)) {
      p.respond = server::error_response(ApiError(501, "not_supported_error", "not_supported", why), o.retry_after_s);
      return true;
    }
  }
  return false;
}

bool HttpServer::admit(const RequestHead& h, const EndpointMatch& m, RequestPlan& p, bool* heavy) {
  ServerContext& ctx = *ctx_;
  const ServerOptions& o = ctx.options;
  // Bodies: session imports up to --sessions-max-mib (one at a time), everything else up to
  // --max-body-kib, within the budget of bodies held at once.
  const bool import = m.ep == EndpointId::kImport && ctx.service.max_sessions() > 0;
  p.body_limit = import ? ctx.service.max_session_bytes() : o.max_body_bytes;
  const uint64_t declared = h.chunked ? p.body_limit : h.content_length.value_or(0);
  if (declared > p.body_limit) {
    refuse(p, 413, "request_too_large",
           "request body of " + std::to_string(declared) + " bytes; the limit here is " + std::to_string(p.body_limit) +
               (import ? " (--sessions-max-mib)" : " (--max-body-kib)"));
    return false;
  }
  std::vector<std::shared_ptr<void>> tokens;
  if (import) {
    tokens.push_back(imports_.try_take());
    if (tokens.back() == nullptr) {
      refuse(p, 429, "server_busy", "another session import is running; retry shortly");
      return false;
    }
  } else if (declared > 0) {
    tokens.push_back(body_bytes_.try_take(declared));
    if (tokens.back() == nullptr) {
      ctx.counters.overloaded.fetch_add(1);
      refuse(p, 503, "server_busy", "too many request bodies in memory at once; retry shortly");
      return false;
    }
  }
  if (m.ep == EndpointId::kAdminSwap || m.ep == EndpointId::kAdminReload) {
    tokens.push_back(ctx.model_changes.try_take());
    if (tokens.back() == nullptr) {
      refuse(p, 429, "server_busy", "another model swap or reload is running; retry when it has finished");
      return false;
    }
  }
  const bool helper = is_helper(m.ep);
  if (helper) {
    tokens.push_back(helpers_.try_take());
    if (tokens.back() == nullptr) {
      refuse(p, 429, "server_busy",
             "/tokenize, /detokenize and /apply-template: " + std::to_string(o.helper_slots) +
                 " at a time; retry shortly");
      return false;
    }
  }
  if (is_docqa(m.ep)) {
    tokens.push_back(docqa_requests_.try_take());
    if (tokens.back() == nullptr) {
      refuse(p, 429, "server_busy",
             "document Q&A: " + std::to_string(kDocqaRequestsAtOnce) + " requests at a time; retry shortly");
      return false;
    }
  }
  if (!tokens.empty()) p.admission = std::make_shared<std::vector<std::shared_ptr<void>>>(std::move(tokens));
  *heavy = helper || import || declared >= kHeavyBody;
  return true;
}

void HttpServer::set_handler(EndpointMatch m, bool heavy, RequestPlan& p) {
  ServerContext& ctx = *ctx_;
  using E = EndpointId;
  switch (m.ep) {
    case E::kChat:
    case E::kCompletion: {
      const Endpoint ep = m.ep == E::kChat ? Endpoint::kChat : Endpoint::kCompletion;
      p.run = guarded([&ctx, ep](HttpRequest& q, ResponseWriter& w) { generate(ctx, q, w, ep); }, heavy);
      break;
    }
    case E::kTokenize:
      p.run = guarded([&ctx](HttpRequest& q, ResponseWriter& w) { tokenize(ctx, q, w); }, heavy);
      break;
    case E::kDetokenize:
      p.run = guarded([&ctx](HttpRequest& q, ResponseWriter& w) { w.send(detokenize(ctx, q)); }, heavy);
      break;
    case E::kApplyTemplate:
      p.run = guarded([&ctx](HttpRequest& q, ResponseWriter& w) { w.send(apply_template(ctx, q)); }, heavy);
      break;
    case E::kEmbeddings:  // waits for its forward: a worker (embeddings_endpoint.h)
      p.run = guarded([&ctx](HttpRequest& q, ResponseWriter& w) { w.send(embeddings(ctx, q)); }, heavy);
      break;
    case E::kRerank:
      p.run = guarded([&ctx](HttpRequest& q, ResponseWriter& w) { w.send(rerank(ctx, q)); }, heavy);
      break;
    case E::kClassify:  // blocks for its forwards: a worker (classify_endpoint.h)
      p.run = guarded([&ctx](HttpRequest& q, ResponseWriter& w) { w.send(classify(ctx, q)); }, heavy);
      break;
    // Document Q&A embeds, generates and writes the index file: a worker, never the I/O thread
    // (docqa_endpoints.h); the list too, since it waits for the index's one user.
    case E::kDocqaPut:
      p.run = guarded([&ctx](HttpRequest& q, ResponseWriter& w) { w.send(docqa_put_document(ctx, q)); }, heavy);
      break;
    case E::kDocqaList:
      p.run = guarded([&ctx](HttpRequest&, ResponseWriter& w) { w.send(docqa_list_documents(ctx)); }, heavy);
      break;
    case E::kDocqaDelete:
      p.run = guarded([&ctx, key = m.session_id](HttpRequest&, ResponseWriter& w) {
        w.send(docqa_delete_document(ctx, key));
      }, heavy);
      break;
    case E::kDocqaSearch:
      p.run = guarded([&ctx](HttpRequest& q, ResponseWriter& w) { w.send(docqa_search(ctx, q)); }, heavy);
      break;
    case E::kDocqaAsk:
      p.run = guarded([&ctx](HttpRequest& q, ResponseWriter& w) { docqa_ask(ctx, q, w); }, heavy);
      break;
    case E::kImport:
      p.run = guarded([&ctx](HttpRequest& q, ResponseWriter& w) { w.send(import_session(ctx, q)); }, heavy);
      break;
    case E::kAdminSwap:  // blocks while the model loads: a worker, never the I/O thread
      p.run = guarded([&ctx](HttpRequest& q, ResponseWriter& w) { w.send(admin_swap(ctx, q)); }, true);
      break;
    case E::kAdminReload:
      p.run = guarded([&ctx](HttpRequest&, ResponseWriter& w) { w.send(admin_reload(ctx)); }, true);
      break;
    case E::kAdminPressure:
      p.run = guarded([&ctx](HttpRequest& q, ResponseWriter& w) { w.send(admin_pressure(ctx, q)); }, heavy);
      break;
    case E::kAdminTrim:  // waits for the scheduler to run it: a worker, never the I/O thread
      p.run = guarded([&ctx](HttpRequest& q, ResponseWriter& w) { w.send(admin_trim(ctx, q)); }, heavy);
      break;
    default: {
      // Cheap, never blocking: answered on the I/O thread, so they work even when every
      // worker is busy (/health above all).
      const E ep = m.ep;
      std::string id = std::move(m.session_id);
      const int retry_after = ctx.options.retry_after_s;
      p.run_inline = [&ctx, ep, id, retry_after](HttpRequest& q) -> HttpResponse {
        try {
          switch (ep) {
            case E::kModels: return models(ctx);
            case E::kHealth: return health(ctx);
            case E::kMetrics: return metrics(ctx);
            case E::kPage: return chat_page();
            case E::kExport: return export_session(ctx, id);
            case E::kDelete: return delete_session(ctx, id);
            case E::kAdminDegradation: return admin_degradation(ctx);
            case E::kAdminPause: return admin_pause(ctx, q, true);
            case E::kAdminResume: return admin_pause(ctx, q, false);
            case E::kAdminState: return admin_state(ctx);
            default: break;
          }
          throw ApiError(404, "invalid_request_error", "not_found", "no such endpoint");
        } catch (const ApiError& e) {
          return server::error_response(e, retry_after);
        } catch (const Error& e) {
          return server::error_response(api_error_from(e), retry_after);  // the runtime shut down
        }
      };
      break;
    }
  }
}

HttpServer::Handler HttpServer::guarded(Handler fn, bool heavy) {
  return [this, fn = std::move(fn), heavy](HttpRequest& request, ResponseWriter& out) {
    busy_workers_.fetch_add(1);
    if (heavy) trim_due_.store(true);
    const int retry_after = ctx_->options.retry_after_s;
    auto fail = [&](const ApiError& e) {
      if (!out.started()) {
        out.send(server::error_response(e, retry_after));
      } else {
        // The head is out (200): the stream ends here; the client sees it cut short.
        log_message(LogLevel::kWarn, std::string("server: error after the response started: ") + e.what());
      }
    };
    try {
      fn(request, out);
    } catch (const ApiError& e) {
      fail(e);
    } catch (const Error& e) {
      fail(api_error_from(e));
    } catch (const std::exception& e) {
      log_message(LogLevel::kError, std::string("server: handler failed: ") + e.what());
      fail(ApiError(500, "server_error", "internal", "internal error"));
    }
    if (!out.started()) out.send(server::error_response(ApiError(500, "server_error", "internal", "no response"), 0));
    out.end_stream();
    std::string().swap(request.body);
    if (busy_workers_.fetch_sub(1) == 1) release_memory_when_idle();
  };
}

void HttpServer::release_memory_when_idle() {
  // memory_policy.h: only once the last busy worker finishes after a heavy request, so it costs
  // nothing under load.
  if (trim_due_.exchange(false)) release_free_memory();
}

}  // namespace edgellm::server
