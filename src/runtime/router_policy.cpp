#include "runtime/router_policy.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace edgellm {

Confidence confidence_of(const std::vector<float>& p) {
  Confidence c;
  c.tokens = static_cast<int32_t>(p.size());
  if (p.empty()) return c;
  double log_sum = 0, sum = 0;
  c.min = 1;
  for (float v : p) {
    const double x = std::clamp(static_cast<double>(v), 1e-12, 1.0);
    log_sum += std::log(x);
    sum += x;
    c.min = std::min(c.min, x);
  }
  c.score = std::exp(log_sum / static_cast<double>(p.size()));
  c.mean = sum / static_cast<double>(p.size());
  return c;
}

const char* route_name(Route r) {
  switch (r) {
    case Route::kLocal: return "local";
    case Route::kLocalLowConfidence: return "local-low-confidence";
    case Route::kCloud: return "cloud";
  }
  return "local";
}

Route route_for(const Confidence& c, double local_threshold, double cloud_threshold) {
  if (c.score >= local_threshold) return Route::kLocal;
  if (c.score < cloud_threshold) return Route::kCloud;
  return Route::kLocalLowConfidence;
}

ContextSplit split_context(const Json& messages, int verbatim_turns) {
  ContextSplit out;
  const Json::Array& a = messages.as_array();
  // Leading system messages always travel; the turns start at the first other message.
  size_t first_turn = 0;
  while (first_turn < a.size() && a[first_turn].at("role").as_string() == "system") ++first_turn;
  // Start of the last `verbatim_turns` user turns.
  size_t cut = first_turn;
  int seen = 0;
  for (size_t i = a.size(); i-- > first_turn;) {
    if (a[i].at("role").as_string() == "user" && ++seen == verbatim_turns) {
      cut = i;
      break;
    }
  }
  if (seen < verbatim_turns) cut = first_turn;
  for (size_t i = 0; i < first_turn; ++i) out.recent.push_back(a[i]);
  for (size_t i = first_turn; i < cut; ++i) out.older.push_back(a[i]);
  for (size_t i = cut; i < a.size(); ++i) out.recent.push_back(a[i]);
  return out;
}

Json with_summary(const Json& recent, const std::string& summary) {
  Json out = Json::array();
  const Json::Array& a = recent.as_array();
  size_t i = 0;
  for (; i < a.size() && a[i].at("role").as_string() == "system"; ++i) out.push_back(a[i]);
  Json s = Json::object();
  s.set("role", "system");
  s.set("content", "Summary of the earlier conversation: " + summary);
  out.push_back(std::move(s));
  for (; i < a.size(); ++i) out.push_back(a[i]);
  return out;
}

std::string transcript_of(const Json& messages) {
  std::string transcript;
  for (const Json& m : messages.as_array()) {
    transcript += m.at("role").as_string() + ": " + m.at("content").as_string() + "\n";
  }
  return transcript;
}

std::string cloud_request_body(const std::string& model, const Json& messages, const CloudSampling& s) {
  Json req = Json::object();
  req.set("model", model);
  req.set("messages", messages);
  req.set("stream", false);
  if (s.max_tokens >= 0) req.set("max_tokens", s.max_tokens);
  if (s.temperature >= 0) req.set("temperature", s.temperature);
  if (s.top_p >= 0) req.set("top_p", s.top_p);
  if (!s.stop.empty()) {
    Json stop = Json::array();
    for (const std::string& st : s.stop) stop.push_back(st);
    req.set("stop", std::move(stop));
  }
  if (s.seed_given) req.set("seed", static_cast<int64_t>(s.seed & 0x3fffffffffffffffULL));
  return req.dump();
}

CloudAnswer parse_cloud_answer(const std::string& body) {
  Json j;
  try {
    j = Json::parse(body);
  } catch (const Error& e) {
    throw Error(ErrorCode::kInvalidArgument, std::string("the cloud's answer is not JSON: ") + e.what());
  }
  const Json* choices = j.is_object() ? j.find("choices") : nullptr;
  if (choices == nullptr || !choices->is_array() || choices->size() == 0 || !choices->at(0).is_object()) {
    throw Error(ErrorCode::kInvalidArgument, "the cloud's answer has no choices[0]");
  }
  const Json& c = choices->at(0);
  const Json* msg = c.find("message");
  const Json* content = msg != nullptr && msg->is_object() ? msg->find("content") : nullptr;
  if (content == nullptr || !content->is_string()) {
    throw Error(ErrorCode::kInvalidArgument, "the cloud's answer has no choices[0].message.content string");
  }
  CloudAnswer a;
  a.text = content->as_string();
  const Json* fr = c.find("finish_reason");
  a.length = fr != nullptr && fr->is_string() && fr->as_string() == "length";
  if (const Json* u = j.find("usage"); u != nullptr && u->is_object()) {
    if (const Json* v = u->find("prompt_tokens"); v != nullptr && v->is_number()) {
      a.prompt_tokens = static_cast<int32_t>(std::clamp(v->as_number(), 0.0, 2e9));
    }
    if (const Json* v = u->find("completion_tokens"); v != nullptr && v->is_number()) {
      a.completion_tokens = static_cast<int32_t>(std::clamp(v->as_number(), 0.0, 2e9));
    }
  }
  return a;
}

}  // namespace edgellm
