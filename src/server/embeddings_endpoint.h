// The embedding endpoints (docs/server.md, "Embeddings and rerank"), served when `edgellm serve`
// holds an embedding runtime (--embedding-model) or a reranking one (--rerank-model) beside its
// generator. Each request goes through that Runtime (Runtime::embed: the EmbeddingService's
// queue, BUSY -> 429, the server's deadline, the input policy, metrics), so it takes the path
// and the checks of edgellm_embed / NAPI embed.
//
//   POST /v1/embeddings, /embeddings   OpenAI's wire format:
//     {"input": string | string[] | int[] | int[][], "model"?, "encoding_format"?: "float" |
//      "base64", "dimensions"?, "user"?, "embd_normalize"?, "pooling"?: "model" | "mean" | "cls" |
//      "last"}
//     -> {"object": "list", "data": [{"object": "embedding", "index", "embedding": float[] |
//        base64 of little-endian float32}], "model", "usage": {"prompt_tokens", "total_tokens"}}
//     Token arrays are embedded as given (no special token added), texts framed with the
//     model's ([CLS] ... [SEP]). "dimensions" must equal the model's (no Matryoshka cut);
//     pooling none is refused (one vector per token is not OpenAI's shape, as llama-server);
//     "pooling" overrides --pooling for one request, as edgellm_embed's params.pooling.
//   POST /v1/rerank, /rerank, /v1/reranking, /reranking   llama-server / Jina / Cohere:
//     {"query", "documents": (string | {"text"})[], "top_n"?, "return_documents"?, "model"?}
//     -> {"object": "list", "model", "results": [{"index", "relevance_score", "document"?:
//        {"text"}}] best first, "usage": {"prompt_tokens", "total_tokens"}}
//
// A worker waits for the result (milliseconds per forward); the wait ends by the request's end,
// which the Runtime delivers exactly once (deadline, shutdown included). Errors are thrown as
// ApiError. Thread-safety: any thread.
#pragma once

#include "core/json.h"
#include "server/http_message.h"
#include "server/server_context.h"

namespace edgellm::server {

HttpResponse embeddings(ServerContext& ctx, HttpRequest& request);
HttpResponse rerank(ServerContext& ctx, HttpRequest& request);

// /v1/models entries of the embedding runtimes (id, object "model", meta: role, dims, pooling,
// n_ctx, can_rerank), appended to `data`.
void append_embedding_models(const ServerContext& ctx, Json& data);

// The embedding runtimes' Prometheus metrics (edgellm_embedding_*), each sample labelled
// runtime="embeddings" or runtime="rerank" so the two never repeat a series; HELP / TYPE once
// per name; names `before` (the rest of the exposition) declares already — the process's RSS
// gauges — left out. "" when the server holds neither. For GET /metrics.
std::string embedding_metrics_prometheus(const ServerContext& ctx, const std::string& before);

}  // namespace edgellm::server
