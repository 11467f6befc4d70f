// The session endpoints (docs/server.md, "Sessions"): a conversation's KV moving between devices.
//   POST /v1/sessions/import[?id=ID]     body: session bytes -> {"id","object","tokens","bytes"}
//   POST|GET /v1/sessions/{id}/export    the bytes (application/octet-stream)
//   DELETE /v1/sessions/{id}
// The sessions are the Runtime's (ServiceCalls: its SessionStore), the same ones the C ABI's
// edgellm_session_* and a request's session_id use. Errors are thrown as ApiError.
// Thread-safety: any thread (SessionStore locks).
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

// Checks the bytes against the serving model and keeps them (ServiceCalls::import_session).
// A worker: checking hashes the whole body.
HttpResponse import_session(ServerContext& ctx, HttpRequest& request);
// Cheap (the bytes are shared, not copied): inline on the I/O thread.
HttpResponse export_session(ServerContext& ctx, const std::string& id);
HttpResponse delete_session(ServerContext& ctx, const std::string& id);

// The x_edgellm.session object of a finished generation that named a session (the Runtime kept
// its KV under id when it ended: RequestResult::session_stored): {"id", "stored", "bytes"}.
Json session_info(ServerContext& ctx, const std::string& id, const RequestResult& result);

}  // namespace edgellm::server
