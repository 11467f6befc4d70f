// The session endpoints (docs/server.md, "Sessions"): a conversation's KV moving between devices.
//   POST /v1/sessions/import[?id=ID]     body: session bytes -> {"id","object","tokens","bytes"}
//   POST|GET /v1/sessions/{id}/export    the bytes (application/octet-stream)
//   DELETE /v1/sessions/{id}
// Errors are thrown as ApiError. Thread-safety: any thread (SessionStore locks).
#pragma once

#include <string>

#include "core/json.h"
#include "server/http_message.h"
#include "server/server_context.h"

namespace edgellm {
struct RequestResult;
}

namespace edgellm::server {

// "/v1/sessions/{id}/export" -> id; "" for any other path.
std::string session_export_id(const std::string& path);
// "/v1/sessions/{id}" -> id; "" for any other path.
std::string session_id_of(const std::string& path);

// Checks the bytes against this server's model (ServiceCalls::check_session) and stores them.
// A worker: checking hashes the whole body.
HttpResponse import_session(ServerContext& ctx, HttpRequest& request);
// Cheap (the bytes are shared, not copied): inline on the I/O thread.
HttpResponse export_session(ServerContext& ctx, const std::string& id);
HttpResponse delete_session(ServerContext& ctx, const std::string& id);

// Stores a finished generation's session bytes (result.session, moved) under id; returns the
// x_edgellm.session object of its response: {"id", "stored", "bytes"}.
Json keep_session(ServerContext& ctx, const std::string& id, RequestResult& result);

}  // namespace edgellm::server
