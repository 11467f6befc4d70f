// Intent recognition / classification by likelihood: the model reads the text (with an
// instruction, through the chat template) and each candidate label is scored as the answer by
// its log-probability (generation/label_scorer.h); the most probable label wins. The answer is
// always one of the labels, and the probabilities say how sure the model is: faster and better
// calibrated than generating a label and parsing it.
//
//   prompt  chat mode (default): the chat template renders [system: instruction, user: text] with
//           the assistant's generation prompt; the instruction defaults to one that lists the
//           labels. raw mode: instruction + text as they are (a base model, or a caller who
//           wrote the whole prompt), BOS as the vocabulary asks.
//   labels  each tokenized on its own (no special tokens) and appended after the prompt: in raw
//           mode the caller decides the separator (lm-eval's " label" convention: put the space
//           in the label or at the end of the text).
//   probs   softmax over the labels of their total log-probabilities (the sum over a label's
//           tokens: what llama.cpp's and lm-eval's multiple-choice scoring report as the
//           log-likelihood), or with length_normalize of the mean log-probability per token
//           (lm-eval's acc_norm idea, per token rather than per byte). A sum favours short
//           labels; normalise when the labels' lengths differ a lot.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "generation/generate.h"
#include "generation/label_scorer.h"

namespace edgellm {

class ChatTemplate;
class Context;
class Tokenizer;

struct ClassifyRequest {
  std::string text;                 // what to classify (non-empty)
  std::vector<std::string> labels;  // 1..kMaxClassifyLabels distinct, non-empty labels
  std::string instruction;          // chat mode: the system message; empty: default_classify_instruction
  bool raw = false;                 // no chat template: the prompt is instruction + text
  bool length_normalize = false;    // softmax over mean (not summed) token log-probabilities
  int64_t deadline_ms = 30000;      // Runtime::classify: from the call; <= 0 none
};

struct ClassifyResult {
  // kStop: a label was chosen. Runtime::classify: kTimeout (deadline_ms passed) or kCancelled
  // (shut down) when it stopped before (index -1, nothing else filled in but prompt_tokens).
  FinishReason finish_reason = FinishReason::kStop;
  int32_t index = -1;                 // the chosen label (highest probability; the first on a tie)
  std::string label;                  // labels[index]
  std::vector<double> probabilities;  // per label, in order; sum to 1
  std::vector<double> logprobs;       // per label: summed token log-probabilities (natural log)
  std::vector<int32_t> label_tokens;  // per label: its tokens
  int32_t prompt_tokens = 0;
  int32_t cached_tokens = 0;  // of prompt_tokens, taken from the service's KV prefix cache (not prefilled)
  double total_ms = 0;  // Runtime::classify: call -> result
};

// The tokens a request scores: the prompt, and each label's tokens.
struct ClassifyTokens {
  std::vector<int32_t> prompt;
  std::vector<std::vector<int32_t>> labels;
};

// "Classify the text into exactly one of these labels: a, b, c. Answer with the label only."
std::string default_classify_instruction(const std::vector<std::string>& labels);

// The request's prompt and label tokens (the comment at the top). Throws Error(kInvalidArgument)
// when the template rejects the conversation or a label tokenizes to nothing.
ClassifyTokens classify_tokens(const ClassifyRequest& request, const Tokenizer& tokenizer,
                               const ChatTemplate& chat_template);

// Softmax over the labels of their summed (or, length_normalize, mean per token) log-probs.
std::vector<double> label_probabilities(const std::vector<LabelScore>& scores, bool length_normalize);

// The result of scored labels: probabilities, the choice, prompt_tokens (cached_tokens and
// total_ms left to the caller).
ClassifyResult classify_result(const std::vector<LabelScore>& scores, const ClassifyTokens& tokens,
                               const ClassifyRequest& request);

// The whole task on `ctx` (n_seq_max >= labels + 1; label_scorer.h's rules): tokens, scores,
// probabilities, the choice. The request is taken as checked (check_classify_request).
ClassifyResult classify(Context& ctx, const ClassifyTokens& tokens, const ClassifyRequest& request);

}  // namespace edgellm
