// The edge-cloud router (local first), docs/server.md "Router". For a non-streamed chat request
// the local model answers first; the answer's confidence decides where it comes from:
//
//   score = exp(mean_i log p_i)   p_i = the model's probability of answer token i (softmax of
//                                 the raw logits at the sampled id, StepOutput::probability);
//                                 the geometric mean, i.e. 1 / perplexity of the answer
//   score >= local_threshold (0.85)  local answer
//   score <  cloud_threshold (0.60)  the cloud answers (the local answer if the cloud fails)
//   in between                       the local answer marked low-confidence; the client may
//                                    retry the same request once with "x_edgellm_route": "cloud"
//
// Privacy mode never calls the cloud (no socket is opened). The cloud is any OpenAI-compatible
// endpoint; it receives the system messages, the last `verbatim_turns` user turns verbatim
// (a turn = a user message and the replies after it) and everything older as one system message
// holding a summary the local model wrote.
//
// Pure functions and a stateless client; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/json.h"

namespace edgellm::server {

struct RouterOptions {
  std::string cloud_url;        // "http://host:port" (OpenAI base without /v1); empty: no cloud
  std::string cloud_model;      // model name sent to the cloud
  std::string cloud_key;        // Bearer key (from an environment variable, never a flag)
  double local_threshold = 0.85;
  double cloud_threshold = 0.60;
  bool privacy = false;         // never call the cloud
  int cloud_timeout_ms = 30000;
  int verbatim_turns = 3;

  bool enabled() const { return privacy || !cloud_url.empty(); }
};

struct Confidence {
  double score = 0;  // geometric mean of the token probabilities
  double mean = 0;   // arithmetic mean
  double min = 0;
  int32_t tokens = 0;
};

// Confidence of an answer from its token probabilities; an empty answer has score 0.
Confidence confidence_of(const std::vector<float>& probabilities);

enum class Route { kLocal, kLocalLowConfidence, kCloud };
const char* route_name(Route route);  // "local", "local-low-confidence", "cloud"

// The route the thresholds give (before privacy mode and cloud availability are applied).
Route route_for(const Confidence& c, const RouterOptions& o);

// The messages split for the cloud: `older` (to be summarized; may be empty) and `recent`
// (system messages + the last `verbatim_turns` user turns verbatim).
struct ContextSplit {
  Json older = Json::array();
  Json recent = Json::array();
};
ContextSplit split_context(const Json& messages, int verbatim_turns);
// recent with the summary inserted as a system message after the leading system messages.
Json with_summary(const Json& recent, const std::string& summary);

// One non-streamed chat call to the cloud. Returns true and fills *response with the parsed
// body on HTTP 200; false with *error ("connect failed", "HTTP 500: ...") otherwise.
bool cloud_chat(const RouterOptions& o, const Json& request_body, Json* response, std::string* error);

}  // namespace edgellm::server
