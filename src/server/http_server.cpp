#include "server/http_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <chrono>
#include <ctime>
#include <exception>
#include <random>
#include <algorithm>
#include <string>
#include <utility>

#include "core/error.h"
#include "core/json.h"
#include "core/log.h"
#include "server/api_error.h"
#include "server/auth.h"
#include "server/chat_page.h"
#include "server/completion_channel.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/router.h"
#include "service/inference_service.h"
#include "tokenizer/tokenizer.h"

namespace edgellm::server {
namespace {

using Clock = std::chrono::steady_clock;

// How often a waiting worker looks at its client when no token arrives (prefill of a long
// prompt, a paused service): the bound on noticing a disconnect between tokens.
constexpr std::chrono::milliseconds kPollInterval{20};

void send_json(httplib::Response& res, int status, const Json& body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) {
  send_json(res, e.status(), e.to_json());
}

// The service's refusals as HTTP errors.
ApiError api_error_from(const Error& e) {
  switch (e.code()) {
    case ErrorCode::kBusy:
      return ApiError(429, "rate_limit_error", "server_busy", std::string("server busy: ") + e.what());
    case ErrorCode::kInvalidArgument:
      return ApiError(400, "invalid_request_error", "invalid_value", e.what());
    case ErrorCode::kContextFull:
      return ApiError(400, "invalid_request_error", "context_length_exceeded", e.what());
    case ErrorCode::kCancelled:
      return ApiError(503, "server_error", "shutting_down", e.what());
    default:
      return ApiError(500, "server_error", error_code_name(e.code()), e.what());
  }
}

// The shared state of one generation response, owned jointly by the handler, httplib's content
// provider and its releaser (all run on the same worker thread, one after the other).
struct Generation {
  std::shared_ptr<CompletionChannel> channel;
  RequestId id = 0;
  ResponseHead head;
  bool stream = false;
  bool include_usage = false;
  CompletionChannel::Batch first;  // what arrived before the response started
  bool first_pending = true;
  bool head_sent = false;
  bool done = false;
  // Tokens of batches that had no text yet (held back: incomplete UTF-8, a possible stop-string
  // start): counted into the next chunk written, so the chunks' x_edgellm.tokens add up.
  int32_t untold_tokens = 0;
  std::string text;  // non-streaming: the answer so far
  std::string session_id;  // x_edgellm_session: store the request's KV under it when it ends
};

constexpr const char* kSessionImportPath = "/v1/sessions/import";

// "/v1/sessions/{id}/export" -> id; "" for any other path.
std::string export_id_of(const std::string& path) {
  const std::string head = "/v1/sessions/", tail = "/export";
  if (path.size() <= head.size() + tail.size() || path.compare(0, head.size(), head) != 0 ||
      path.compare(path.size() - tail.size(), tail.size(), tail) != 0) {
    return {};
  }
  std::string id = path.substr(head.size(), path.size() - head.size() - tail.size());
  return id.find('/') == std::string::npos ? id : std::string();
}

// body.x_edgellm.session = info.
void set_session_info(Json& body, Json info) {
  Json x = body.find("x_edgellm") != nullptr ? *body.find("x_edgellm") : Json::object();
  x.set("session", std::move(info));
  body.set("x_edgellm", std::move(x));
}

std::string new_session_id() {
  std::random_device rd;
  const uint64_t v = (static_cast<uint64_t>(rd()) << 32) | rd();
  char buf[24];
  std::snprintf(buf, sizeof(buf), "sess-%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

void HttpServer::check_options(const ServerOptions& o) {
  if (!is_loopback_host(o.host) && o.api_key.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "--host " + o.host +
                                                 " is reachable from other machines: give --api-key KEY "
                                                 "(clients send 'Authorization: Bearer KEY')");
  }
  if (o.max_body_bytes == 0 || o.max_json_depth < 2 || o.deadline_ms <= 0) {
    throw Error(ErrorCode::kInvalidArgument, "server options: body size, JSON depth and deadline must be positive");
  }
}

HttpServer::HttpServer(InferenceService& service, ServerOptions options)
    : service_(service),
      options_(std::move(options)),
      http_(std::make_unique<httplib::Server>()),
      sessions_(options_.max_sessions, options_.max_session_bytes) {
  check_options(options_);
  if (options_.model_name.empty()) options_.model_name = "edgellm";
  int threads = options_.http_threads;
  if (threads <= 0) threads = service_.context_params().n_seq_max + service_.params().max_queued + 16;
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  // Session uploads may be larger than JSON bodies: httplib's one limit is the larger of the two,
  // and every other endpoint is held to max_body_bytes by the pre-routing handler (Content-Length,
  // before the body is read) and guarded() (chunked bodies, after).
  http_->set_payload_max_length(options_.max_sessions > 0 ? std::max(options_.max_body_bytes, options_.max_session_bytes)
                                                          : options_.max_body_bytes);
  http_->set_read_timeout(options_.read_timeout_s, 0);
  http_->set_write_timeout(10, 0);
  http_->set_keep_alive_timeout(2);
  http_->set_keep_alive_max_count(100);
  // httplib 0.11 listens with a backlog of 5: a burst of clients (exactly when 429s matter)
  // overflows it and the kernel drops connections. Keep the listening socket (the options
  // callback sees it before bind) and listen again with the system's maximum after bind.
  http_->set_socket_options([this](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    listen_fd_ = sock;
  });
  install_routes();
}

HttpServer::~HttpServer() { stop(); }

int HttpServer::bind() {
  if (options_.port == 0) {
    port_ = http_->bind_to_any_port(options_.host);
  } else {
    port_ = http_->bind_to_port(options_.host, options_.port) ? options_.port : -1;
  }
  if (port_ < 0) {
    throw Error(ErrorCode::kIo, "cannot listen on " + options_.host + ":" + std::to_string(options_.port));
  }
  if (listen_fd_ >= 0) ::listen(listen_fd_, SOMAXCONN);
  return port_;
}

void HttpServer::serve() {
  if (port_ < 0) throw Error(ErrorCode::kInvalidArgument, "HttpServer::serve before bind");
  http_->listen_after_bind();
}

void HttpServer::stop() {
  // Workers waiting on a generation see stopping_ and cancel it, so the pool can be joined.
  stopping_.store(true);
  if (http_) http_->stop();
}

void HttpServer::install_routes() {
  httplib::Server& s = *http_;

  // Every request: count it, check the key (except the page and /health), add CORS headers.
  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    counters_.http_requests.fetch_add(1);
    if (!options_.cors_origin.empty()) {
      res.set_header("Access-Control-Allow-Origin", options_.cors_origin);
      res.set_header("Vary", "Origin");
      if (req.method == "OPTIONS") {
        res.set_header("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS");
        res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
        res.set_header("Access-Control-Max-Age", "600");
        res.status = 204;
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    if (req.path == "/" || req.path == "/health") return httplib::Server::HandlerResponse::Unhandled;
    if (!authorized(req.get_header_value("Authorization"), options_.api_key)) {
      send_error(res, ApiError(401, "authentication_error", "invalid_api_key",
                               "missing or wrong API key (send 'Authorization: Bearer KEY')"));
      return httplib::Server::HandlerResponse::Handled;
    }
    // `curl -X POST .../export` sends neither Content-Length nor a chunked body, which httplib
    // 0.11 answers with 400 before routing; an export needs no body, so answer it here.
    if (req.method == "POST" && !req.has_header("Content-Length") && !req.has_header("Transfer-Encoding")) {
      if (const std::string id = export_id_of(req.path); !id.empty()) {
        try {
          handle_session_export(id, res);
        } catch (const ApiError& e) {
          send_error(res, e);
        }
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    if (req.path != kSessionImportPath && req.has_header("Content-Length")) {
      const std::string cl = req.get_header_value("Content-Length");
      const unsigned long long n = std::strtoull(cl.c_str(), nullptr, 10);
      if (n > options_.max_body_bytes) {
        send_error(res, ApiError(413, "invalid_request_error", "request_too_large", "request body too large"));
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });

  // Statuses httplib sets itself (404, 413 payload too large, 400 bad request line, ...) get an
  // OpenAI error body; responses that already have one keep it. Counts every 4xx/5xx.
  s.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request&, httplib::Response& res) {
    if (res.status == 429) counters_.http_429.fetch_add(1);
    if (res.status >= 500) {
      counters_.http_5xx.fetch_add(1);
    } else {
      counters_.http_4xx.fetch_add(1);
    }
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    const char* what = res.status == 404   ? "no such endpoint"
                       : res.status == 405 ? "method not allowed"
                       : res.status == 413 ? "request body too large"
                       : res.status == 414 ? "request URI too long"
                                           : "bad request";
    const char* code = res.status == 413 ? "request_too_large" : res.status == 404 ? "not_found" : "bad_request";
    send_json(res, res.status,
              ApiError(res.status, res.status >= 500 ? "server_error" : "invalid_request_error", code, what).to_json());
    return httplib::Server::HandlerResponse::Handled;
  }));

  // Every handler runs inside this: ApiError -> its response, service Error -> mapped status,
  // anything else -> 500 (never an exception into httplib).
  auto guarded = [this](auto fn) {
    return [this, fn](const httplib::Request& req, httplib::Response& res) {
      try {
        if (req.path != kSessionImportPath && req.body.size() > options_.max_body_bytes) {
          throw ApiError(413, "invalid_request_error", "request_too_large", "request body too large");
        }
        fn(req, res);
      } catch (const ApiError& e) {
        send_error(res, e);
      } catch (const Error& e) {
        send_error(res, api_error_from(e));
      } catch (const std::exception& e) {
        log_message(LogLevel::kError, std::string("server: handler failed: ") + e.what());
        send_error(res, ApiError(500, "server_error", "internal", "internal error"));
      }
    };
  };

  s.Post("/v1/chat/completions", guarded([this](const httplib::Request& q, httplib::Response& r) {
           handle_generate(q, r, Endpoint::kChat);
         }));
  s.Post("/v1/completions", guarded([this](const httplib::Request& q, httplib::Response& r) {
           handle_generate(q, r, Endpoint::kCompletion);
         }));
  // llama-server's unprefixed aliases.
  s.Post("/chat/completions", guarded([this](const httplib::Request& q, httplib::Response& r) {
           handle_generate(q, r, Endpoint::kChat);
         }));
  s.Post("/completions", guarded([this](const httplib::Request& q, httplib::Response& r) {
           handle_generate(q, r, Endpoint::kCompletion);
         }));
  s.Post("/tokenize", guarded([this](const httplib::Request& q, httplib::Response& r) { handle_tokenize(q, r); }));
  s.Post("/detokenize", guarded([this](const httplib::Request& q, httplib::Response& r) { handle_detokenize(q, r); }));
  s.Post("/apply-template",
         guarded([this](const httplib::Request& q, httplib::Response& r) { handle_apply_template(q, r); }));
  s.Post(kSessionImportPath,
         guarded([this](const httplib::Request& q, httplib::Response& r) { handle_session_import(q, r); }));
  s.Post(R"(/v1/sessions/([^/]+)/export)", guarded([this](const httplib::Request& q, httplib::Response& r) {
           handle_session_export(q.matches[1].str(), r);
         }));
  // GET too: a plain download (`curl -o`, a browser) of the same bytes.
  s.Get(R"(/v1/sessions/([^/]+)/export)", guarded([this](const httplib::Request& q, httplib::Response& r) {
          handle_session_export(q.matches[1].str(), r);
        }));
  s.Delete(R"(/v1/sessions/([^/]+))", guarded([this](const httplib::Request& q, httplib::Response& r) {
             handle_session_delete(q.matches[1].str(), r);
           }));
  s.Get("/v1/models", guarded([this](const httplib::Request&, httplib::Response& r) { handle_models(r); }));
  s.Get("/models", guarded([this](const httplib::Request&, httplib::Response& r) { handle_models(r); }));
  s.Get("/health", [this](const httplib::Request&, httplib::Response& r) {
    Json j = Json::object();
    j.set("status", stopping_.load() ? "stopping" : "ok");
    send_json(r, stopping_.load() ? 503 : 200, j);
  });
  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& r) {
    const std::string sessions = "# HELP edgellm_server_sessions Sessions kept for x_edgellm_session and export.\n"
                                 "# TYPE edgellm_server_sessions gauge\n"
                                 "edgellm_server_sessions " + std::to_string(sessions_.count()) + "\n"
                                 "# HELP edgellm_server_session_bytes Bytes of the sessions kept.\n"
                                 "# TYPE edgellm_server_session_bytes gauge\n"
                                 "edgellm_server_session_bytes " + std::to_string(sessions_.bytes()) + "\n";
    r.set_content(service_.metrics().to_prometheus() + counters_.to_prometheus() + sessions, "text/plain; version=0.0.4");
  });
  s.Get("/", [](const httplib::Request&, httplib::Response& r) {
    r.set_header("Content-Security-Policy", "default-src 'self'; style-src 'unsafe-inline'; script-src 'unsafe-inline'");
    r.set_header("X-Content-Type-Options", "nosniff");
    r.set_content(std::string(chat_page_html()), "text/html; charset=utf-8");
  });
}

void HttpServer::handle_models(httplib::Response& res) {
  Json m = Json::object();
  m.set("id", options_.model_name);
  m.set("object", "model");
  m.set("created", static_cast<int64_t>(std::time(nullptr)));
  m.set("owned_by", "edgellm");
  Json meta = Json::object();
  meta.set("n_ctx", service_.context_params().n_ctx);
  meta.set("n_parallel", service_.context_params().n_seq_max);
  meta.set("n_vocab", service_.tokenizer().n_vocab());
  m.set("meta", std::move(meta));
  Json data = Json::array();
  data.push_back(std::move(m));
  Json body = Json::object();
  body.set("object", "list");
  body.set("data", std::move(data));
  send_json(res, 200, body);
}

void HttpServer::handle_tokenize(const httplib::Request& req, httplib::Response& res) {
  const Json body = parse_body(req.body, options_.max_json_depth);
  const Json* content = body.find("content");
  if (content == nullptr || !content->is_string()) throw ApiError::bad_field("content", "expected a string");
  bool add_special = false;  // llama-server's default
  bool with_pieces = false;
  if (const Json* v = body.find("add_special"); v != nullptr && !v->is_null()) {
    if (!v->is_bool()) throw ApiError::bad_field("add_special", "expected true or false");
    add_special = v->as_bool();
  }
  if (const Json* v = body.find("with_pieces"); v != nullptr && !v->is_null()) {
    if (!v->is_bool()) throw ApiError::bad_field("with_pieces", "expected true or false");
    with_pieces = v->as_bool();
  }
  const Tokenizer& tok = service_.tokenizer();
  const std::vector<int32_t> ids = tok.encode(content->as_string(), add_special, false);
  Json tokens = Json::array();
  for (int32_t id : ids) {
    if (with_pieces) {
      Json t = Json::object();
      t.set("id", id);
      t.set("piece", tok.token_to_piece(id));
      tokens.push_back(std::move(t));
    } else {
      tokens.push_back(id);
    }
  }
  Json out = Json::object();
  out.set("tokens", std::move(tokens));
  send_json(res, 200, out);
}

void HttpServer::handle_detokenize(const httplib::Request& req, httplib::Response& res) {
  const Json body = parse_body(req.body, options_.max_json_depth);
  const Json* tokens = body.find("tokens");
  if (tokens == nullptr || !tokens->is_array()) throw ApiError::bad_field("tokens", "expected an array of token ids");
  const int32_t n_vocab = service_.tokenizer().n_vocab();
  std::vector<int32_t> ids;
  for (size_t i = 0; i < tokens->size(); ++i) {
    const Json& t = tokens->at(i);
    if (!t.is_number() || t.as_number() < 0 || t.as_number() >= n_vocab || t.as_number() != static_cast<int32_t>(t.as_number())) {
      throw ApiError::bad_field("tokens[" + std::to_string(i) + "]",
                                "expected a token id in [0, " + std::to_string(n_vocab) + ")");
    }
    ids.push_back(static_cast<int32_t>(t.as_number()));
  }
  Json out = Json::object();
  out.set("content", service_.tokenizer().decode(ids));
  send_json(res, 200, out);
}

void HttpServer::handle_apply_template(const httplib::Request& req, httplib::Response& res) {
  const Json body = parse_body(req.body, options_.max_json_depth);
  Json out = Json::object();
  out.set("prompt", service_.chat_template().render(parse_messages(body.find("messages")), true));
  send_json(res, 200, out);
}

void HttpServer::handle_generate(const httplib::Request& req, httplib::Response& res, Endpoint endpoint) {
  const Json body = parse_body(req.body, options_.max_json_depth);
  ParsedRequest p = endpoint == Endpoint::kChat ? parse_chat_request(body) : parse_completion_request(body);

  // A request that continues a session is answered here (the cloud holds no KV of it).
  if (endpoint == Endpoint::kChat && !p.stream && options_.router.enabled() && p.session_id.empty()) {
    ResponseHead head;
    head.endpoint = endpoint;
    head.id = "chatcmpl-" + std::to_string(next_response_id_.fetch_add(1));
    head.created = static_cast<int64_t>(std::time(nullptr));
    head.model = p.model.empty() ? options_.model_name : p.model;
    answer_routed(body, std::move(p), head, res);
    return;
  }

  auto g = std::make_shared<Generation>();
  g->channel = std::make_shared<CompletionChannel>();
  g->stream = p.stream;
  g->include_usage = p.stream && p.include_usage;
  g->head.endpoint = endpoint;
  g->head.id = (endpoint == Endpoint::kChat ? "chatcmpl-" : "cmpl-") + std::to_string(next_response_id_.fetch_add(1));
  g->head.created = static_cast<int64_t>(std::time(nullptr));
  g->head.model = p.model.empty() ? options_.model_name : p.model;

  ServiceRequest& sr = p.request;
  sr.deadline_ms = options_.deadline_ms;
  if (!p.session_id.empty()) {
    if (options_.max_sessions == 0) {
      throw ApiError::bad_field("x_edgellm_session", "sessions are off on this server (--sessions 0)");
    }
    // Unknown id: a new session, stored when this request ends.
    if (std::shared_ptr<const std::string> saved = sessions_.get(p.session_id)) sr.session_in = *saved;
    sr.session_out = true;
    g->session_id = p.session_id;
  }
  std::shared_ptr<CompletionChannel> ch = g->channel;
  sr.on_token = [ch](const TokenEvent& ev) { return ch->on_token(ev); };
  sr.on_finish = [ch](const RequestResult& r) { ch->on_finish(r); };
  const std::string prompt_for_log =
      options_.log_prompts ? (sr.messages.is_null() ? sr.prompt : sr.messages.dump()) : std::string();
  try {
    g->id = service_.submit(std::move(sr));
  } catch (const Error& e) {
    const ApiError api = api_error_from(e);
    if (api.status() == 429) res.set_header("Retry-After", std::to_string(options_.retry_after_s));
    throw api;
  }
  if (options_.log_prompts) {
    log_message(LogLevel::kInfo, g->head.id + " request " + std::to_string(g->id) + " prompt: " + prompt_for_log);
  }

  // Until the first token the request may still fail with its own status (context full, a
  // template error); httplib 0.11 gives a handler no socket to watch, so this wait is bounded
  // by the deadline and stop() instead.
  const Clock::time_point give_up = Clock::now() + std::chrono::milliseconds(options_.deadline_ms + 5000);
  while (!g->channel->wait_started(kPollInterval)) {
    if (stopping_.load() || Clock::now() > give_up) service_.cancel(g->id);
  }
  g->first = g->channel->take(std::chrono::milliseconds(0));
  if (g->first.finished && g->first.text.empty() && g->first.result.finish_reason == FinishReason::kError) {
    throw api_error_from(Error(g->first.result.error_code, g->first.result.error));
  }
  if (g->first.finished && g->first.result.finish_reason == FinishReason::kCancelled && g->first.text.empty()) {
    throw ApiError(503, "server_error", "cancelled", "the request was cancelled (server stopping or deadline)");
  }

  if (g->stream) counters_.streams.fetch_add(1);
  if (endpoint == Endpoint::kChat && options_.router.enabled()) {
    // Streamed chat with the router on: always local (the score needs the whole answer).
    counters_.route_local.fetch_add(1);
    res.set_header("x-edgellm-route", "local");
  }
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");

  // Runs on this worker thread after the handler returns, again and again until done or false.
  auto provider = [this, g](size_t, httplib::DataSink& sink) -> bool {
    auto client_gone = [&] {
      // Counted first: whoever sees the cancellation in the metrics also sees the disconnect.
      counters_.client_disconnects.fetch_add(1);
      g->channel->abandon();        // the next token callback returns false ...
      service_.cancel(g->id);       // ... and a request without tokens yet ends too
      g->done = true;
      return false;                 // httplib closes the connection
    };
    auto write = [&](const std::string& s) { return sink.write(s.data(), s.size()); };
    if (g->stream && !g->head_sent && g->head.endpoint == Endpoint::kChat) {
      if (!write(sse_event(role_chunk(g->head, g->include_usage)))) return client_gone();
    }
    g->head_sent = true;
    CompletionChannel::Batch b;
    if (g->first_pending) {
      b = std::move(g->first);
      g->first_pending = false;
    } else {
      b = g->channel->take(kPollInterval);
    }
    if (!sink.is_writable()) return client_gone();
    if (stopping_.load() && !b.finished) service_.cancel(g->id);
    g->untold_tokens += b.tokens;
    if (!b.text.empty()) {
      if (g->stream) {
        const int32_t tokens = std::exchange(g->untold_tokens, 0);
        if (!write(sse_event(text_chunk(g->head, b.text, tokens, b.decode_ms, g->include_usage)))) return client_gone();
      } else {
        g->text += b.text;
      }
    }
    if (!b.finished) return true;
    RequestResult& r = b.result;
    g->done = true;
    Json session_info;  // null unless the request named a session
    if (!g->session_id.empty() && r.finish_reason != FinishReason::kError) session_info = keep_session(g->session_id, r);
    if (g->stream) {
      if (r.finish_reason == FinishReason::kError) {
        write(sse_event(api_error_from(Error(r.error_code, r.error)).to_json()));
      } else {
        Json fin = final_chunk(g->head, r, g->include_usage);
        if (!session_info.is_null()) set_session_info(fin, std::move(session_info));
        write(sse_event(fin));
        if (g->include_usage) write(sse_event(usage_chunk(g->head, r)));
      }
      write("data: [DONE]\n\n");
    } else if (r.finish_reason == FinishReason::kError) {
      // The status line is out already (200); the body says what went wrong.
      write(api_error_from(Error(r.error_code, r.error)).to_json().dump());
    } else {
      Json out = completion_body(g->head, r);
      if (!session_info.is_null()) set_session_info(out, std::move(session_info));
      write(out.dump());
    }
    sink.done();
    return true;
  };
  // Called when the response ends; success false when the connection broke before done.
  auto releaser = [this, g](bool success) {
    if (!g->done) counters_.client_disconnects.fetch_add(1);
    if (!g->done || !success) {
      g->channel->abandon();
      service_.cancel(g->id);
    }
  };
  res.set_chunked_content_provider(g->stream ? "text/event-stream" : "application/json", provider, releaser);
}

Json HttpServer::keep_session(const std::string& id, RequestResult& r) {
  Json info = Json::object();
  info.set("id", id);
  const uint64_t n = r.session.size();
  const bool stored = !r.session.empty() && sessions_.put(id, std::move(r.session));
  if (!stored) {
    log_message(LogLevel::kWarn, "server: session " + id + " not stored: " +
                                     (n == 0 ? std::string("the service could not save it")
                                             : std::to_string(n) + " bytes, over --sessions-max-mib " +
                                                   std::to_string(options_.max_session_bytes >> 20)));
  }
  info.set("stored", stored);
  info.set("bytes", n);
  return info;
}

void HttpServer::handle_session_import(const httplib::Request& req, httplib::Response& res) {
  if (options_.max_sessions == 0) {
    throw ApiError(404, "invalid_request_error", "not_found", "sessions are off on this server (--sessions 0)");
  }
  std::string id = req.get_param_value("id");
  if (id.empty()) {
    id = new_session_id();
  } else if (!SessionStore::valid_id(id)) {
    throw ApiError::bad_field("id", "expected a session id: 1 to 64 characters of A-Z a-z 0-9 _ - .");
  }
  if (req.body.empty()) {
    throw ApiError(400, "invalid_request_error", "invalid_session",
                   "session: the body is empty (send the bytes POST /v1/sessions/{id}/export returned)");
  }
  if (req.body.size() > options_.max_session_bytes) {
    throw ApiError(413, "invalid_request_error", "request_too_large", "session larger than --sessions-max-mib");
  }
  int32_t positions = 0;
  try {
    positions = service_.check_session(req.body);
  } catch (const Error& e) {
    // kInvalidFile: truncated or corrupted; kInvalidArgument: another model file, KV type or shape.
    throw ApiError(400, "invalid_request_error",
                   e.code() == ErrorCode::kInvalidFile ? "invalid_session" : "session_mismatch", e.what());
  }
  if (!sessions_.put(id, req.body)) {
    throw ApiError(413, "invalid_request_error", "request_too_large", "session larger than --sessions-max-mib");
  }
  Json out = Json::object();
  out.set("id", id);
  out.set("object", "session");
  out.set("tokens", positions);
  out.set("bytes", static_cast<uint64_t>(req.body.size()));
  send_json(res, 200, out);
}

void HttpServer::handle_session_export(const std::string& id, httplib::Response& res) {
  if (!SessionStore::valid_id(id)) throw ApiError(404, "invalid_request_error", "session_not_found", "no such session");
  std::shared_ptr<const std::string> bytes = sessions_.get(id);
  if (bytes == nullptr) throw ApiError(404, "invalid_request_error", "session_not_found", "no session '" + id + "'");
  res.status = 200;
  res.set_header("Content-Disposition", "attachment; filename=\"" + id + ".edgls\"");
  res.set_content(*bytes, "application/octet-stream");
}

void HttpServer::handle_session_delete(const std::string& id, httplib::Response& res) {
  if (!SessionStore::valid_id(id)) throw ApiError(404, "invalid_request_error", "session_not_found", "no such session");
  if (!sessions_.erase(id)) throw ApiError(404, "invalid_request_error", "session_not_found", "no session '" + id + "'");
  Json out = Json::object();
  out.set("id", id);
  out.set("object", "session");
  out.set("deleted", true);
  send_json(res, 200, out);
}

RequestResult HttpServer::run_local(ServiceRequest sr, std::vector<float>* probabilities) {
  auto ch = std::make_shared<CompletionChannel>();
  sr.deadline_ms = options_.deadline_ms;
  sr.on_token = [ch](const TokenEvent& ev) { return ch->on_token(ev); };
  sr.on_finish = [ch](const RequestResult& r) { ch->on_finish(r); };
  RequestId id = 0;
  try {
    id = service_.submit(std::move(sr));
  } catch (const Error& e) {
    throw api_error_from(e);
  }
  for (;;) {
    CompletionChannel::Batch b = ch->take(kPollInterval);
    if (probabilities != nullptr) probabilities->insert(probabilities->end(), b.probabilities.begin(), b.probabilities.end());
    if (b.finished) {
      if (b.result.finish_reason == FinishReason::kError) throw api_error_from(Error(b.result.error_code, b.result.error));
      if (b.result.finish_reason == FinishReason::kCancelled) {
        throw ApiError(503, "server_error", "cancelled", "the request was cancelled (server stopping)");
      }
      return b.result;
    }
    if (stopping_.load()) service_.cancel(id);
  }
}

void HttpServer::answer_routed(const Json& body, ParsedRequest p, const ResponseHead& head, httplib::Response& res) {
  const RouterOptions& ro = options_.router;
  const Clock::time_point t0 = Clock::now();
  const Json messages = p.request.messages;
  RequestResult local;
  bool have_local = false;
  Confidence conf;
  std::vector<float> probs;
  Route route = Route::kCloud;
  std::string reason = "x_edgellm_route is cloud";
  auto answer_locally = [&] {
    if (have_local) return;
    ServiceRequest sr = p.request;  // a copy: the retry-in-cloud path may still need it
    sr.token_probability = true;
    local = run_local(std::move(sr), &probs);
    conf = confidence_of(probs);
    have_local = true;
    counters_.route_score_micros.fetch_add(static_cast<uint64_t>(conf.score * 1e6));
    counters_.route_scored.fetch_add(1);
  };
  if (p.route != "cloud") {
    answer_locally();
    if (p.route == "local") {
      route = Route::kLocal;
      reason = "x_edgellm_route is local";
    } else {
      route = route_for(conf, ro);
      reason = route == Route::kLocal ? "confident" : route == Route::kCloud ? "low confidence" : "between the thresholds";
    }
  }
  Json cloud_answer;
  if (route == Route::kCloud && ro.privacy) {
    counters_.route_privacy_blocks.fetch_add(1);
    route = Route::kLocal;
    reason += "; privacy mode: the cloud is never called";
  } else if (route == Route::kCloud && ro.cloud_url.empty()) {
    route = Route::kLocal;
    reason += "; no cloud configured";
  } else if (route == Route::kCloud) {
    // Context sync: system messages and the last turns verbatim, older turns summarized locally.
    const ContextSplit split = split_context(messages, ro.verbatim_turns);
    Json cloud_messages = split.recent;
    if (split.older.size() > 0) {
      std::string transcript;
      for (const Json& m : split.older.as_array()) {
        transcript += m.at("role").as_string() + ": " + m.at("content").as_string() + "\n";
      }
      ServiceRequest sum;
      Json sm = Json::array();
      Json sys = Json::object();
      sys.set("role", "system");
      sys.set("content", "Summarize this conversation in a few sentences.");
      sm.push_back(std::move(sys));
      Json user = Json::object();
      user.set("role", "user");
      user.set("content", transcript);
      sm.push_back(std::move(user));
      sum.messages = std::move(sm);
      sum.sampling.temperature = 0;
      sum.max_tokens = 128;
      cloud_messages = with_summary(split.recent, run_local(std::move(sum), nullptr).text);
    }
    Json req = Json::object();
    req.set("model", ro.cloud_model.empty() ? head.model : ro.cloud_model);
    req.set("messages", std::move(cloud_messages));
    for (const char* f : {"max_tokens", "max_completion_tokens", "temperature", "top_p", "stop", "seed",
                          "frequency_penalty", "presence_penalty"}) {
      if (const Json* v = body.find(f); v != nullptr && !v->is_null()) req.set(f, *v);
    }
    std::string error;
    if (cloud_chat(ro, req, &cloud_answer, &error)) {
      reason += "; answered by the cloud";
    } else {
      counters_.route_cloud_failures.fetch_add(1);
      cloud_answer = Json();
      route = Route::kLocal;
      reason += "; offline: " + error;
    }
  }
  if (route != Route::kCloud) answer_locally();

  RequestResult shown = local;
  if (route == Route::kCloud) {
    const Json& c = cloud_answer.at("choices").at(0);
    shown = RequestResult();
    shown.text = c.at("message").at("content").as_string();
    const Json* fr = c.find("finish_reason");
    shown.finish_reason = fr != nullptr && fr->is_string() && fr->as_string() == "length" ? FinishReason::kLength
                                                                                          : FinishReason::kStop;
    if (const Json* u = cloud_answer.find("usage"); u != nullptr && u->is_object()) {
      if (const Json* v = u->find("prompt_tokens"); v != nullptr && v->is_number()) {
        shown.stats.prompt_tokens = static_cast<int32_t>(v->as_number());
      }
      if (const Json* v = u->find("completion_tokens"); v != nullptr && v->is_number()) {
        shown.stats.completion_tokens = static_cast<int32_t>(v->as_number());
      }
    }
  }
  const double latency_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  (route == Route::kLocal              ? counters_.route_local
   : route == Route::kLocalLowConfidence ? counters_.route_low_confidence
                                         : counters_.route_cloud)
      .fetch_add(1);
  counters_.route_latency_us.fetch_add(static_cast<uint64_t>(latency_ms * 1e3));

  Json out = completion_body(head, shown);
  Json r = Json::object();
  r.set("route", route_name(route));
  r.set("reason", reason);
  r.set("score", have_local ? Json(conf.score) : Json());
  r.set("mean_p", have_local ? Json(conf.mean) : Json());
  r.set("min_p", have_local ? Json(conf.min) : Json());
  r.set("latency_ms", latency_ms);
  r.set("local_threshold", ro.local_threshold);
  r.set("cloud_threshold", ro.cloud_threshold);
  if (route == Route::kLocalLowConfidence && !ro.privacy && !ro.cloud_url.empty()) {
    Json retry = Json::object();
    retry.set("x_edgellm_route", "cloud");
    r.set("retry_in_cloud", std::move(retry));  // send the same request again with this field
  }
  Json x = out.find("x_edgellm") != nullptr ? *out.find("x_edgellm") : Json::object();
  x.set("route", std::move(r));
  out.set("x_edgellm", std::move(x));
  res.set_header("x-edgellm-route", route_name(route));
  send_json(res, 200, out);
}

}  // namespace edgellm::server
