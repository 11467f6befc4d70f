// End-to-end tests of `edgellm run`: the built binary is run as a user would run it and its
// stdout / stderr / exit status / files are checked against the reference continuations.
// The binary is found through $EDGELLM_CLI, else next to this test executable (CMake puts every
// executable in the build directory's root).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "core/json.h"
#include "support/cli_runner.h"
#include "support/test_env.h"

namespace edgellm {
namespace {

using RunResult = test::CliResult;
using test::cli_path;
using test::run_cli;

struct Reference {
  std::string prompt;
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> output_ids;
  std::string output_text;
};

Reference first_reference() {
  const std::string all = test::read_file(test::shared_testdata("reference/stories260K-greedy.jsonl"));
  const Json j = Json::parse(std::string_view(all).substr(0, all.find('\n')));
  Reference r;
  r.prompt = j.at("prompt").as_string();
  for (const auto& v : j.at("prompt_ids").as_array()) r.prompt_ids.push_back(static_cast<int32_t>(v.as_int()));
  for (const auto& v : j.at("output_ids").as_array()) r.output_ids.push_back(static_cast<int32_t>(v.as_int()));
  r.output_text = j.at("output_text").as_string();
  return r;
}

std::string join_ids(const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) s += ',';
    s += std::to_string(ids[i]);
  }
  return s;
}

std::vector<int32_t> split_ids(const std::string& line) {
  std::vector<int32_t> ids;
  std::istringstream in(line);
  for (int32_t id; in >> id;) ids.push_back(id);
  return ids;
}

std::vector<int32_t> json_ids(const Json& a) {
  std::vector<int32_t> ids;
  for (const auto& v : a.as_array()) ids.push_back(static_cast<int32_t>(v.as_int()));
  return ids;
}

class CliRun : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(test::file_exists(cli_path())) << "edgellm binary not found at " << cli_path()
                                               << " (build the edgellm_cli target or set EDGELLM_CLI)";
  }
  const std::string model_ = test::shared_model("stories260K.gguf");
  const Reference ref_ = first_reference();
};

// F32 KV cache: the reference engine ran in F32, and a tiny model's greedy path can flip on the
// rounding of an F16 cache. One thread keeps the test fast on a loaded machine.
TEST_F(CliRun, GreedyIdsMatchTheReference) {
  const RunResult r = run_cli({"run", "-m", model_, "--prompt-ids", join_ids(ref_.prompt_ids), "-n", "200",
                               "--temp", "0", "--ids", "--kv-type", "f32", "-t", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_FALSE(r.out.empty());
  EXPECT_EQ(r.out.back(), '\n');
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "ids must be on one line";
  EXPECT_EQ(split_ids(r.out), ref_.output_ids);
}

TEST_F(CliRun, TextPromptStreamsTheReferenceText) {
  const RunResult r = run_cli({"run", "-m", model_, "-p", ref_.prompt, "-n", "200", "--temp", "0", "--kv-type", "f32",
                               "-t", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, ref_.output_text);  // stdout is not a terminal: no newline is added
  EXPECT_EQ(r.err, "");
}

TEST_F(CliRun, PromptFromAFile) {
  const std::string path = test::temp_dir() + "/prompt.txt";
  {
    FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(ref_.prompt.data(), 1, ref_.prompt.size(), f);
    std::fclose(f);
  }
  const RunResult r = run_cli({"run", "-m", model_, "-f", path, "-n", "20", "--temp", "0", "--ids", "--kv-type",
                               "f32", "-t", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(split_ids(r.out), std::vector<int32_t>(ref_.output_ids.begin(), ref_.output_ids.begin() + 20));
}

TEST_F(CliRun, JsonRecordHasEveryField) {
  const RunResult r = run_cli({"run", "-m", model_, "-p", ref_.prompt, "-n", "50", "--temp", "0", "--json",
                               "--kv-type", "f32", "-t", "1", "--seed", "7"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << "exactly one JSON line on stdout";
  const Json j = Json::parse(r.out);
  EXPECT_EQ(json_ids(j.at("prompt_ids")), ref_.prompt_ids);
  EXPECT_EQ(json_ids(j.at("ids")), std::vector<int32_t>(ref_.output_ids.begin(), ref_.output_ids.begin() + 50));
  EXPECT_EQ(j.at("text").as_string(), ref_.output_text.substr(0, j.at("text").as_string().size()));
  EXPECT_FALSE(j.at("text").as_string().empty());
  EXPECT_EQ(j.at("finish_reason").as_string(), "length");
  EXPECT_TRUE(j.at("stop").is_null());
  EXPECT_TRUE(j.at("eog_token").is_null());
  EXPECT_TRUE(j.at("error").is_null());
  EXPECT_EQ(j.at("seed").as_int(), 7);
  EXPECT_EQ(j.at("n_vocab").as_int(), 512);
  const Json& t = j.at("timings");
  for (const char* k : {"load_s", "prefill_s", "prefill_tok_per_s", "ttft_s", "decode_s", "decode_tok_per_s"}) {
    EXPECT_GE(t.at(k).as_number(), 0.0) << k;
  }
  EXPECT_EQ(t.at("prompt_tokens").as_int(), static_cast<int64_t>(ref_.prompt_ids.size()));
  EXPECT_EQ(t.at("decode_tokens").as_int(), 49);
  EXPECT_GT(j.at("memory").at("peak_rss_bytes").as_int(), 0);
  EXPECT_GT(j.at("memory").at("weight_bytes").as_int(), 0);
}

// --context-shift --keep N: generation goes past -c 128 (several shifts, reported in the JSON);
// up to the context's end it is the run without the flag; a --keep that leaves no window fails.
TEST_F(CliRun, ContextShiftGoesPastTheContext) {
  const std::vector<std::string> base = {"run", "-m", model_, "-p", ref_.prompt, "--temp", "0", "--json", "-c", "128",
                                         "--ignore-eos", "-t", "1"};
  std::vector<std::string> plain = base;
  plain.insert(plain.end(), {"-n", "-1"});
  const RunResult a = run_cli(plain);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  const Json ja = Json::parse(a.out);
  EXPECT_EQ(ja.at("context_shifts").as_int(), 0);
  const std::vector<int32_t> until_full = json_ids(ja.at("ids"));
  std::vector<std::string> endless = base;
  endless.insert(endless.end(), {"-n", "600", "--context-shift", "--keep", "4"});
  const RunResult b = run_cli(endless);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const Json jb = Json::parse(b.out);
  EXPECT_EQ(jb.at("finish_reason").as_string(), "length");
  const std::vector<int32_t> ids = json_ids(jb.at("ids"));
  ASSERT_EQ(ids.size(), 600u);
  EXPECT_GE(jb.at("context_shifts").as_int(), 8);
  EXPECT_TRUE(std::equal(until_full.begin(), until_full.end(), ids.begin()));
  std::vector<std::string> bad = base;
  bad.insert(bad.end(), {"--context-shift", "--keep", "127"});
  const RunResult c = run_cli(bad);
  EXPECT_EQ(c.exit_code, 2);  // an option value that cannot work: a bad command line
  EXPECT_NE(c.err.find("context shift keeps 127"), std::string::npos) << c.err;
}

TEST_F(CliRun, StopStringEndsTheTextBeforeIt) {
  const RunResult r = run_cli({"run", "-m", model_, "-p", ref_.prompt, "-n", "200", "--temp", "0", "--json",
                               "--kv-type", "f32", "-t", "1", "--stop", "never", "--stop", "med Li"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j.at("finish_reason").as_string(), "stop");
  EXPECT_EQ(j.at("stop").as_string(), "med Li");
  EXPECT_EQ(j.at("text").as_string(), ref_.output_text.substr(0, ref_.output_text.find("med Li")));
}

TEST_F(CliRun, DumpLogitsHasOneRowPerStepWhoseArgmaxIsTheToken) {
  const std::string path = test::temp_dir() + "/logits.bin";
  const int n_steps = 40;
  const RunResult r = run_cli({"run", "-m", model_, "--prompt-ids", join_ids(ref_.prompt_ids), "-n",
                               std::to_string(n_steps), "--temp", "0", "--ids", "--kv-type", "f32", "-t", "1",
                               "--dump-logits", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<int32_t> ids = split_ids(r.out);
  ASSERT_EQ(ids.size(), static_cast<size_t>(n_steps));
  const std::string bytes = test::read_file(path);
  const size_t n_vocab = 512;
  ASSERT_EQ(bytes.size(), static_cast<size_t>(n_steps) * n_vocab * sizeof(float));
  for (int s = 0; s < n_steps; ++s) {
    std::vector<float> row(n_vocab);
    // The file is little-endian; so is every platform this test runs on (x86-64, arm64).
    std::memcpy(row.data(), bytes.data() + static_cast<size_t>(s) * n_vocab * sizeof(float), n_vocab * sizeof(float));
    const int32_t argmax = static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
    EXPECT_EQ(argmax, ids[static_cast<size_t>(s)]) << "step " << s;
  }
}

TEST_F(CliRun, SameSeedSameTextDifferentSeedDifferentText) {
  auto sample = [&](const std::string& seed) {
    const RunResult r = run_cli({"run", "-m", model_, "-p", ref_.prompt, "-n", "60", "--seed", seed, "--temp", "1.0",
                                 "--ids", "-t", "1", "--ignore-eos"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  };
  const std::string a = sample("11");
  EXPECT_EQ(a, sample("11"));
  EXPECT_NE(a, sample("12"));
}

TEST_F(CliRun, StatsGoToStderr) {
  const RunResult r = run_cli({"run", "-m", model_, "-p", ref_.prompt, "-n", "10", "--temp", "0", "--stats", "-t", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* k : {"load:", "prompt:", "first token:", "decode:", "peak RSS:", "tok/s"}) {
    EXPECT_NE(r.err.find(k), std::string::npos) << k << " missing from:\n" << r.err;
  }
  EXPECT_EQ(r.out.find("tok/s"), std::string::npos);
}

// --spec ngram / draft (-md, --draft-max): the reference ids greedy, plain sampling's ids at a
// seed, the stats line and the JSON record's counters; the option errors exit 2 before a model
// loads, naming the option (a draft model with another vocabulary: after both load, naming the
// file).
TEST_F(CliRun, SpeculationGivesThePlainOutputAndItsStats) {
  const std::string prompt_ids = join_ids(ref_.prompt_ids);
  for (const std::vector<std::string>& spec : {std::vector<std::string>{"--spec", "ngram", "--draft-max", "3"},
                                               std::vector<std::string>{"-md", model_, "--draft-max", "4"}}) {
    std::vector<std::string> a = {"run", "-m", model_, "--prompt-ids", prompt_ids, "-n", "60", "--temp", "0",
                                  "--ids", "--kv-type", "f32", "-t", "1", "--stats"};
    a.insert(a.end(), spec.begin(), spec.end());
    const RunResult r = run_cli(a);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(split_ids(r.out), std::vector<int32_t>(ref_.output_ids.begin(), ref_.output_ids.begin() + 60)) << spec[0];
    EXPECT_NE(r.err.find("speculation:"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("tokens per forward"), std::string::npos) << r.err;
  }
  auto sampled = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> a = {"run", "-m", model_, "-p", ref_.prompt, "-n", "60", "--seed", "5", "--temp", "0.9",
                                  "-t", "1", "--json"};
    a.insert(a.end(), extra.begin(), extra.end());
    const RunResult r = run_cli(a);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return Json::parse(r.out);
  };
  const Json plain = sampled({});
  EXPECT_EQ(plain.at("timings").find("speculation"), nullptr);
  const Json spec = sampled({"-md", model_, "--spec", "draft"});
  EXPECT_EQ(json_ids(spec.at("ids")), json_ids(plain.at("ids")));
  const Json& st = spec.at("timings").at("speculation");
  EXPECT_EQ(st.at("mode").as_string(), "draft");
  EXPECT_EQ(st.at("draft_max").as_int(), 8);
  EXPECT_GT(st.at("drafted").as_int(), 0);
  EXPECT_LE(st.at("accepted").as_int(), st.at("drafted").as_int());
  EXPECT_GT(st.at("tokens_per_forward").as_number(), 1.0);

  const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
      {{"--spec", "draft"}, "--spec draft needs a draft model"},
      {{"--spec", "medusa"}, "--spec: unknown mode 'medusa'"},
      {{"--spec", "ngram", "-md", model_}, "-md/--model-draft applies to --spec draft"},
      {{"--draft-max", "0"}, "--draft-max"},
      {{"-md", test::shared_model("tiny-zh-poems.gguf")}, "the draft model must use the same tokenizer"},
      {{"-md", "/no/such/draft.gguf"}, "/no/such/draft.gguf"},
  };
  for (const auto& [extra, fragment] : bad) {
    std::vector<std::string> a = {"run", "-m", model_, "-p", "x", "-n", "2"};
    a.insert(a.end(), extra.begin(), extra.end());
    const RunResult r = run_cli(a);
    EXPECT_EQ(r.exit_code, fragment == "/no/such/draft.gguf" ? 1 : 2) << fragment << ": " << r.err;
    EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
  }
}

// --parallel serves every line of the file through the service at once; each prompt's text is
// the one a plain `run` of it alone prints (greedy, F32 KV).
TEST_F(CliRun, ParallelPromptsMatchTheirSoloRuns) {
  const std::vector<std::string> prompts = {"Once upon a time", "The little dog", "Lily went to the park",
                                            "Tom and his friend", "A bird"};
  std::string file_text;
  for (const auto& p : prompts) file_text += p + "\n";
  const std::string path = test::temp_dir() + "/parallel-prompts.txt";
  {
    FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(file_text.data(), 1, file_text.size(), f);
    std::fclose(f);
  }
  const RunResult r = run_cli({"run", "-m", model_, "-f", path, "--parallel", "3", "-n", "40", "--temp", "0",
                               "--kv-type", "f32", "--json", "--step-tokens", "8"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<Json> lines;
  size_t start = 0;
  while (start < r.out.size()) {
    const size_t end = r.out.find('\n', start);
    lines.push_back(Json::parse(std::string_view(r.out).substr(start, end - start)));
    start = end + 1;
  }
  ASSERT_EQ(lines.size(), prompts.size() + 1);  // one per prompt + the summary
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(lines[i].at("index").as_int(), static_cast<int64_t>(i));
    const RunResult solo = run_cli({"run", "-m", model_, "-p", prompts[i], "-n", "40", "--temp", "0", "--kv-type", "f32",
                                    "--json"});
    ASSERT_EQ(solo.exit_code, 0) << solo.err;
    EXPECT_EQ(lines[i].at("text").as_string(), Json::parse(solo.out).at("text").as_string()) << "prompt " << i;
    EXPECT_EQ(lines[i].at("stats").at("completion_tokens").as_int(), 40);
  }
  const Json& sum = lines.back().at("summary");
  EXPECT_EQ(sum.at("prompts").as_int(), 5);
  EXPECT_EQ(sum.at("completion_tokens").as_int(), 200);
  EXPECT_GT(sum.at("mean_batch").as_number(), 1.0);  // several sequences per forward pass
  // Speculation through the service gives every prompt the same text: n-gram drafts, and the
  // model drafting for itself (-md: one draft context per sequence; every draft kept).
  for (const std::vector<std::string>& spec : {std::vector<std::string>{"--spec", "ngram", "--draft-max", "4"},
                                               std::vector<std::string>{"-md", model_, "--draft-max", "4"}}) {
    std::vector<std::string> args = {"run", "-m", model_, "-f", path, "--parallel", "3", "-n", "40", "--temp", "0",
                                     "--kv-type", "f32", "--json", "--step-tokens", "8"};
    args.insert(args.end(), spec.begin(), spec.end());
    const RunResult sr = run_cli(args);
    ASSERT_EQ(sr.exit_code, 0) << spec[0] << ": " << sr.err;
    std::vector<Json> slines;
    for (size_t b = 0; b < sr.out.size();) {
      const size_t e = sr.out.find('\n', b);
      slines.push_back(Json::parse(std::string_view(sr.out).substr(b, e - b)));
      b = e + 1;
    }
    ASSERT_EQ(slines.size(), prompts.size() + 1) << spec[0];
    for (size_t i = 0; i < prompts.size(); ++i) {
      EXPECT_EQ(slines[i].at("text").as_string(), lines[i].at("text").as_string()) << spec[0] << " prompt " << i;
      EXPECT_TRUE(slines[i].at("speculation").is_object()) << spec[0];
    }
    const Json& st = slines.back().at("summary").at("speculation");
    EXPECT_LE(st.at("accepted").as_int(), st.at("drafted").as_int()) << spec[0];
    if (spec[0] == "-md") {
      EXPECT_GT(st.at("drafted").as_int(), 0);
      EXPECT_EQ(st.at("accepted").as_int(), st.at("drafted").as_int());  // it drafts for itself
      EXPECT_GT(st.at("tokens_per_forward").as_number(), 1.5);
    }
  }
  // Without -f the flag is refused with a message.
  const RunResult bad = run_cli({"run", "-m", model_, "-p", "hi", "--parallel", "2"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("-f FILE"), std::string::npos) << bad.err;
}

TEST_F(CliRun, BadInputFailsCleanly) {
  struct Case {
    std::vector<std::string> args;
    std::string expected_in_stderr;
    int exit_code;  // docs/cli.md: 1 the work failed (files, models, context), 2 a bad command line
  };
  const std::string missing = test::temp_dir() + "/missing.gguf";
  const std::vector<Case> cases = {
      {{"run", "-m", missing, "-p", "hi"}, missing, 1},
      {{"run", "-m", model_, "-f", test::temp_dir() + "/missing.txt"}, "missing.txt", 1},
      {{"run", "-m", model_, "-p", "hi", "--temp", "warm"}, "--temp", 2},
      {{"run", "-m", model_, "-p", "hi", "--top-p", "1.5"}, "--top-p", 2},
      {{"run", "-m", model_, "-p", "hi", "-n"}, "-n", 2},
      {{"run", "-m", model_, "-p", "hi", "--no-such-option"}, "--no-such-option", 2},
      {{"run", "-m", model_}, "prompt", 2},
      {{"run", "-p", "hi"}, "model", 2},
      {{"run", "-m", model_, "-p", "hi", "--kv-type", "q4_1"}, "--kv-type", 2},
      {{"run", "-m", model_, "-p", "hi", "--cache-type-v", "q5_0"}, "--kv-type-v: 'q5_0'", 2},
      // stories260K's heads are 8 wide: no whole 32-value Q4_0 block.
      {{"run", "-m", model_, "-p", "hi", "-ctk", "q4_0"}, "q4_0 needs head_dim a multiple of 32", 1},
      {{"run", "-m", model_, "--prompt-ids", "1,x"}, "--prompt-ids", 2},
      {{"run", "-m", model_, "--prompt-ids", "1,100000"}, "100000", 2},
      {{"run", "-m", model_, "-p", "hi", "--dump-logits", test::temp_dir() + "/no/such/dir/x.bin"}, "--dump-logits", 1},
      {{"run", "-m", model_, "--prompt-ids", join_ids(std::vector<int32_t>(40, 1)), "-c", "16"}, "context", 1},
      {{"run", "-m", test::shared_testdata("vocab/ggml-vocab-llama-spm.gguf.inp"), "-p", "hi"}, "GGUF", 1},
  };
  for (const auto& c : cases) {
    std::string joined;
    for (const auto& a : c.args) joined += a + " ";
    const RunResult r = run_cli(c.args);
    EXPECT_EQ(r.exit_code, c.exit_code) << joined << "\n" << r.err;  // not a crash (-1), not success
    EXPECT_NE(r.err.find(c.expected_in_stderr), std::string::npos) << joined << "\nstderr: " << r.err;
    EXPECT_EQ(r.out, "") << joined;
  }
}

TEST_F(CliRun, EndOfTextFinishesWithStop) {
  // tiny-zh-poems' first reference continuation ends on EOS after fewer than 100 tokens.
  const std::string all = test::read_file(test::shared_testdata("reference/tiny-zh-poems-greedy.jsonl"));
  const Json ref = Json::parse(std::string_view(all).substr(0, all.find('\n')));
  const std::vector<int32_t> expected = json_ids(ref.at("output_ids"));
  ASSERT_LT(expected.size(), 100u);
  const RunResult r = run_cli({"run", "-m", test::shared_model("tiny-zh-poems.gguf"), "--prompt-ids",
                               join_ids(json_ids(ref.at("prompt_ids"))), "-n", "100", "--temp", "0", "--json",
                               "--kv-type", "f32", "-t", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(json_ids(j.at("ids")), expected);
  EXPECT_EQ(j.at("text").as_string(), ref.at("output_text").as_string());
  EXPECT_EQ(j.at("finish_reason").as_string(), "stop");
  EXPECT_TRUE(j.at("stop").is_null());
  EXPECT_FALSE(j.at("eog_token").is_null());
}

TEST_F(CliRun, HelpListsTheOptions) {
  const RunResult r = run_cli({"run", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* k : {"--max-tokens", "--temp", "--top-k", "--top-p", "--min-p", "--repeat-penalty", "--seed",
                        "--stop", "--kv-type", "--ids", "--stats", "--json", "--dump-logits", "--prompt-ids"}) {
    EXPECT_NE(r.out.find(k), std::string::npos) << k;
  }
}

}  // namespace
}  // namespace edgellm
