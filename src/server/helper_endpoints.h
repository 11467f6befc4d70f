// The endpoints around generation (docs/server.md, "Endpoints"):
//   POST /tokenize        {"content", "add_special"?, "with_pieces"?} -> {"tokens": [id | {id, piece}]}
//   POST /detokenize      {"tokens": [ids]} -> {"content"}
//   POST /apply-template  {"messages"} -> {"prompt"}
//   GET  /v1/models, /health, /metrics, /   (cheap: answered on the I/O thread)
//
// Memory: the three POST endpoints run on a worker inside a helper slot (ServerOptions::
// helper_slots); /tokenize streams its answer in 64 KiB pieces, so its memory is the token ids
// (4 bytes each) and one piece whatever the answer's size. A piece that is not valid UTF-8 on
// its own (a byte-level token, part of a character) is an array of its bytes, as llama-server
// sends it: {"id": 243, "piece": [240, 159]}.
//
// Errors are thrown as ApiError. Thread-safety: any thread.
#pragma once

#include "server/http_message.h"
#include "server/server_context.h"

namespace edgellm::server {

void tokenize(ServerContext& ctx, HttpRequest& request, ResponseWriter& out);
HttpResponse detokenize(ServerContext& ctx, HttpRequest& request);
HttpResponse apply_template(ServerContext& ctx, HttpRequest& request);

HttpResponse models(ServerContext& ctx);
HttpResponse health(ServerContext& ctx);
HttpResponse metrics(ServerContext& ctx);
HttpResponse chat_page();

}  // namespace edgellm::server
