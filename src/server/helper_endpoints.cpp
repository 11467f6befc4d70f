#include "server/helper_endpoints.h"

#include <ctime>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/chat_template.h"
#include "core/json.h"
#include "core/utf8.h"
#include "server/api_error.h"
#include "server/api_response.h"
#include "server/chat_page.h"
#include "server/embeddings_endpoint.h"
#include "server/openai_request.h"
#include "server/structured_request.h"
#include "service/inference_service.h"
#include "service/request_limits.h"
#include "tokenizer/tokenizer.h"

namespace edgellm::server {
namespace {

// /tokenize writes its answer in pieces of about this size.
constexpr size_t kPieceBytes = size_t{64} << 10;

bool optional_bool(const Json& body, const char* name, bool fallback) {
  const Json* v = body.find(name);
  if (v == nullptr || v->is_null()) return fallback;
  if (!v->is_bool()) throw ApiError::bad_field(name, "expected true or false");
  return v->as_bool();
}

// A token's text as JSON: a string when it is valid UTF-8 on its own, else the array of its bytes.
void append_piece(std::string& out, const std::string& piece) {
  if (utf8::first_invalid(piece) == piece.size()) {
    json_escape(out, piece);
    return;
  }
  out += '[';
  for (size_t i = 0; i < piece.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(static_cast<unsigned char>(piece[i]));
  }
  out += ']';
}

}  // namespace

void tokenize(ServerContext& ctx, HttpRequest& request, ResponseWriter& out) {
  const std::shared_ptr<InferenceService> svc = ctx.service.serving();  // held: its tokenizer is used to the end
  std::vector<int32_t> ids;
  bool with_pieces = false;
  {
    const Json body = parse_json_request(request, ctx.options.max_json_depth);
    const Json* content = body.find("content");
    if (content == nullptr || !content->is_string()) throw ApiError::bad_field("content", "expected a string");
    const bool add_special = optional_bool(body, "add_special", false);  // llama-server's default
    with_pieces = optional_bool(body, "with_pieces", false);
    ids = svc->tokenizer().encode(content->as_string(), add_special, false);
  }
  std::string().swap(request.body);  // the text is no longer needed while the answer is written
  const Tokenizer& tok = svc->tokenizer();  // the same version's (a swap may switch in another)
  std::string piece = "{\"tokens\": [";
  bool streaming = false;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) piece += ", ";
    if (with_pieces) {
      piece += "{\"id\": " + std::to_string(ids[i]) + ", \"piece\": ";
      append_piece(piece, tok.token_to_piece(ids[i]));
      piece += '}';
    } else {
      piece += std::to_string(ids[i]);
    }
    if (piece.size() >= kPieceBytes) {
      if (!streaming) out.begin_stream(200, "application/json", {}, " ");
      streaming = true;
      if (!out.write(std::exchange(piece, std::string()))) return;  // the client left
      piece.reserve(kPieceBytes + 256);
    }
  }
  piece += "]}";
  if (!streaming) {
    HttpResponse r;
    r.content_type = "application/json";
    r.body = std::move(piece);
    out.send(std::move(r));
    return;
  }
  out.write(std::move(piece));
  out.end_stream();
}

HttpResponse detokenize(ServerContext& ctx, HttpRequest& request) {
  const std::shared_ptr<InferenceService> svc = ctx.service.serving();
  std::vector<int32_t> ids;
  {
    const Json body = parse_json_request(request, ctx.options.max_json_depth);
    const Json* tokens = body.find("tokens");
    if (tokens == nullptr || !tokens->is_array()) throw ApiError::bad_field("tokens", "expected an array of token ids");
    const int32_t n_vocab = svc->tokenizer().n_vocab();
    ids.reserve(tokens->size());
    for (size_t i = 0; i < tokens->size(); ++i) {
      const Json& t = tokens->at(i);
      if (!t.is_number() || t.as_number() < 0 || t.as_number() >= n_vocab ||
          t.as_number() != static_cast<int32_t>(t.as_number())) {
        throw ApiError::bad_field("tokens[" + std::to_string(i) + "]",
                                  "expected a token id in [0, " + std::to_string(n_vocab) + ")");
      }
      ids.push_back(static_cast<int32_t>(t.as_number()));
    }
  }
  Json out = Json::object();
  // Ids that end inside a character give ill-formed UTF-8: wire_json writes U+FFFD for it.
  out.set("content", svc->tokenizer().decode(ids));
  return json_response(200, out);
}

HttpResponse apply_template(ServerContext& ctx, HttpRequest& request) {
  const Json body = parse_json_request(request, ctx.options.max_json_depth);
  const std::shared_ptr<InferenceService> svc = ctx.service.serving();
  Json out = Json::object();
  // As a chat request renders it: a call's arguments as an object, the tools in the context.
  Json context = Json::object();
  if (const Json* tools = body.find("tools"); tools != nullptr && !tools->is_null()) {
    context.set("tools", parse_tool_request(body).tools);
  }
  // The tool turns checked as at submit (every face's check_tool_turns).
  const Json messages = normalize_chat_messages(parse_messages(body.find("messages")));
  check_tool_turns(messages);
  out.set("prompt", svc->chat_template().render(messages, true, context));
  return json_response(200, out);
}

// The generation model's /v1/models entry (absent on an embedding-only server).
static Json generator_model(ServerContext& ctx) {
  const std::shared_ptr<InferenceService> svc = ctx.service.serving();
  const ServedParams p = ctx.service.params();
  Json m = Json::object();
  m.set("id", ctx.options.model_name);
  m.set("object", "model");
  m.set("created", static_cast<int64_t>(std::time(nullptr)));
  m.set("owned_by", "edgellm");
  Json meta = Json::object();
  meta.set("n_ctx", p.n_ctx);
  meta.set("n_parallel", p.n_parallel);
  meta.set("n_vocab", svc->tokenizer().n_vocab());
  meta.set("model_version", ctx.service.model_version());
  m.set("meta", std::move(meta));
  return m;
}

HttpResponse models(ServerContext& ctx) {
  Json data = Json::array();
  if (!ctx.embedding_only) data.push_back(generator_model(ctx));
  append_embedding_models(ctx, data);  // --embedding-model, --rerank-model; --embeddings' -m
  Json body = Json::object();
  body.set("object", "list");
  body.set("data", std::move(data));
  return json_response(200, body);
}

HttpResponse health(ServerContext& ctx) {
  const bool stopping = ctx.stopping.load();
  Json j = Json::object();
  j.set("status", stopping ? "stopping" : "ok");
  // POST /admin/pause: still 200 (the server is up and queues requests), but a balancer or an
  // operator can see that nothing is generated until /admin/resume.
  if (!stopping) j.set("paused", ctx.service.paused());
  return json_response(stopping ? 503 : 200, j);
}

HttpResponse metrics(ServerContext& ctx) {
  HttpResponse r;
  r.content_type = "text/plain; version=0.0.4";
  // The Runtime's (service, ladder, router, sessions, swaps: edgellm_*) and the HTTP side's
  // (edgellm_http_*); no name is in both. Then the embedding runtimes' (edgellm_embedding_*, labelled runtime="embeddings" / "rerank").
  // Embedding-only (--embeddings): the server's runtime is the embedder, listed once, labelled.
  r.body = (ctx.embedding_only ? std::string() : ctx.service.metrics_prometheus()) + ctx.counters.to_prometheus();
  r.body += embedding_metrics_prometheus(ctx, r.body);
  return r;
}

HttpResponse chat_page() {
  HttpResponse r;
  r.content_type = "text/html; charset=utf-8";
  r.body = std::string(chat_page_html());
  r.headers.emplace_back("Content-Security-Policy",
                         "default-src 'self'; style-src 'unsafe-inline'; script-src 'unsafe-inline'");
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  return r;
}

}  // namespace edgellm::server
