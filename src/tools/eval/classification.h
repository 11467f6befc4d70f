// Accuracy of classification cases. A case with `labels` is classified by the labels'
// likelihoods (issue 38's classify: generation/classify.h, served by the eval's service:
// InferenceService::submit_classify), so its answer is always one of the labels:
//
//   case --classify_request--> ClassifyRequest --submit_classify--> label --label_correct--> 0 / 1
//
// A case without labels has nothing to score, so its label is read from the greedy generation
// (label_from_generation) and scored the same way.
//
// Labels compare after normalize_label: surrounding whitespace and punctuation (Unicode P*,
// quotes and brackets included) dropped, ASCII letters lowercased.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "generation/classify.h"
#include "tools/eval/task_file.h"

namespace edgellm::eval {

std::string normalize_label(std::string_view label);

// The label a generation chose. The first non-empty line of `text`, normalised; with `labels`
// given, the allowed label it equals, else the longest allowed label it starts with followed by a
// non-letter (so "positive." and "Positive, because ..." are "positive"; the first listed wins a
// tie). Without a match (or without labels) the normalised line itself, which then matches no
// reference unless it equals one.
std::string label_from_generation(std::string_view text, const std::vector<std::string>& labels);

// The classify request for a case with labels. A prompt case: raw mode, the prompt as written
// (BOS as the vocabulary asks) followed by each label. A chat case of one user message, or a
// system and a user message: chat mode with the system message as the instruction (the default
// instruction, which lists the labels, when there is none). Any other conversation has no
// classify form: nullopt, and the label is read from the generation.
std::optional<ClassifyRequest> classify_request(const EvalCase& c);

// 1 when the predicted label equals one of the references (normalised), else 0.
bool label_correct(std::string_view predicted, const std::vector<std::string>& references);

}  // namespace edgellm::eval
