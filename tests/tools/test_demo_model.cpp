// The model `make demo` runs (assets/models/tinytales.gguf, scripts/train-demo-model/): EdgeLLM
// must tokenize and continue it exactly as PyTorch does from the same file
// (scripts/train-demo-model/reference.py wrote assets/models/tinytales-greedy.jsonl with the
// trainer's tokenizer and a float64 forward pass), and both greedy and default sampling must write
// readable English: words of letters and punctuation, no byte-fallback pieces.
#include <gtest/gtest.h>

#include <cctype>
#include <sstream>
#include <string>
#include <vector>

#include "core/json.h"
#include "support/cli_runner.h"
#include "support/test_env.h"

namespace edgellm {
namespace {

const char* kModel = "assets/models/tinytales.gguf";  // tests run in the source tree

std::vector<int64_t> ints(const Json& a) {
  std::vector<int64_t> out;
  for (const auto& v : a.as_array()) out.push_back(v.as_int());
  return out;
}

// Words of letters (an apostrophe inside), the punctuation of the stories around them.
void expect_readable(const std::string& text, size_t min_words) {
  size_t words = 0;
  for (unsigned char c : text) {
    EXPECT_TRUE(std::isprint(c) || c == '\n') << "byte " << int(c) << " in: " << text;
  }
  EXPECT_EQ(text.find("<0x"), std::string::npos) << text;
  std::istringstream in(text);
  for (std::string w; in >> w;) {
    std::string core;
    for (char c : w) {
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '\'') core += c;
    }
    if (core.empty()) {  // punctuation on its own ("," after a quote)
      EXPECT_LE(w.size(), 3u) << "not a word: '" << w << "' in: " << text;
      continue;
    }
    ++words;
    EXPECT_TRUE(core.size() * 2 >= w.size()) << "not a word: '" << w << "' in: " << text;
  }
  EXPECT_GE(words, min_words) << text;
}

TEST(DemoModel, GreedyEqualsPyTorchTokenForToken) {
  const std::string ref = test::read_file("assets/models/tinytales-greedy.jsonl");
  ASSERT_FALSE(ref.empty());
  std::istringstream lines(ref);
  int cases = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    const Json c = Json::parse(line);
    const auto r = test::run_cli({"run", "-m", kModel, "-p", c.at("prompt").as_string(), "-n", "100", "--temp", "0",
                                  "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const Json out = Json::parse(r.out);
    EXPECT_EQ(ints(out.at("prompt_ids")), ints(c.at("prompt_ids"))) << c.at("prompt").as_string();
    EXPECT_EQ(ints(out.at("ids")), ints(c.at("output_ids"))) << c.at("prompt").as_string();
    EXPECT_EQ(out.at("text").as_string(), c.at("output_text").as_string());
    expect_readable(out.at("text").as_string(), 10);
    ++cases;
  }
  EXPECT_EQ(cases, 5);
}

TEST(DemoModel, DefaultSamplingWritesAStory) {
  for (const char* seed : {"1", "2", "3"}) {
    const auto r = test::run_cli({"run", "-m", kModel, "-p", "Once upon a time,", "-n", "120", "--seed", seed, "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const Json out = Json::parse(r.out);
    expect_readable(out.at("text").as_string(), 15);
  }
}

}  // namespace
}  // namespace edgellm
