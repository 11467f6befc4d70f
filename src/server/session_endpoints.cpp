#include "server/session_endpoints.h"

#include <cstdio>
#include <memory>
#include <random>
#include <utility>

#include "core/error.h"
#include "core/log.h"
#include "runtime/session_store.h"
#include "server/api_error.h"
#include "server/api_response.h"
#include "service/request.h"

namespace edgellm::server {
namespace {

constexpr const char* kSessionsPrefix = "/v1/sessions/";

std::string new_session_id() {
  std::random_device rd;
  const uint64_t v = (static_cast<uint64_t>(rd()) << 32) | rd();
  char buf[24];
  std::snprintf(buf, sizeof(buf), "sess-%016llx", static_cast<unsigned long long>(v));
  return buf;
}

ApiError not_found(const std::string& id) {
  return SessionStore::valid_id(id)
             ? ApiError(404, "invalid_request_error", "session_not_found", "no session '" + id + "'")
             : ApiError(404, "invalid_request_error", "session_not_found", "no such session");
}

}  // namespace

std::string session_export_id(const std::string& path) {
  const std::string head = kSessionsPrefix, tail = "/export";
  if (path.size() <= head.size() + tail.size() || path.compare(0, head.size(), head) != 0 ||
      path.compare(path.size() - tail.size(), tail.size(), tail) != 0) {
    return {};
  }
  std::string id = path.substr(head.size(), path.size() - head.size() - tail.size());
  return id.find('/') == std::string::npos ? id : std::string();
}

std::string session_id_of(const std::string& path) {
  const std::string head = kSessionsPrefix;
  if (path.size() <= head.size() || path.compare(0, head.size(), head) != 0) return {};
  std::string id = path.substr(head.size());
  return id.find('/') == std::string::npos ? id : std::string();
}

HttpResponse import_session(ServerContext& ctx, HttpRequest& request) {
  if (ctx.service.max_sessions() == 0) {
    throw ApiError(404, "invalid_request_error", "not_found", "sessions are off on this server (--sessions 0)");
  }
  std::string id = request.head.query_param("id");
  if (id.empty()) {
    id = new_session_id();
  } else if (!SessionStore::valid_id(id)) {
    throw ApiError::bad_field("id", "expected a session id: 1 to 64 characters of A-Z a-z 0-9 _ - .");
  }
  if (request.body.empty()) {
    throw ApiError(400, "invalid_request_error", "invalid_session",
                   "session: the body is empty (send the bytes POST /v1/sessions/{id}/export returned)");
  }
  // The one bound the store refuses on besides a mismatch: answered 413 before the bytes are hashed.
  if (request.body.size() > ctx.service.max_session_bytes()) {
    throw ApiError(413, "invalid_request_error", "request_too_large", "session larger than --sessions-max-mib");
  }
  const uint64_t bytes = request.body.size();
  int32_t positions = 0;
  try {
    positions = ctx.service.import_session(id, std::move(request.body));
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kCancelled) throw api_error_from(e);
    // kInvalidFile: truncated or corrupted; kInvalidArgument: another model file, KV type or shape.
    throw ApiError(400, "invalid_request_error",
                   e.code() == ErrorCode::kInvalidFile ? "invalid_session" : "session_mismatch", e.what());
  }
  Json out = Json::object();
  out.set("id", id);
  out.set("object", "session");
  out.set("tokens", positions);
  out.set("bytes", bytes);
  return json_response(200, out);
}

HttpResponse export_session(ServerContext& ctx, const std::string& id) {
  if (!SessionStore::valid_id(id)) throw not_found(id);
  std::shared_ptr<const std::string> bytes = ctx.service.export_session(id);
  if (bytes == nullptr) throw not_found(id);
  HttpResponse r;
  r.content_type = "application/octet-stream";
  r.shared_body = std::move(bytes);
  r.headers.emplace_back("Content-Disposition", "attachment; filename=\"" + id + ".edgls\"");
  return r;
}

HttpResponse delete_session(ServerContext& ctx, const std::string& id) {
  if (!SessionStore::valid_id(id) || !ctx.service.delete_session(id)) throw not_found(id);
  Json out = Json::object();
  out.set("id", id);
  out.set("object", "session");
  out.set("deleted", true);
  return json_response(200, out);
}

Json session_info(ServerContext& ctx, const std::string& id, const RequestResult& r) {
  Json info = Json::object();
  info.set("id", id);
  // The Runtime kept the bytes (or not) before the result got here; the size is the kept copy's.
  std::shared_ptr<const std::string> kept = r.session_stored ? ctx.service.export_session(id) : nullptr;
  if (!r.session_stored) {
    log_message(LogLevel::kWarn, "server: session " + id + " not stored: the service could not save it or it is over "
                                     "--sessions-max-mib " + std::to_string(ctx.service.max_session_bytes() >> 20));
  }
  info.set("stored", r.session_stored);
  info.set("bytes", static_cast<uint64_t>(kept ? kept->size() : 0));
  return info;
}

}  // namespace edgellm::server
