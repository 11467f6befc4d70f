// Accuracy of classification cases. Issue 38's classify API (scores for a fixed label set in one
// forward pass) does not exist yet, so the label is read from a greedy generation for now:
//
//   generated text --label_from_generation--> predicted label --label_correct--> 0 / 1
//
// The scoring half (label_correct, and the accuracy the report computes from it) takes a label,
// not a generation: when the classify call exists, the runner asks it for the label instead and
// nothing below changes.
//
// Labels compare after normalize_label: surrounding whitespace and punctuation (Unicode P*,
// quotes and brackets included) dropped, ASCII letters lowercased.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace edgellm::eval {

std::string normalize_label(std::string_view label);

// The label a generation chose. The first non-empty line of `text`, normalised; with `labels`
// given, the allowed label it equals, else the longest allowed label it starts with followed by a
// non-letter (so "positive." and "Positive, because ..." are "positive"; the first listed wins a
// tie). Without a match (or without labels) the normalised line itself, which then matches no
// reference unless it equals one.
std::string label_from_generation(std::string_view text, const std::vector<std::string>& labels);

// 1 when the predicted label equals one of the references (normalised), else 0.
bool label_correct(std::string_view predicted, const std::vector<std::string>& references);

}  // namespace edgellm::eval
