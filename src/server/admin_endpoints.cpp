#include "server/admin_endpoints.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "server/api_error.h"
#include "server/api_response.h"

namespace edgellm::server {
namespace {

using Clock = std::chrono::steady_clock;

// The swap's or reload's failure: a file that cannot be served is the caller's to fix (400);
// anything else (shutting down, out of memory) as every endpoint answers it.
ApiError model_change_error(const Error& e) {
  switch (e.code()) {
    case ErrorCode::kIo:
    case ErrorCode::kInvalidFile:
    case ErrorCode::kUnsupported:
    case ErrorCode::kInvalidArgument:
      return ApiError(400, "invalid_request_error", "model_not_loaded",
                      std::string(e.what()) + " (the serving model is unchanged)");
    default: return api_error_from(e);
  }
}

// {"object", "model_version", "live_versions", "swaps", "load_ms"}: what serves now, and which
// versions are still finishing their requests.
Json model_state(ServerContext& ctx, const char* object, double load_ms) {
  Json j = Json::object();
  j.set("object", object);
  j.set("model_version", ctx.service.model_version());
  Json live = Json::array();
  for (const std::string& v : ctx.service.live_versions()) live.push_back(v);
  j.set("live_versions", std::move(live));
  j.set("swaps", ctx.service.swaps());
  j.set("load_ms", load_ms);
  return j;
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::string required_string(const Json& body, const char* name) {
  const Json* v = body.find(name);
  if (v == nullptr || !v->is_string() || v->as_string().empty())
    throw ApiError::bad_field(name, "expected a non-empty string");
  return v->as_string();
}

// An optional integer level in [0, max] (absent: 0).
int level(const Json& body, const char* name, int max) {
  const Json* v = body.find(name);
  if (v == nullptr || v->is_null()) return 0;
  if (!v->is_number() || !(v->as_number() >= 0 && v->as_number() <= max) ||
      v->as_number() != std::floor(v->as_number())) {
    throw ApiError::bad_field(name, "expected an integer in [0, " + std::to_string(max) + "]");
  }
  return static_cast<int>(v->as_number());
}

// Names outside `known` are refused: a misspelt level ("memory_level") must not read as 0.
void only_fields(const Json& body, const std::vector<std::string>& known) {
  if (!body.is_object()) throw ApiError(400, "invalid_request_error", "invalid_value", "expected a JSON object");
  std::string all;
  for (const std::string& k : known) all += (all.empty() ? "" : ", ") + k;
  for (const auto& [name, value] : body.as_object()) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      throw ApiError::bad_field(name, "unknown field (expected one of: " + all + ")");
    }
  }
}

// Pause, resume and trim act on the runtime as a whole: a body, if any, is empty or {} (a
// field there is a mistake the operator should hear about, not a silent no-op).
void no_fields(const HttpRequest& request, int max_depth) {
  if (request.body.find_first_not_of(" \t\r\n") == std::string::npos) return;
  const Json body = parse_json_request(request, max_depth);
  if (!body.as_object().empty()) {
    throw ApiError::bad_field(body.as_object().begin()->first, "unknown field (this endpoint takes no fields)");
  }
}

Json runtime_state(ServerContext& ctx) {
  const ServiceMetrics m = ctx.service.service_metrics();
  Json j = Json::object();
  j.set("object", "runtime_state");
  j.set("paused", ctx.service.paused());
  j.set("paused_idle", m.paused_idle);
  j.set("running", m.running);
  j.set("waiting", m.waiting);
  j.set("model_version", ctx.service.model_version());
  return j;
}

// The trim's answer, from the scheduler thread to the worker that waits for it. Shared: a
// worker that gave up (deadline, stop) leaves it to the callback.
struct TrimDone {
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  size_t bytes = 0;
};

}  // namespace

HttpResponse admin_swap(ServerContext& ctx, HttpRequest& request) {
  const Json body = parse_json_request(request, ctx.options.max_json_depth);
  only_fields(body, {"model", "version"});
  const std::string path = required_string(body, "model");
  const std::string version = required_string(body, "version");
  if (version.size() > 64) throw ApiError::bad_field("version", "at most 64 bytes");
  const Clock::time_point t0 = Clock::now();
  try {
    ctx.service.swap_model(path, version);
  } catch (const Error& e) {
    log_message(LogLevel::kWarn, std::string("server: /admin/swap to version ") + version + " failed: " + e.what());
    throw model_change_error(e);
  }
  const double load_ms = ms_since(t0);
  log_message(LogLevel::kInfo, "server: /admin/swap: version " + version + " serves new requests (loaded in " +
                                   std::to_string(static_cast<int64_t>(load_ms)) + " ms)");
  return json_response(200, model_state(ctx, "model_swap", load_ms));
}

HttpResponse admin_reload(ServerContext& ctx) {
  const std::string before = ctx.service.model_version();
  const Clock::time_point t0 = Clock::now();
  try {
    ctx.service.reload_from_registry();
  } catch (const Error& e) {
    log_message(LogLevel::kWarn, std::string("server: /admin/reload failed: ") + e.what());
    throw model_change_error(e);
  }
  Json j = model_state(ctx, "model_reload", ms_since(t0));
  j.set("changed", j.at("model_version").as_string() != before);
  return json_response(200, j);
}

HttpResponse admin_pressure(ServerContext& ctx, HttpRequest& request) {
  const Json body = parse_json_request(request, ctx.options.max_json_depth);
  only_fields(body, {"memory", "thermal", "power_save"});
  PressureSignals s;
  s.memory_level = level(body, "memory", 4);
  s.thermal_level = level(body, "thermal", 3);
  if (const Json* v = body.find("power_save"); v != nullptr && !v->is_null()) {
    if (!v->is_bool()) throw ApiError::bad_field("power_save", "expected true or false");
    s.power_save = v->as_bool();
  }
  try {
    ctx.service.set_pressure(s);
  } catch (const Error& e) {
    throw api_error_from(e);
  }
  // The ladder steps toward the target one rung at a time on its own thread (down at once, up
  // after its recovery time): GET /admin/degradation shows where it is.
  std::string reason;
  const Rung target = target_rung(s, &reason);
  Json j = Json::object();
  j.set("object", "pressure");
  j.set("signals", s.describe());
  j.set("target", static_cast<int>(target));
  j.set("target_name", rung_name(target));
  j.set("reason", reason);
  return json_response(200, j);
}

HttpResponse admin_pause(ServerContext& ctx, HttpRequest& request, bool pause) {
  no_fields(request, ctx.options.max_json_depth);
  if (pause) {
    ctx.service.pause();
  } else {
    ctx.service.resume();
  }
  log_message(LogLevel::kInfo, pause ? "server: /admin/pause: the runtime is paused (requests wait)"
                                     : "server: /admin/resume: the runtime runs again");
  return json_response(200, runtime_state(ctx));
}

HttpResponse admin_state(ServerContext& ctx) {
  return json_response(200, runtime_state(ctx));
}

HttpResponse admin_trim(ServerContext& ctx, HttpRequest& request) {
  no_fields(request, ctx.options.max_json_depth);
  auto state = std::make_shared<TrimDone>();
  const Clock::time_point t0 = Clock::now();
  ctx.service.trim([state](size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(state->mutex);
      state->bytes = bytes;
      state->done = true;
    }
    state->cv.notify_all();
  });
  // The scheduler runs it between two steps (at most one forward away; at once when idle or
  // paused). Polled: a stopping server must not keep the worker.
  const Clock::time_point give_up = t0 + std::chrono::milliseconds(ctx.options.deadline_ms);
  std::unique_lock<std::mutex> lock(state->mutex);
  while (!state->done) {
    if (ctx.stopping.load() || Clock::now() > give_up) {
      throw ApiError(503, "server_error", "trim_not_run",
                     "the trim did not run in time (the server is stopping or the scheduler is busy)");
    }
    state->cv.wait_for(lock, std::chrono::milliseconds(20));
  }
  Json j = Json::object();
  j.set("object", "trim");
  j.set("released_bytes", static_cast<double>(state->bytes));
  j.set("trim_ms", ms_since(t0));
  log_message(LogLevel::kInfo, "server: /admin/trim released " + std::to_string(state->bytes) + " bytes");
  return json_response(200, j);
}

HttpResponse admin_degradation(ServerContext& ctx) {
  return json_response(200, ctx.service.degradation_json());
}

}  // namespace edgellm::server
