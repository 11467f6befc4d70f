#include "server/routed_chat.h"

#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "core/error.h"
#include "server/api_error.h"
#include "server/api_response.h"
#include "server/completion_channel.h"
#include "server/router.h"

namespace edgellm::server {
namespace {

using Clock = std::chrono::steady_clock;

// How often the wait for the answer looks at the stopping flag.
constexpr std::chrono::milliseconds kPollInterval{20};

}  // namespace

RequestResult run_local(ServerContext& ctx, ServiceRequest sr, std::vector<float>* probabilities) {
  auto ch = std::make_shared<CompletionChannel>();
  sr.deadline_ms = ctx.options.deadline_ms;
  sr.on_token = [ch](const TokenEvent& ev) { return ch->on_token(ev); };
  sr.on_finish = [ch](const RequestResult& r) { ch->on_finish(r); };
  RequestId id = 0;
  try {
    id = ctx.service.submit(std::move(sr)).id;
  } catch (const Error& e) {
    throw api_error_from(e);
  }
  for (;;) {
    CompletionChannel::Batch b = ch->take(kPollInterval);
    if (probabilities != nullptr) probabilities->insert(probabilities->end(), b.probabilities.begin(), b.probabilities.end());
    if (b.finished) {
      if (b.result.finish_reason == FinishReason::kError) throw api_error_from(Error(b.result.error_code, b.result.error));
      if (b.result.finish_reason == FinishReason::kCancelled) {
        throw ApiError(503, "server_error", "cancelled", "the request was cancelled (server stopping)");
      }
      return b.result;
    }
    if (ctx.stopping.load()) ctx.service.cancel(id);
  }
}

HttpResponse answer_routed(ServerContext& ctx, const Json& body, ParsedRequest p, const ResponseHead& head) {
  const RouterOptions& ro = ctx.options.router;
  ServerCounters& counters = ctx.counters;
  const Clock::time_point t0 = Clock::now();
  const Json messages = p.request.messages;
  RequestResult local;
  bool have_local = false;
  Confidence conf;
  std::vector<float> probs;
  Route route = Route::kCloud;
  std::string reason = "x_edgellm_route is cloud";
  auto answer_locally = [&] {
    if (have_local) return;
    ServiceRequest sr = p.request;  // a copy: the retry-in-cloud path may still need it
    sr.token_probability = true;
    local = run_local(ctx, std::move(sr), &probs);
    conf = confidence_of(probs);
    have_local = true;
    counters.route_score_micros.fetch_add(static_cast<uint64_t>(conf.score * 1e6));
    counters.route_scored.fetch_add(1);
  };
  if (p.route != "cloud") {
    answer_locally();
    if (p.route == "local") {
      route = Route::kLocal;
      reason = "x_edgellm_route is local";
    } else {
      route = route_for(conf, ro);
      reason = route == Route::kLocal ? "confident" : route == Route::kCloud ? "low confidence" : "between the thresholds";
    }
  }
  Json cloud_answer;
  if (route == Route::kCloud && ro.privacy) {
    counters.route_privacy_blocks.fetch_add(1);
    route = Route::kLocal;
    reason += "; privacy mode: the cloud is never called";
  } else if (route == Route::kCloud && ro.cloud_url.empty()) {
    route = Route::kLocal;
    reason += "; no cloud configured";
  } else if (route == Route::kCloud) {
    // Context sync: system messages and the last turns verbatim, older turns summarized locally.
    // Qualified: runtime/router_policy.h has the Runtime's own copy for edgellm::Json, which ADL
    // would also find (issue 37 moves the server onto the Runtime's router and removes this one).
    const ContextSplit split = server::split_context(messages, ro.verbatim_turns);
    Json cloud_messages = split.recent;
    if (split.older.size() > 0) {
      std::string transcript;
      for (const Json& m : split.older.as_array()) {
        transcript += m.at("role").as_string() + ": " + m.at("content").as_string() + "\n";
      }
      ServiceRequest sum;
      Json sm = Json::array();
      Json sys = Json::object();
      sys.set("role", "system");
      sys.set("content", "Summarize this conversation in a few sentences.");
      sm.push_back(std::move(sys));
      Json user = Json::object();
      user.set("role", "user");
      user.set("content", transcript);
      sm.push_back(std::move(user));
      sum.messages = std::move(sm);
      sum.sampling.temperature = 0;
      sum.max_tokens = 128;
      cloud_messages = server::with_summary(split.recent, run_local(ctx, std::move(sum), nullptr).text);
    }
    Json req = Json::object();
    req.set("model", ro.cloud_model.empty() ? head.model : ro.cloud_model);
    req.set("messages", std::move(cloud_messages));
    for (const char* f : {"max_tokens", "max_completion_tokens", "temperature", "top_p", "stop", "seed",
                          "frequency_penalty", "presence_penalty"}) {
      if (const Json* v = body.find(f); v != nullptr && !v->is_null()) req.set(f, *v);
    }
    std::string error;
    if (cloud_chat(ro, req, &cloud_answer, &error)) {
      reason += "; answered by the cloud";
    } else {
      counters.route_cloud_failures.fetch_add(1);
      cloud_answer = Json();
      route = Route::kLocal;
      reason += "; offline: " + error;
    }
  }
  if (route != Route::kCloud) answer_locally();

  RequestResult shown = local;
  if (route == Route::kCloud) {
    const Json& c = cloud_answer.at("choices").at(0);
    shown = RequestResult();
    // As the Runtime's router labels a cloud answer (runtime/router.cpp): no local version served it.
    shown.model_version = "cloud:" + (ro.cloud_model.empty() ? head.model : ro.cloud_model);
    shown.text = c.at("message").at("content").as_string();
    const Json* fr = c.find("finish_reason");
    shown.finish_reason = fr != nullptr && fr->is_string() && fr->as_string() == "length" ? FinishReason::kLength
                                                                                          : FinishReason::kStop;
    if (const Json* u = cloud_answer.find("usage"); u != nullptr && u->is_object()) {
      if (const Json* v = u->find("prompt_tokens"); v != nullptr && v->is_number()) {
        shown.stats.prompt_tokens = static_cast<int32_t>(v->as_number());
      }
      if (const Json* v = u->find("completion_tokens"); v != nullptr && v->is_number()) {
        shown.stats.completion_tokens = static_cast<int32_t>(v->as_number());
      }
    }
  }
  const double latency_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  (route == Route::kLocal              ? counters.route_local
   : route == Route::kLocalLowConfidence ? counters.route_low_confidence
                                         : counters.route_cloud)
      .fetch_add(1);
  counters.route_latency_us.fetch_add(static_cast<uint64_t>(latency_ms * 1e3));

  Json out = completion_body(head, shown);
  Json r = Json::object();
  r.set("route", route_name(route));
  r.set("reason", reason);
  r.set("score", have_local ? Json(conf.score) : Json());
  r.set("mean_p", have_local ? Json(conf.mean) : Json());
  r.set("min_p", have_local ? Json(conf.min) : Json());
  r.set("latency_ms", latency_ms);
  r.set("local_threshold", ro.local_threshold);
  r.set("cloud_threshold", ro.cloud_threshold);
  if (route == Route::kLocalLowConfidence && !ro.privacy && !ro.cloud_url.empty()) {
    Json retry = Json::object();
    retry.set("x_edgellm_route", "cloud");
    r.set("retry_in_cloud", std::move(retry));  // send the same request again with this field
  }
  Json x = out.find("x_edgellm") != nullptr ? *out.find("x_edgellm") : Json::object();
  x.set("route", std::move(r));
  out.set("x_edgellm", std::move(x));
  HttpResponse response = json_response(200, out);
  response.headers.emplace_back("x-edgellm-route", route_name(route));
  response.headers.emplace_back("x-edgellm-model-version", shown.model_version);
  return response;
}

}  // namespace edgellm::server
