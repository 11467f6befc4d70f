// POST /v1/chat/completions and /v1/completions (and their unprefixed aliases): one generation,
// streamed as SSE or answered as one JSON body (docs/server.md, "Endpoints").
//
// On its worker: parse and check the body (openai_request.h), submit to the service (BUSY ->
// 429 + Retry-After), wait for the first token (errors until then get their own status), then
// write: each batch of text as it arrives (streaming) or the whole answer at the end. Between
// batches (at least every 20 ms) the client is checked (ResponseWriter::client_gone); when it
// is gone the request is cancelled at once (CompletionChannel::abandon + cancel), so its
// sequence and KV blocks are free after the step in flight. A non-streamed chat request with
// the router on goes to routed_chat.h instead.
//
// Thread-safety: one call per request, any worker thread.
#pragma once

#include "server/http_message.h"
#include "server/openai_response.h"
#include "server/server_context.h"

namespace edgellm::server {

void generate(ServerContext& ctx, HttpRequest& request, ResponseWriter& out, Endpoint endpoint);

}  // namespace edgellm::server
