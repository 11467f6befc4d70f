// The edge-cloud router's decisions, as pure functions (docs/router.md). The local model answers
// first; the answer's confidence decides where the answer comes from:
//
//   score = exp(mean_i log p_i)   p_i = the model's probability of answer token i (softmax of
//                                 the raw logits at the sampled id, StepOutput::probability);
//                                 the geometric mean, i.e. 1 / perplexity of the answer
//   score >= local_threshold (0.85)  local answer
//   score <  cloud_threshold (0.60)  the cloud answers (the local answer if the cloud fails)
//   in between                       the local answer marked low-confidence; the caller may
//                                    retry the same request once with route "cloud"
//
// Context sync: the cloud receives the system messages, the last `verbatim_turns` user turns
// verbatim (a turn = a user message and the replies after it) and everything older as one
// system message holding a summary the local model wrote (split_context, with_summary).
//
// The cloud speaks OpenAI's chat-completions format; cloud_request_body / parse_cloud_answer
// build and read it. No I/O here: the call itself goes through the host's CloudTransport
// (cloud_transport.h), so the shipped library has no network code.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/json.h"

namespace edgellm {

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
Route route_for(const Confidence& c, double local_threshold, double cloud_threshold);

// The messages split for the cloud: `older` (to be summarized; may be empty) and `recent`
// (system messages + the last `verbatim_turns` user turns verbatim).
struct ContextSplit {
  Json older = Json::array();
  Json recent = Json::array();
};
ContextSplit split_context(const Json& messages, int verbatim_turns);
// recent with the summary inserted as a system message after the leading system messages.
Json with_summary(const Json& recent, const std::string& summary);
// The older turns as the user message of the summary request ("role: content" lines).
std::string transcript_of(const Json& messages);
// The instruction the summary request starts with.
inline constexpr const char* kSummaryInstruction = "Summarize this conversation in a few sentences.";

// What the cloud is asked: {"model", "messages", and the sampling fields the request set}.
struct CloudSampling {
  int32_t max_tokens = -1;  // < 0: not sent
  double temperature = -1;  // < 0: not sent
  double top_p = -1;
  std::vector<std::string> stop;
  bool seed_given = false;
  uint64_t seed = 0;
};
std::string cloud_request_body(const std::string& model, const Json& messages, const CloudSampling& sampling);

// The parts of a chat-completions answer the router uses. Throws Error(kInvalidArgument) naming
// what is missing when the body is not one.
struct CloudAnswer {
  std::string text;
  bool length = false;  // finish_reason "length"
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;
};
CloudAnswer parse_cloud_answer(const std::string& body);

}  // namespace edgellm
