// Document Q&A over HTTP (docs/server.md, "Document Q&A"): the library's DocQa (docqa/doc_qa.h)
// served by `edgellm serve --embedding-model FILE --docqa-index FILE`, the server's face of what
// the C ABI's edgellm_docqa_* (api/c_api_docqa.cpp) and NAPI's DocQA give an app. The index is
// embedded by the server's embedding runtime (/v1/embeddings'), reordered by its reranker when
// it has one (--rerank-model), and answers are written by the chat model (-m).
//
//   POST   /v1/docqa/documents        {"key", "text"} -> added / updated / unchanged, saved
//   GET    /v1/docqa/documents        the documents (key, bytes, chunks, sha256) and index sizes
//   DELETE /v1/docqa/documents/{key}  the key percent-encoded in the path; 404 when unknown
//   POST   /v1/docqa/search           {"query", "top_k"?} -> hits: key, chunk id, byte range,
//                                     text, cosine score (rerank_score with a reranker)
//   POST   /v1/docqa/ask              {"question", "stream"?, "x_edgellm_deadline_ms"?} -> answer,
//                                     finish_reason, citations, context; streamed as SSE: a
//                                     docqa.ask.context event, docqa.ask.delta events, a
//                                     docqa.ask.done event (finish_reason, citations), [DONE]
//
// One owner: ServedDocQa holds the DocQa and a mutex, so one request at a time uses it (DocQa
// has one user at a time); every endpoint runs on a server worker (embedding, generation and
// the index file's writes never on the I/O thread), and HttpServer admits a few of them at once
// (429 above) so waiting for the mutex cannot take every worker. An ask holds the mutex for its
// retrieval only: the answer is generated from its own copy of the passages, like a chat
// completion (polling its client every 20 ms; a client that leaves cancels it). A change is saved before its
// answer (index_file.h: a temporary file renamed over the index, the old one kept as backup), so
// a 200 means it is on disk; a request refused for its input changes nothing, in memory or on
// disk. Thread-safety: any worker thread.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "docqa/doc_qa.h"
#include "server/http_message.h"
#include "server/server_context.h"

namespace edgellm::server {

struct ServedDocQa {
  // Opens (or starts) the index at `index_path` (DocQa's constructor: Error kInvalidFile for a
  // corrupt file, kInvalidArgument for one built with another embedding model).
  ServedDocQa(Runtime& embedder, Runtime& generator, Runtime* reranker, const std::string& index_path,
              DocQaOptions options)
      : generator(generator),
        reranker(reranker),
        qa(std::make_unique<DocQa>(embedder, index_path, std::move(options))) {}

  Runtime& generator;  // the chat model: writes /v1/docqa/ask's answers
  Runtime* reranker;   // may be null
  std::mutex mutex;    // held by the request using `qa`
  std::unique_ptr<DocQa> qa;
};

HttpResponse docqa_put_document(ServerContext& ctx, HttpRequest& request);
HttpResponse docqa_list_documents(ServerContext& ctx);
// `encoded_key`: the path segment after /v1/docqa/documents/, still percent-encoded.
HttpResponse docqa_delete_document(ServerContext& ctx, const std::string& encoded_key);
HttpResponse docqa_search(ServerContext& ctx, HttpRequest& request);
// Streamed ("stream": true) or whole; bounded by the server's --timeout or the request's
// x_edgellm_deadline_ms (retrieval included); a client that leaves cancels the generation.
void docqa_ask(ServerContext& ctx, HttpRequest& request, ResponseWriter& out);

// The document key of a DELETE path ("/v1/docqa/documents/notes%2Fa.md" -> "notes/a.md"), or
// "" when `path` is not one.
std::string docqa_document_path_key(const std::string& path);

}  // namespace edgellm::server
