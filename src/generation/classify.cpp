#include "generation/classify.h"

#include <algorithm>
#include <cmath>

#include "chat/chat_prompt.h"
#include "chat/chat_template.h"
#include "core/error.h"
#include "core/json.h"
#include "engine/context.h"
#include "tokenizer/tokenizer.h"

namespace edgellm {

std::string default_classify_instruction(const std::vector<std::string>& labels) {
  std::string out = "Classify the text into exactly one of these labels: ";
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) out += ", ";
    out += labels[i];
  }
  out += ". Answer with the label only.";
  return out;
}

ClassifyTokens classify_tokens(const ClassifyRequest& request, const Tokenizer& tokenizer,
                               const ChatTemplate& chat_template) {
  ClassifyTokens out;
  if (request.raw) {
    // Special tokens written in the text stay text (a user's "<|im_end|>" must not end a turn).
    out.prompt = tokenizer.encode(request.instruction + request.text, /*add_special=*/true, /*parse_special=*/false);
  } else {
    Json messages = Json::array();
    Json system = Json::object();
    system.set("role", "system");
    system.set("content",
               request.instruction.empty() ? default_classify_instruction(request.labels) : request.instruction);
    Json user = Json::object();
    user.set("role", "user");
    user.set("content", request.text);
    messages.push_back(std::move(system));
    messages.push_back(std::move(user));
    out.prompt = chat_prompt_tokens(chat_template, tokenizer, messages);
  }
  require(!out.prompt.empty(), ErrorCode::kInvalidArgument, "classify: the prompt tokenizes to nothing");
  out.labels.reserve(request.labels.size());
  for (size_t i = 0; i < request.labels.size(); ++i) {
    out.labels.push_back(tokenizer.encode(request.labels[i], /*add_special=*/false, /*parse_special=*/false));
    require(!out.labels.back().empty(), ErrorCode::kInvalidArgument,
            [&] { return "classify: label " + std::to_string(i) + " tokenizes to nothing"; });
  }
  return out;
}

std::vector<double> label_probabilities(const std::vector<LabelScore>& scores, bool length_normalize) {
  std::vector<double> z(scores.size());
  for (size_t i = 0; i < scores.size(); ++i) {
    z[i] = length_normalize ? scores[i].logprob / std::max(scores[i].n_tokens, 1) : scores[i].logprob;
  }
  if (z.empty()) return z;
  const double max = *std::max_element(z.begin(), z.end());
  double sum = 0;
  for (double& v : z) sum += (v = std::exp(v - max));
  for (double& v : z) v /= sum;
  return z;
}

ClassifyResult classify(Context& ctx, const ClassifyTokens& tokens, const ClassifyRequest& request) {
  return classify_result(score_labels(ctx, tokens.prompt, tokens.labels), tokens, request);
}

ClassifyResult classify_result(const std::vector<LabelScore>& scores, const ClassifyTokens& tokens,
                               const ClassifyRequest& request) {
  ClassifyResult r;
  r.probabilities = label_probabilities(scores, request.length_normalize);
  r.logprobs.reserve(scores.size());
  r.label_tokens.reserve(scores.size());
  for (const LabelScore& s : scores) {
    r.logprobs.push_back(s.logprob);
    r.label_tokens.push_back(s.n_tokens);
  }
  r.index =
      static_cast<int32_t>(std::max_element(r.probabilities.begin(), r.probabilities.end()) - r.probabilities.begin());
  r.label = request.labels[static_cast<size_t>(r.index)];
  r.prompt_tokens = static_cast<int32_t>(tokens.prompt.size());
  return r;
}

}  // namespace edgellm
