// A non-streamed chat request with the router on (docs/server.md "Router"), answered by the
// Runtime's router (runtime/router.h): the request goes to Runtime::submit with its route
// (x_edgellm_route: auto | local | cloud), the router decides, syncs the context and calls the
// cloud through the transport `edgellm serve` gave the Runtime (tools/fetch/https_transport.h);
// this file waits for the answer and writes it with the decision in x_edgellm.route and the
// x-edgellm-route header. The policy (thresholds, privacy, tiers, failure fallback) is the
// Runtime's alone: the C ABI and NAPI route the same way.
//
// Thread-safety: one call per request, any worker thread (blocks until the answer is complete).
#pragma once

#include "server/http_message.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/server_context.h"

namespace edgellm::server {

// The RouteMode of x_edgellm_route ("auto", "local", "cloud").
RouteMode route_mode(const std::string& route);

// Answers `p` (a parsed chat request, not streamed) through the Runtime's router.
HttpResponse answer_routed(ServerContext& ctx, ParsedRequest p, const ResponseHead& head);

}  // namespace edgellm::server
