#include "server/embeddings_endpoint.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "runtime/runtime.h"
#include "server/api_error.h"
#include "server/api_response.h"

namespace edgellm::server {
namespace {

// RFC 4648 base64 of bytes (OpenAI's encoding_format "base64": the float32 array's bytes,
// little-endian, which every target of this library is).
std::string base64(const unsigned char* data, size_t n) {
  static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < n; i += 3) {
    const uint32_t v = (uint32_t{data[i]} << 16) | (uint32_t{data[i + 1]} << 8) | data[i + 2];
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i < n) {
    const uint32_t v = (uint32_t{data[i]} << 16) | (i + 1 < n ? uint32_t{data[i + 1]} << 8 : 0);
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < n ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// Submits to the runtime and waits on this worker for the request's end (exactly once: its
// result, the deadline, or the runtime's shutdown). Refusals at submit are thrown as Error.
EmbeddingResult run(Runtime& rt, EmbeddingRequest request) {
  struct Waiter {
    std::mutex mutex;
    std::condition_variable cv;
    bool done = false;
    EmbeddingResult result;
  };
  auto w = std::make_shared<Waiter>();
  request.on_finish = [w](EmbeddingResult& r) {
    std::lock_guard<std::mutex> lock(w->mutex);
    w->result = std::move(r);
    w->done = true;
    w->cv.notify_all();
  };
  rt.embed(std::move(request));
  std::unique_lock<std::mutex> lock(w->mutex);
  w->cv.wait(lock, [&] { return w->done; });
  EmbeddingResult r = std::move(w->result);
  switch (r.finish_reason) {
    case FinishReason::kStop: return r;
    case FinishReason::kTimeout:
      throw ApiError(503, "server_error", "timeout", "the request's deadline passed before its result was there");
    case FinishReason::kCancelled: throw ApiError(503, "server_error", "shutting_down", "the server is stopping");
    default: throw Error(r.error_code, r.error.empty() ? "the request failed" : r.error);
  }
}

// A token array: every element an integer id (the runtime checks the vocabulary).
std::vector<int32_t> token_array(const Json& a, const std::string& where) {
  std::vector<int32_t> ids;
  ids.reserve(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const Json& t = a.at(i);
    if (!t.is_number() || t.as_number() != static_cast<double>(static_cast<int32_t>(t.as_number()))) {
      throw ApiError::bad_field(where + "[" + std::to_string(i) + "]", "expected a token id (an integer)");
    }
    ids.push_back(static_cast<int32_t>(t.as_number()));
  }
  return ids;
}

// OpenAI's "input": a string, an array of strings, an array of token ids, or an array of those.
void read_input(const Json* input, EmbeddingRequest& r) {
  if (input == nullptr)
    throw ApiError::bad_field("input", "required: a string, an array of strings or of token arrays");
  if (input->is_string()) {
    r.texts.push_back(input->as_string());
    return;
  }
  if (!input->is_array())
    throw ApiError::bad_field("input", "expected a string, an array of strings or of token arrays");
  if (input->size() == 0) throw ApiError::bad_field("input", "is empty: give at least one text");
  const Json& first = input->at(0);
  if (first.is_number()) {  // one token array
    r.token_inputs.push_back(token_array(*input, "input"));
    return;
  }
  for (size_t i = 0; i < input->size(); ++i) {
    const Json& e = input->at(i);
    const std::string where = "input[" + std::to_string(i) + "]";
    if (first.is_string()) {
      if (!e.is_string()) throw ApiError::bad_field(where, "expected a string (the others are strings)");
      r.texts.push_back(e.as_string());
    } else if (first.is_array()) {
      if (!e.is_array()) throw ApiError::bad_field(where, "expected a token array (the others are token arrays)");
      r.token_inputs.push_back(token_array(e, where));
    } else {
      throw ApiError::bad_field(where, "expected a string or a token array");
    }
  }
}

Json usage(int64_t tokens) {
  Json u = Json::object();
  u.set("prompt_tokens", tokens);
  u.set("total_tokens", tokens);
  return u;
}

// The metric names `text` declares ("# TYPE name ...").
std::vector<std::string> declared_names(const std::string& text) {
  std::vector<std::string> names;
  for (size_t at = text.find("# TYPE "); at != std::string::npos; at = text.find("# TYPE ", at + 1)) {
    const size_t begin = at + 7;
    names.push_back(text.substr(begin, text.find(' ', begin) - begin));
  }
  return names;
}

// The metric name of a sample line ("name{...} v" or "name v"; histogram series map to their
// base name: name_bucket / _sum / _count).
bool sample_of(const std::string& line, const std::vector<std::string>& names) {
  const std::string n = line.substr(0, std::min(line.find('{'), line.find(' ')));
  for (const std::string& name : names) {
    if (n == name || n == name + "_bucket" || n == name + "_sum" || n == name + "_count") return true;
  }
  return false;
}

// One runtime's exposition with runtime="<label>" added to every sample; HELP / TYPE lines of
// names already in `seen` dropped, and the samples of `skip` (the process-wide gauges, RSS,
// which the generator's exposition already has: the same process) dropped whole.
void append_labelled(std::string& out, const std::string& text, const char* label, std::vector<std::string>& seen,
                     const std::vector<std::string>& skip) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    if (line[0] == '#') {
      // "# HELP name ..." / "# TYPE name ...": the name is the third word.
      const size_t a = line.find(' ', 2);
      const size_t b = a == std::string::npos ? std::string::npos : line.find(' ', a + 1);
      const std::string key = line.substr(0, b);
      const std::string name = a == std::string::npos ? std::string() : line.substr(a + 1, b - a - 1);
      if (std::find(skip.begin(), skip.end(), name) != skip.end()) continue;
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
      seen.push_back(key);
      out += line + "\n";
      continue;
    }
    if (sample_of(line, skip)) continue;
    const size_t brace = line.find('{');
    const size_t space = line.find(' ');
    const std::string l = std::string("runtime=\"") + label + "\"";
    if (brace != std::string::npos && brace < space) {
      out += line.substr(0, brace + 1) + l + "," + line.substr(brace + 1) + "\n";
    } else {
      out += line.substr(0, space) + "{" + l + "}" + line.substr(space) + "\n";
    }
  }
}

}  // namespace

void append_embedding_models(const ServerContext& ctx, Json& data) {
  const auto entry = [&](const Runtime* rt, const std::string& name, const char* endpoint) {
    if (rt == nullptr) return;
    const std::shared_ptr<EmbeddingService> svc = rt->embedding_service();
    Json m = Json::object();
    m.set("id", name);
    m.set("object", "model");
    m.set("owned_by", "edgellm");
    Json meta = Json::object();
    meta.set("endpoint", endpoint);
    meta.set("dims", static_cast<int64_t>(svc->dims()));
    meta.set("pooling", pooling_type_name(svc->default_pooling()));
    meta.set("n_ctx", static_cast<int64_t>(svc->n_ctx()));
    meta.set("n_vocab", static_cast<int64_t>(svc->model().hparams().n_vocab));
    meta.set("model_version", rt->model_version());
    m.set("meta", std::move(meta));
    data.push_back(std::move(m));
  };
  entry(ctx.embedder, ctx.embedder_name, "/v1/embeddings");
  entry(ctx.reranker, ctx.reranker_name, "/v1/rerank");
}

std::string embedding_metrics_prometheus(const ServerContext& ctx, const std::string& before) {
  std::string out;
  std::vector<std::string> seen;
  const std::vector<std::string> skip = declared_names(before);
  if (ctx.embedder != nullptr) append_labelled(out, ctx.embedder->metrics_prometheus(), "embeddings", seen, skip);
  if (ctx.reranker != nullptr) append_labelled(out, ctx.reranker->metrics_prometheus(), "rerank", seen, skip);
  return out;
}

HttpResponse embeddings(ServerContext& ctx, HttpRequest& request) {
  if (ctx.embedder == nullptr) {
    throw ApiError(501, "invalid_request_error", "not_supported",
                   "this server has no embedding model: start it with --embedding-model FILE");
  }
  Runtime& rt = *ctx.embedder;
  const std::shared_ptr<EmbeddingService> svc = rt.embedding_service();
  EmbeddingRequest r;
  r.pooling = ctx.embedding_pooling;
  bool pooling_from_body = false;
  bool base64_out = false;
  {
    const Json body = parse_json_request(request, ctx.options.max_json_depth);
    read_input(body.find("input"), r);
    if (const Json* f = body.find("encoding_format"); f != nullptr && !f->is_null()) {
      if (!f->is_string() || (f->as_string() != "float" && f->as_string() != "base64")) {
        throw ApiError::bad_field("encoding_format", "expected \"float\" or \"base64\"");
      }
      base64_out = f->as_string() == "base64";
    }
    if (const Json* d = body.find("dimensions"); d != nullptr && !d->is_null()) {
      if (!d->is_number() || d->as_number() != static_cast<double>(svc->dims())) {
        throw ApiError::bad_field("dimensions", "this model gives " + std::to_string(svc->dims()) +
                                                    "-dimensional vectors and cannot shorten them");
      }
    }
    // llama-server's extension: embd_normalize (-1 none, 0 max-abs int16, 1 taxicab, 2 euclidean, p).
    if (const Json* n = body.find("embd_normalize"); n != nullptr && !n->is_null()) {
      if (!n->is_number() || n->as_number() != static_cast<double>(static_cast<int>(n->as_number()))) {
        throw ApiError::bad_field("embd_normalize", "expected an integer (-1, 0, 1, 2 or a p-norm)");
      }
      r.normalize = static_cast<int>(n->as_number());
    }
    // Per request, as edgellm_embed's params.pooling and NAPI embed()'s {pooling}: "model" (the
    // model's own), "mean", "cls", "last" ("none" is refused below); absent: --pooling's.
    if (const Json* p = body.find("pooling"); p != nullptr && !p->is_null()) {
      const std::optional<PoolingType> named =
          p->is_string() ? pooling_type_from_name(p->as_string()) : std::optional<PoolingType>();
      if (p->is_string() && p->as_string() == "model") {
        r.pooling = PoolingType::kUnspecified;
      } else if (!named.has_value() || *named == PoolingType::kRank) {
        throw ApiError::bad_field("pooling", "expected \"model\", \"mean\", \"cls\" or \"last\"");
      } else {
        r.pooling = *named;
      }
      pooling_from_body = true;
    }
  }
  r.task = EmbeddingTask::kEmbed;
  const PoolingType pooling = r.pooling == PoolingType::kUnspecified ? svc->default_pooling() : r.pooling;
  if (pooling == PoolingType::kNone) {
    throw ApiError(400, "invalid_request_error", "invalid_value",
                   std::string("pooling none gives one vector per token, which is not OpenAI's shape (") +
                       (pooling_from_body ? "\"pooling\"" : "--pooling") + ")",
                   pooling_from_body ? "pooling" : "");
  }
  r.deadline_ms = ctx.options.deadline_ms;
  const EmbeddingResult res = run(rt, std::move(r));
  const size_t dims = static_cast<size_t>(res.dims);
  const size_t rows = dims > 0 ? res.vectors.size() / dims : 0;
  Json data = Json::array();
  for (size_t i = 0; i < rows; ++i) {
    Json e = Json::object();
    e.set("object", "embedding");
    e.set("index", static_cast<int64_t>(i));
    const float* v = res.vectors.data() + i * dims;
    if (base64_out) {
      e.set("embedding", base64(reinterpret_cast<const unsigned char*>(v), dims * sizeof(float)));
    } else {
      Json a = Json::array();
      for (size_t k = 0; k < dims; ++k) a.push_back(static_cast<double>(v[k]));
      e.set("embedding", std::move(a));
    }
    data.push_back(std::move(e));
  }
  Json out = Json::object();
  out.set("object", "list");
  out.set("data", std::move(data));
  out.set("model", ctx.embedder_name);
  out.set("usage", usage(res.prompt_tokens));
  return json_response(200, out);
}

HttpResponse rerank(ServerContext& ctx, HttpRequest& request) {
  if (ctx.reranker == nullptr) {
    throw ApiError(501, "invalid_request_error", "not_supported",
                   "this server has no reranking model: start it with --rerank-model FILE");
  }
  Runtime& rt = *ctx.reranker;
  EmbeddingRequest r;
  r.task = EmbeddingTask::kRerank;
  int64_t top_n = -1;
  bool return_documents = false;
  {
    const Json body = parse_json_request(request, ctx.options.max_json_depth);
    const Json* q = body.find("query");
    if (q == nullptr || !q->is_string()) throw ApiError::bad_field("query", "required: a string");
    r.query = q->as_string();
    const Json* docs = body.find("documents");
    if (docs == nullptr || !docs->is_array()) {
      throw ApiError::bad_field("documents", "required: an array of strings (or of {\"text\"} objects)");
    }
    if (docs->size() == 0) throw ApiError::bad_field("documents", "is empty: give at least one document");
    for (size_t i = 0; i < docs->size(); ++i) {
      const Json& d = docs->at(i);
      const Json* text = d.is_object() ? d.find("text") : nullptr;
      if (d.is_string()) {
        r.documents.push_back(d.as_string());
      } else if (text != nullptr && text->is_string()) {
        r.documents.push_back(text->as_string());
      } else {
        throw ApiError::bad_field("documents[" + std::to_string(i) + "]", "expected a string or {\"text\": string}");
      }
    }
    if (const Json* t = body.find("top_n"); t != nullptr && !t->is_null()) {
      if (!t->is_number() || t->as_number() < 1 ||
          t->as_number() != static_cast<double>(static_cast<int64_t>(t->as_number()))) {
        throw ApiError::bad_field("top_n", "expected an integer >= 1");
      }
      top_n = static_cast<int64_t>(t->as_number());
    }
    if (const Json* b = body.find("return_documents"); b != nullptr && !b->is_null()) {
      if (!b->is_bool()) throw ApiError::bad_field("return_documents", "expected true or false");
      return_documents = b->as_bool();
    }
  }
  r.deadline_ms = ctx.options.deadline_ms;
  std::vector<std::string> documents = return_documents ? r.documents : std::vector<std::string>{};
  const EmbeddingResult res = run(rt, std::move(r));
  std::vector<size_t> order(res.scores.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return res.scores[a] > res.scores[b]; });
  if (top_n > 0 && static_cast<size_t>(top_n) < order.size()) order.resize(static_cast<size_t>(top_n));
  Json results = Json::array();
  for (size_t i : order) {
    Json e = Json::object();
    e.set("index", static_cast<int64_t>(i));
    e.set("relevance_score", static_cast<double>(res.scores[i]));
    if (return_documents) {
      Json d = Json::object();
      d.set("text", documents[i]);
      e.set("document", std::move(d));
    }
    results.push_back(std::move(e));
  }
  Json out = Json::object();
  out.set("object", "list");
  out.set("model", ctx.reranker_name);
  out.set("results", std::move(results));
  out.set("usage", usage(res.prompt_tokens));
  return json_response(200, out);
}

}  // namespace edgellm::server
