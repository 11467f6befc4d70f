// What the endpoints of one HttpServer share: the service calls (the Runtime), the options, the
// counters, the admin slot, the stopping flag. Owned by HttpServer; every endpoint gets a
// reference.
//
// Thread-safety: the members are thread-safe themselves (ServiceCalls goes to the Runtime, which
// is; the counters and flags are atomic; Admission locks); `options` is immutable once serving.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "model/pooling_type.h"
#include "server/admission.h"
#include "server/server_counters.h"
#include "server/server_options.h"
#include "server/service_calls.h"

namespace edgellm::server {

struct ServedDocQa;  // docqa_endpoints.h

struct ServerContext {
  ServerContext(Runtime& r, ServerOptions o) : service(r), options(std::move(o)) {}

  // "chatcmpl-7", "cmpl-8": unique per server run.
  std::string next_id(const char* prefix) { return prefix + std::to_string(next_response_id.fetch_add(1)); }

  ServiceCalls service;
  ServerOptions options;
  ServerCounters counters;
  Admission model_changes{1};  // one /admin/swap or /admin/reload at a time (429 for another)
  std::atomic<bool> stopping{false};  // stop() was called: generations are cancelled
  std::atomic<uint64_t> next_response_id{1};
  // Embedding runtimes beside the generator (embeddings_endpoint.h; HttpServer::
  // attach_embedding_runtimes before bind()); null: that endpoint answers 404-like 501. Set
  // before serving, read-only after.
  Runtime* embedder = nullptr;  // /v1/embeddings
  Runtime* reranker = nullptr;  // /v1/rerank
  PoolingType embedding_pooling = PoolingType::kUnspecified;  // --pooling: the model's unless set
  std::string embedder_name, reranker_name;                   // "model" in their answers
  // Document Q&A (docqa_endpoints.h; HttpServer::attach_docqa before bind()); null: those
  // endpoints answer 501. The pointer is set before serving; the DocQa behind it is its own.
  std::shared_ptr<ServedDocQa> docqa;
  // llama-server's embedding mode (`serve -m ENCODER --embeddings` / `--reranking`): the server's
  // own runtime embeds (role kEmbed) and is attached above; only /v1/embeddings or /v1/rerank,
  // /v1/models, /health and /metrics answer, everything else 501 (HttpServer::plan).
  bool embedding_only = false;
};

}  // namespace edgellm::server
