// The task file of `edgellm eval`: JSON Lines, one case per non-empty line (docs/eval.md):
//
//   {"id": "title-1", "prompt": "《静夜思》\n作者：李白\n", "reference": "床前明月光，疑是地上霜。",
//    "metric": "rouge", "max_tokens": 48, "stop": ["\n"]}
//   {"id": "qa-3", "messages": [{"role": "user", "content": "Capital of France?"}],
//    "references": ["Paris", "paris, france"], "metric": "qa"}
//   {"id": "intent-7", "prompt": "...", "reference": "weather", "labels": ["weather", "alarm"],
//    "metric": "accuracy"}
//
//   id          optional string (default "line-N"); unique in the file
//   prompt      completion input (raw text; BOS added as the vocabulary asks; control-token
//               text such as <|im_start|> is that token, as in `edgellm run`), or
//   messages    chat input: [{role, content}], rendered with the model's chat template
//   reference / references   one string, or a non-empty array of strings
//   metric      rouge (ROUGE-1 / 2 / L), bleu (corpus BLEU), qa (exact match + F1),
//               accuracy (label from the generation, classification.h)
//   labels      accuracy only, optional: the allowed labels
//   max_tokens  optional, 1..32768 (default: the command's -n)
//   stop        optional array of stop strings (default: the command's --stop)
// Anything else on a line is an error naming the line and the field (a typo such as
// "refrence" must not silently score against nothing). Every string must be valid UTF-8.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"

namespace edgellm::eval {

enum class Metric { kRouge, kBleu, kQa, kAccuracy };
// "rouge", "bleu", "qa", "accuracy"
const char* metric_name(Metric m);

struct EvalCase {
  std::string id;
  int32_t line = 0;                     // 1-based line in the task file
  std::string prompt;                   // completion input; empty for chat cases
  Json messages;                        // chat input (an array); null for completion cases
  std::vector<std::string> references;  // at least one
  Metric metric = Metric::kRouge;
  std::vector<std::string> labels;  // accuracy: allowed labels (may be empty)
  std::optional<int32_t> max_tokens;
  std::optional<std::vector<std::string>> stop;
};

struct TaskFile {
  std::string path;
  std::string sha256;  // of the file's bytes: identifies the task set in reports and the registry
  std::vector<EvalCase> cases;
};

inline constexpr size_t kMaxEvalCases = 100000;

// Parses JSONL text. Throws Error(kInvalidFile) "task file line N: ..." for malformed JSON, a
// field of the wrong type, a missing or doubled input, no reference, an unknown metric or field,
// invalid UTF-8, a duplicate id, more than kMaxEvalCases cases, or a file with no case.
std::vector<EvalCase> parse_task_lines(std::string_view text);
// Reads and parses a file (Error kIo when it cannot be read).
TaskFile read_task_file(const std::string& path);

}  // namespace edgellm::eval
