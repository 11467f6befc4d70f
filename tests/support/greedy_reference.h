#pragma once
// The shared greedy references (../shared/testdata/reference/<model>-greedy.jsonl): one JSON line
// per prompt with its prompt ids, the greedy output ids and the output text, produced by an
// independent implementation (shared/README.md).
#include <cstdint>
#include <string>
#include <vector>

namespace edgellm::test {

struct GreedyReference {
  std::vector<int32_t> prompt;
  std::vector<int32_t> output;
  std::string text;
};

// Every line of reference/<file> under the shared test data; throws if the file is missing.
std::vector<GreedyReference> load_greedy_references(const std::string& file);

}  // namespace edgellm::test
