#include "server/session_endpoints.h"

#include <cstdio>
#include <memory>
#include <random>
#include <utility>

#include "core/error.h"
#include "core/log.h"
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
  if (ctx.options.max_sessions == 0) {
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
  if (request.body.size() > ctx.options.max_session_bytes) {
    throw ApiError(413, "invalid_request_error", "request_too_large", "session larger than --sessions-max-mib");
  }
  int32_t positions = 0;
  try {
    positions = ctx.service.check_session(request.body);
  } catch (const Error& e) {
    // kInvalidFile: truncated or corrupted; kInvalidArgument: another model file, KV type or shape.
    throw ApiError(400, "invalid_request_error",
                   e.code() == ErrorCode::kInvalidFile ? "invalid_session" : "session_mismatch", e.what());
  }
  const uint64_t bytes = request.body.size();
  if (!ctx.sessions.put(id, std::move(request.body))) {
    throw ApiError(413, "invalid_request_error", "request_too_large", "session larger than --sessions-max-mib");
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
  std::shared_ptr<const std::string> bytes = ctx.sessions.get(id);
  if (bytes == nullptr) throw not_found(id);
  HttpResponse r;
  r.content_type = "application/octet-stream";
  r.shared_body = std::move(bytes);
  r.headers.emplace_back("Content-Disposition", "attachment; filename=\"" + id + ".edgls\"");
  return r;
}

HttpResponse delete_session(ServerContext& ctx, const std::string& id) {
  if (!SessionStore::valid_id(id) || !ctx.sessions.erase(id)) throw not_found(id);
  Json out = Json::object();
  out.set("id", id);
  out.set("object", "session");
  out.set("deleted", true);
  return json_response(200, out);
}

Json keep_session(ServerContext& ctx, const std::string& id, RequestResult& r) {
  Json info = Json::object();
  info.set("id", id);
  const uint64_t n = r.session.size();
  const bool stored = !r.session.empty() && ctx.sessions.put(id, std::move(r.session));
  if (!stored) {
    log_message(LogLevel::kWarn, "server: session " + id + " not stored: " +
                                     (n == 0 ? std::string("the service could not save it")
                                             : std::to_string(n) + " bytes, over --sessions-max-mib " +
                                                   std::to_string(ctx.options.max_session_bytes >> 20)));
  }
  info.set("stored", stored);
  info.set("bytes", n);
  return info;
}

}  // namespace edgellm::server
