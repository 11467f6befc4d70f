#include "server/docqa_endpoints.h"

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "core/utf8.h"
#include "runtime/runtime.h"
#include "server/api_error.h"
#include "server/api_response.h"
#include "server/completion_channel.h"
#include "server/openai_request.h"
#include "server/service_calls.h"
#include "service/embedding_service.h"

namespace edgellm::server {
namespace {

constexpr char kDocqaDocumentsPrefix[] = "/v1/docqa/documents/";
constexpr int64_t kMaxDocqaHits = 4096;  // as edgellm_docqa_search's top_k
// How often an ask's worker looks at its client while no text arrives (generation_endpoint.cpp's
// bound on noticing a disconnect).
constexpr std::chrono::milliseconds kAskPollInterval{20};
using AskClock = std::chrono::steady_clock;

ServedDocQa& served(ServerContext& ctx) {
  if (!ctx.docqa) {
    throw ApiError(501, "invalid_request_error", "not_supported",
                   ctx.embedder == nullptr
                       ? "document Q&A is off: this server has no embedding model (start it with --embedding-model "
                         "FILE --docqa-index FILE)"
                       : "document Q&A is off: start the server with --docqa-index FILE");
  }
  return *ctx.docqa;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// RFC 3986 percent-decoding of one path segment ('+' stays '+'); a '%' not followed by two hex
// digits is a 400.
std::string decode_segment(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    const int hi = i + 2 < s.size() ? hex_digit(s[i + 1]) : -1;
    const int lo = hi >= 0 ? hex_digit(s[i + 2]) : -1;
    if (lo < 0) throw ApiError::bad_field("key", "the path holds a '%' that is not followed by two hex digits");
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

std::string checked_key(const std::string& key) {
  try {
    DocQa::check_key(key);
  } catch (const Error& e) {
    throw ApiError(400, "invalid_request_error", "invalid_value", e.what(), "key");  // its text names the key
  }
  return key;
}

// A required text field: a string that is not blank; under the embedder's REFUSE input policy
// also valid UTF-8 (naming the byte), as edgellm_docqa_* checks it. (The body's parser already
// refuses ill-formed bytes and turns a lone surrogate's escape into U+FFFD: this is the C ABI's
// rule, kept for a string from anywhere.)
std::string text_field(const ServerContext& ctx, const Json& body, const char* name) {
  const Json* v = body.find(name);
  if (v == nullptr || !v->is_string()) throw ApiError::bad_field(name, "required: a string");
  const std::string& t = v->as_string();
  if (t.find_first_not_of(" \t\r\n") == std::string::npos) throw ApiError::bad_field(name, "is empty");
  const std::shared_ptr<EmbeddingService> svc = ctx.embedder->embedding_service();
  if (svc && svc->params().input_policy == InputPolicy::kRefuse) {
    const size_t bad = utf8::first_invalid(t);
    if (bad != t.size()) {
      throw ApiError::bad_field(name, "is not valid UTF-8 (ill-formed sequence at byte " + std::to_string(bad) + ")");
    }
  }
  return t;
}

// Saves, or — when the write fails (a full disk) — reopens what is on disk, so the index in
// memory never holds a change the file does not; the error goes to the client (500, kIo's text).
void save_or_reopen(ServedDocQa& d, Runtime& embedder) {
  try {
    d.qa->save();
  } catch (const Error& e) {
    DocQaOptions o = d.qa->options();
    o.rebuild = false;
    const std::string path = d.qa->index_path();
    try {
      d.qa = std::make_unique<DocQa>(embedder, path, std::move(o));
    } catch (const Error& again) {
      log_message(LogLevel::kError, std::string("docqa: the index could not be saved nor read back: ") + again.what());
    }
    throw;
  }
}

Json index_sizes(const VectorIndex& ix, Json out) {
  out.set("documents", static_cast<int64_t>(ix.document_count()));
  out.set("chunks", static_cast<int64_t>(ix.chunk_count()));
  out.set("memory_bytes", static_cast<int64_t>(ix.memory_bytes()));
  return out;
}

Json hit_json(const RetrievedChunk& c) {
  Json j = Json::object();
  j.set("key", c.path);
  j.set("chunk", static_cast<int64_t>(c.chunk));
  j.set("begin", static_cast<int64_t>(c.begin));
  j.set("end", static_cast<int64_t>(c.end));
  j.set("score", static_cast<double>(c.score));
  if (c.rerank_score) j.set("rerank_score", static_cast<double>(*c.rerank_score));
  j.set("text", c.text);
  return j;
}

Json context_json(const std::vector<RetrievedChunk>& context) {
  Json list = Json::array();
  for (const RetrievedChunk& c : context) list.push_back(hit_json(c));
  return list;
}

Json citations_json(const std::vector<Citation>& citations) {
  Json list = Json::array();
  for (const Citation& c : citations) {
    Json e = Json::object();
    e.set("key", c.path);
    e.set("chunk", static_cast<int64_t>(c.chunk));
    e.set("begin", static_cast<int64_t>(c.begin));
    e.set("end", static_cast<int64_t>(c.end));
    list.push_back(std::move(e));
  }
  return list;
}

// The streamed ask's events (docs/server.md, "Document Q&A"): the passages, the answer's text
// in pieces, then how it ended with the citations (known only once the answer is whole).
Json context_event(const DocQa::PreparedAnswer& p) {
  Json e = Json::object();
  e.set("object", "docqa.ask.context");
  e.set("context", context_json(p.context));
  e.set("retrieve_ms", p.retrieve_ms);
  return e;
}

Json delta_event(const std::string& text) {
  Json e = Json::object();
  e.set("object", "docqa.ask.delta");
  e.set("delta", text);
  return e;
}

Json done_event(const DocAnswer& a) {
  Json e = Json::object();
  e.set("object", "docqa.ask.done");
  e.set("finish_reason", finish_reason_name(a.finish_reason));
  e.set("citations", citations_json(a.citations));
  e.set("retrieve_ms", a.retrieve_ms);
  e.set("generate_ms", a.generate_ms);
  return e;
}

// The non-streamed answer: the streamed events' fields in one object.
Json answer_body(const DocAnswer& a) {
  Json out = Json::object();
  out.set("answer", a.answer);
  out.set("finish_reason", finish_reason_name(a.finish_reason));
  out.set("citations", citations_json(a.citations));
  out.set("context", context_json(a.context));
  out.set("retrieve_ms", a.retrieve_ms);
  out.set("generate_ms", a.generate_ms);
  return out;
}

}  // namespace

std::string docqa_document_path_key(const std::string& path) {
  const std::string head = kDocqaDocumentsPrefix;
  if (path.size() <= head.size() || path.compare(0, head.size(), head) != 0) return {};
  std::string key = path.substr(head.size());
  return key.find('/') == std::string::npos ? key : std::string();
}

HttpResponse docqa_put_document(ServerContext& ctx, HttpRequest& request) {
  ServedDocQa& d = served(ctx);
  std::string key, text;
  {
    const Json body = parse_json_request(request, ctx.options.max_json_depth);
    const Json* k = body.find("key");
    if (k == nullptr || !k->is_string()) throw ApiError::bad_field("key", "required: a string (the document's id)");
    key = checked_key(k->as_string());
    text = text_field(ctx, body, "text");
  }
  std::lock_guard<std::mutex> lock(d.mutex);
  const IndexReport r = d.qa->add_or_update(key, text);
  if (r.added + r.updated > 0) save_or_reopen(d, *ctx.embedder);
  Json out = Json::object();
  out.set("key", key);
  out.set("status", r.added > 0 ? "added" : r.updated > 0 ? "updated" : "unchanged");
  out.set("chunks_added", r.chunks_added);
  out.set("chunks_removed", r.chunks_removed);
  out.set("tokens_embedded", r.tokens_embedded);
  Json notes = Json::array();
  for (const std::string& n : r.notes) notes.push_back(n);
  out.set("notes", std::move(notes));
  return json_response(200, index_sizes(d.qa->index(), std::move(out)));
}

HttpResponse docqa_list_documents(ServerContext& ctx) {
  ServedDocQa& d = served(ctx);
  std::lock_guard<std::mutex> lock(d.mutex);
  const VectorIndex& ix = d.qa->index();
  Json docs = Json::array();
  for (const IndexedDocument* doc : ix.documents()) {
    Json e = Json::object();
    e.set("key", doc->path);
    e.set("bytes", static_cast<int64_t>(doc->bytes));
    e.set("chunks", static_cast<int64_t>(doc->chunks.size()));
    e.set("sha256", doc->sha256);
    docs.push_back(std::move(e));
  }
  Json out = Json::object();
  out.set("object", "list");
  out.set("data", std::move(docs));
  out.set("dims", static_cast<int64_t>(ix.dims()));
  out.set("vectors", vector_type_name(ix.type()));
  out.set("model", ix.model_id());
  return json_response(200, index_sizes(ix, std::move(out)));
}

HttpResponse docqa_delete_document(ServerContext& ctx, const std::string& encoded_key) {
  ServedDocQa& d = served(ctx);
  const std::string key = checked_key(decode_segment(encoded_key));
  std::lock_guard<std::mutex> lock(d.mutex);
  const IndexedDocument* doc = d.qa->index().find_document(key);
  if (doc == nullptr)
    throw ApiError(404, "invalid_request_error", "not_found", "no document has the key '" + key + "'");
  const int64_t chunks = static_cast<int64_t>(doc->chunks.size());
  d.qa->remove(key);
  save_or_reopen(d, *ctx.embedder);
  Json out = Json::object();
  out.set("key", key);
  out.set("deleted", true);
  out.set("chunks_removed", chunks);
  return json_response(200, index_sizes(d.qa->index(), std::move(out)));
}

HttpResponse docqa_search(ServerContext& ctx, HttpRequest& request) {
  ServedDocQa& d = served(ctx);
  std::string query;
  int32_t top_k = 0;
  {
    const Json body = parse_json_request(request, ctx.options.max_json_depth);
    query = text_field(ctx, body, "query");
    if (const Json* t = body.find("top_k"); t != nullptr && !t->is_null()) {
      if (!t->is_number() || t->as_number() < 1 || t->as_number() > static_cast<double>(kMaxDocqaHits) ||
          t->as_number() != static_cast<double>(static_cast<int64_t>(t->as_number()))) {
        throw ApiError::bad_field("top_k", "expected an integer in [1, " + std::to_string(kMaxDocqaHits) + "]");
      }
      top_k = static_cast<int32_t>(t->as_number());
    }
  }
  std::lock_guard<std::mutex> lock(d.mutex);
  RetrieveTiming t;
  const std::vector<RetrievedChunk> hits = d.qa->retrieve(query, d.reranker, &t, top_k);
  Json list = Json::array();
  for (const RetrievedChunk& c : hits) list.push_back(hit_json(c));
  Json out = Json::object();
  out.set("object", "list");
  out.set("hits", std::move(list));
  out.set("chunks_searched", static_cast<int64_t>(d.qa->index().chunk_count()));
  out.set("embed_ms", t.embed_ms);
  out.set("search_ms", t.search_ms);
  out.set("rerank_ms", t.rerank_ms);
  return json_response(200, out);
}

void docqa_ask(ServerContext& ctx, HttpRequest& request, ResponseWriter& out) {
  ServedDocQa& d = served(ctx);
  std::string question;
  bool stream = false;
  int64_t deadline_ms = 0;
  {
    const Json body = parse_json_request(request, ctx.options.max_json_depth);
    question = text_field(ctx, body, "question");
    if (const Json* s = body.find("stream"); s != nullptr && !s->is_null()) {
      if (!s->is_bool()) throw ApiError::bad_field("stream", "expected true or false");
      stream = s->as_bool();
    }
    deadline_ms = request_deadline_ms(body, ctx.options.deadline_ms);
  }
  // The deadline counts from here: a wait for the index's one user is part of it.
  const AskClock::time_point deadline = AskClock::now() + std::chrono::milliseconds(deadline_ms);
  DocQa::PreparedAnswer p;
  {
    std::lock_guard<std::mutex> lock(d.mutex);
    const int64_t left = std::chrono::ceil<std::chrono::milliseconds>(deadline - AskClock::now()).count();
    if (left > 0) {
      p = d.qa->prepare_answer(question, d.generator, d.reranker, left);
    } else {
      p.timed_out = true;
    }
  }
  // From here on the index is free for the next request: the answer uses its own copy of the
  // passages (p.context).
  auto channel = std::make_shared<CompletionChannel>();
  RequestId id = 0;
  std::string version;
  if (!p.timed_out) {
    p.request.on_token = [channel](const TokenEvent& ev) { return channel->on_token(ev); };
    p.request.on_finish = [channel](const RequestResult& r) { channel->on_finish(r); };
    try {
      ServiceCalls::Submitted s = ctx.service.submit(std::move(p.request));
      id = s.id;
      version = std::move(s.version);
    } catch (const Error& e) {
      throw api_error_from(e);  // kBusy: 429, kDegraded: 503 (Retry-After added with the response)
    }
  }
  auto client_left = [&] {
    ctx.counters.client_disconnects.fetch_add(1);  // counted first, as generate() does
    channel->abandon();
    if (id != 0) ctx.service.cancel(id);
  };
  auto write = [&](const Json& event) { return out.write("data: " + wire_json(event) + "\n\n"); };
  if (stream) {
    // The passages first (known before the first token), then the answer's text as it comes.
    ctx.counters.streams.fetch_add(1);
    HeaderList headers = {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}};
    if (!version.empty()) headers.emplace_back("x-edgellm-model-version", version);
    out.begin_stream(200, "text/event-stream", std::move(headers), ": \n\n");
    if (!write(context_event(p))) {
      client_left();
      return;
    }
  }

  const AskClock::time_point t1 = AskClock::now();
  RequestResult result;
  if (p.timed_out) {
    result.finish_reason = FinishReason::kTimeout;  // as a chat completion whose deadline passed in its queue
  } else {
    // Bounded by the deadline (the service ends the request there), stop() and the client.
    const AskClock::time_point give_up = deadline + std::chrono::milliseconds(5000);
    for (;;) {
      CompletionChannel::Batch b = channel->take(kAskPollInterval);
      if (out.client_gone()) {
        client_left();
        return;
      }
      if (ctx.stopping.load() || AskClock::now() > give_up) ctx.service.cancel(id);
      if (stream && !b.text.empty() && !write(delta_event(b.text))) {
        client_left();
        return;
      }
      if (b.finished) {
        result = std::move(b.result);
        break;
      }
    }
  }
  DocAnswer a;
  a.retrieve_ms = p.retrieve_ms;
  a.retrieve_timing = p.retrieve_timing;
  a.generate_ms = p.timed_out ? 0 : std::chrono::duration<double, std::milli>(AskClock::now() - t1).count();
  a.answer = std::move(result.text);
  a.finish_reason = result.finish_reason;
  a.error = result.error;
  a.citations = DocQa::cite(a.answer, p.context);
  a.context = std::move(p.context);

  if (stream) {
    if (a.finish_reason == FinishReason::kError) {
      write(api_error_from(Error(result.error_code, result.error)).to_json());
    } else if (a.finish_reason == FinishReason::kCancelled) {
      write(ApiError(503, "server_error", "shutting_down", "the server is stopping").to_json());
    } else {
      write(done_event(a));
    }
    out.write("data: [DONE]\n\n");
    out.end_stream();
    return;
  }
  if (a.finish_reason == FinishReason::kCancelled) {
    throw ApiError(503, "server_error", "shutting_down", "the server is stopping");
  }
  if (a.finish_reason == FinishReason::kError) {
    throw ApiError(500, "server_error", "generation_failed", "the answer failed: " + a.error);
  }
  HttpResponse r = json_response(200, answer_body(a));
  if (!version.empty()) r.headers.emplace_back("x-edgellm-model-version", version);
  out.send(std::move(r));
}

}  // namespace edgellm::server
