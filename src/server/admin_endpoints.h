// The admin endpoints (docs/server.md, "Admin"): the model and the degradation ladder of the
// Runtime behind the server, changed while it serves.
//   POST /admin/swap         {"model": PATH, "version": V} -> {"object": "model_swap", "model_version", ...}
//                            loads PATH and switches new requests to it (Runtime::swap_model); the
//                            version serving keeps its admitted requests to their end (drains)
//   POST /admin/reload       the registry's current version (--registry only): Runtime::reload_from_registry
//   POST /admin/pressure     {"memory": 0..4, "thermal": 0..3, "power_save": bool} -> the ladder's target
//   GET  /admin/degradation  the ladder's state (Runtime::degradation_json)
//   POST /admin/pause        Runtime::pause: no forward step runs (the one in flight is redone
//                            after resume), KV is kept; new requests are admitted to the queue
//                            (429 when it is full) and wait there; deadlines keep running, so a
//                            request paused past its deadline ends with finish_reason "timeout"
//   POST /admin/resume       Runtime::resume: scheduling goes on where it stopped
//   GET  /admin/state        -> {"object": "runtime_state", "paused", "paused_idle", "running",
//                            "waiting", "model_version"}: pause / resume answer the same body
//                            (paused_idle: the scheduler has seen the pause; no step runs)
//   POST /admin/trim         Runtime::trim: the serving version's scratch and unused KV pages back
//                            to the system between two steps -> {"object": "trim", "released_bytes",
//                            "trim_ms"}; waits for the scheduler (a worker, never the I/O thread)
//
// Who may call them (http_server.cpp decides before the body is read): a server with an API
// key answers them to a request carrying the key (401 otherwise); a server without one refuses
// them all (403). Without a key the server is reachable only on loopback, but every local
// process and user can reach loopback, and /admin/swap loads any file the server can read: the
// key is the only proof that the caller is the operator.
//
// Pause and resume take no body (an empty one or {}); GET /health shows "paused" too.
//
// Swap and reload block their worker while the model loads (seconds); one runs at a time
// (ServerContext::model_changes; 429 for another). Errors are thrown as ApiError: a file that
// cannot be served (missing, not GGUF, unsupported, digest mismatch) is a 400 model_not_loaded
// and changes nothing. Thread-safety: any thread.
#pragma once

#include "server/http_message.h"
#include "server/server_context.h"

namespace edgellm::server {

HttpResponse admin_swap(ServerContext& ctx, HttpRequest& request);
HttpResponse admin_reload(ServerContext& ctx);
HttpResponse admin_pressure(ServerContext& ctx, HttpRequest& request);
// Waits for the scheduler to run the trim (at most --timeout; 503 trim_not_run after it or
// when the server stops): on a worker.
HttpResponse admin_trim(ServerContext& ctx, HttpRequest& request);
// Cheap (a flag, a snapshot): inline on the I/O thread, so a resume is answered even when every
// worker waits on a paused request.
HttpResponse admin_pause(ServerContext& ctx, HttpRequest& request, bool pause);
HttpResponse admin_state(ServerContext& ctx);
HttpResponse admin_degradation(ServerContext& ctx);

}  // namespace edgellm::server
