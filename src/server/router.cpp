#include "server/router.h"

#include <httplib.h>

#include <algorithm>
#include <cmath>

namespace edgellm::server {

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

Route route_for(const Confidence& c, const RouterOptions& o) {
  if (c.score >= o.local_threshold) return Route::kLocal;
  if (c.score < o.cloud_threshold) return Route::kCloud;
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

bool cloud_chat(const RouterOptions& o, const Json& body, Json* response, std::string* error) {
  httplib::Client client(o.cloud_url);
  if (!client.is_valid()) {
    *error = "cloud URL '" + o.cloud_url + "' is not usable";
    return false;
  }
  const time_t sec = o.cloud_timeout_ms / 1000;
  const time_t usec = static_cast<time_t>(o.cloud_timeout_ms % 1000) * 1000;
  client.set_connection_timeout(sec, usec);
  client.set_read_timeout(sec, usec);
  client.set_write_timeout(sec, usec);
  httplib::Headers headers;
  if (!o.cloud_key.empty()) headers.emplace("Authorization", "Bearer " + o.cloud_key);
  auto res = client.Post("/v1/chat/completions", headers, body.dump(), "application/json");
  if (!res) {
    *error = "cloud unreachable (" + httplib::to_string(res.error()) + ")";
    return false;
  }
  if (res->status != 200) {
    *error = "cloud answered HTTP " + std::to_string(res->status);
    return false;
  }
  try {
    *response = Json::parse(res->body);
    const Json& msg = response->at("choices").at(0).at("message");
    (void)msg.at("content").as_string();
  } catch (const std::exception& e) {
    *error = std::string("cloud answer malformed: ") + e.what();
    return false;
  }
  return true;
}

}  // namespace edgellm::server
