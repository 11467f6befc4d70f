#include "server/routed_chat.h"

#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "core/error.h"
#include "server/api_error.h"
#include "server/api_response.h"
#include "server/completion_channel.h"

namespace edgellm::server {
namespace {

// How often the wait for the answer looks at the stopping flag.
constexpr std::chrono::milliseconds kRoutedPollInterval{20};

Json score_or_null(double v) { return v >= 0 ? Json(v) : Json(); }

}  // namespace

RouteMode route_mode(const std::string& route) {
  if (route == "local") return RouteMode::kLocal;
  if (route == "cloud") return RouteMode::kCloud;
  return RouteMode::kAuto;
}

HttpResponse answer_routed(ServerContext& ctx, ParsedRequest p, const ResponseHead& head) {
  auto ch = std::make_shared<CompletionChannel>();
  ServiceRequest sr = std::move(p.request);
  sr.route = route_mode(p.route);
  sr.deadline_ms = p.deadline_ms > 0 ? p.deadline_ms : ctx.options.deadline_ms;  // generate() checked it
  sr.on_token = [ch](const TokenEvent& ev) { return ch->on_token(ev); };
  sr.on_finish = [ch](const RequestResult& r) { ch->on_finish(r); };
  RequestId id = 0;
  try {
    id = ctx.service.submit(std::move(sr)).id;
  } catch (const Error& e) {
    throw api_error_from(e);
  }
  RequestResult shown;
  for (;;) {
    CompletionChannel::Batch b = ch->take(kRoutedPollInterval);
    if (b.finished) {
      shown = std::move(b.result);
      break;
    }
    if (ctx.stopping.load()) ctx.service.cancel(id);
  }
  if (shown.finish_reason == FinishReason::kError) throw api_error_from(Error(shown.error_code, shown.error));
  if (shown.finish_reason == FinishReason::kCancelled) {
    throw ApiError(503, "server_error", "cancelled", "the request was cancelled (server stopping or deadline)");
  }

  const RouteInfo& ri = shown.route;
  const std::string route = ri.route.empty() ? "local" : ri.route;
  const RouterParams rp = ctx.service.router_params();
  Json out = completion_body(head, shown);
  Json r = Json::object();
  r.set("route", route);
  r.set("reason", ri.reason);
  r.set("score", score_or_null(ri.score));
  r.set("mean_p", score_or_null(ri.mean_p));
  r.set("min_p", score_or_null(ri.min_p));
  if (!ri.tier.empty()) r.set("tier", ri.tier);
  r.set("latency_ms", ri.latency_ms);
  r.set("local_threshold", rp.local_threshold);
  r.set("cloud_threshold", rp.cloud_threshold);
  if (ri.retry_in_cloud) {
    Json retry = Json::object();
    retry.set("x_edgellm_route", "cloud");
    r.set("retry_in_cloud", std::move(retry));  // send the same request again with this field
  }
  Json x = out.find("x_edgellm") != nullptr ? *out.find("x_edgellm") : Json::object();
  x.set("route", std::move(r));
  out.set("x_edgellm", std::move(x));
  HttpResponse response = json_response(200, out);
  response.headers.emplace_back("x-edgellm-route", route);
  response.headers.emplace_back("x-edgellm-model-version", shown.model_version);
  return response;
}

}  // namespace edgellm::server
