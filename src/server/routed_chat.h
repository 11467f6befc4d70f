// The router path of a non-streamed chat request (router.h, docs/server.md "Router"): the local
// model answers first with token probabilities, the score picks local / low-confidence / cloud,
// a cloud call gets the synced context. Moved here unchanged from the former http_server.cpp;
// issue 37 replaces it with the Runtime's router.
//
// Thread-safety: one call per request, any worker thread (blocks until the answer is complete).
#pragma once

#include <vector>

#include "core/json.h"
#include "server/http_message.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/server_context.h"

namespace edgellm::server {

// Answers `body` (already parsed into `p`) through the router.
HttpResponse answer_routed(ServerContext& ctx, const Json& body, ParsedRequest p, const ResponseHead& head);

// Runs one request on the local service to the end (no streaming); throws ApiError when it is
// refused or fails. *probabilities: the answer's token probabilities (when requested).
RequestResult run_local(ServerContext& ctx, ServiceRequest request, std::vector<float>* probabilities);

}  // namespace edgellm::server
