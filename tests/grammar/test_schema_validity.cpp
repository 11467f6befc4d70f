// The CI-sized version of scripts/validity-run.sh: for the 12 schemas of tests/grammar/schemas/
// (increasing difficulty, up to $ref recursion), outputs sampled at temperature 1 through the
// service on stories260K, tiny-zh-poems and a one-layer synthetic model with Qwen's real
// vocabulary (synth shape tiny-qwen2-151k + shared/testdata/tokenizers/qwen3) must all finish,
// parse and validate -- checked by an independent validator, python3-jsonschema
// (scripts/validate-json-outputs.py, Draft 2020-12 with format checks), not by our code.
// The full run (1,000 outputs per schema and model) is scripts/validity-run.sh; its numbers are
// in docs/structured-output.md. Where it runs (docs/testing.md): whole in the plain build; under
// a sanitizer stories260K takes all 12 schemas (every path of the schema compiler and matcher)
// and the other two vocabularies four (kSanitizedSchemas: enum literals, free strings with
// multi-byte characters, oneOf over types, $ref recursion), since their schema compiles over
// 151,669 tokens were most of the ASan run.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "grammar/grammar_compiler.h"
#include "model/model.h"
#include "service/inference_service.h"
#include "support/sanitizer.h"
#include "support/test_env.h"
#include "tokenizer/tokenizer.h"
#include "tools/synth/synth_model.h"

namespace edgellm {
namespace {

constexpr int kOutputsPerSchema = 1;

// The schemas the tiny-zh-poems and Qwen-vocabulary cases take under a sanitizer.
constexpr std::array<std::string_view, 4> kSanitizedSchemas = {"02-intent-enum", "03-person-strings", "08-oneof-types",
                                                               "12-recursive-tree"};

std::vector<std::string> schema_files(bool all) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator("tests/grammar/schemas")) {
    if (e.path().extension() != ".json") continue;
    if (all || std::find(kSanitizedSchemas.begin(), kSanitizedSchemas.end(), e.path().stem().string()) !=
                   kSanitizedSchemas.end()) {
      out.push_back(e.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::pair<int, std::string> run_command(const std::string& cmd) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return {-1, "popen failed"};
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), static_cast<int>(buf.size()), p) != nullptr) out += buf.data();
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// Samples kOutputsPerSchema outputs for every schema on one model (all requests queued at once;
// each is seeded, so batching does not change what it samples), then judges them all in one
// validator run: starting Python and importing jsonschema costs ~0.5 s of CPU, more than the
// generation of a schema's output here (39 runs were most of this test's time).
void check_model(const std::string& path, const std::string& label, bool all_schemas) {
  SCOPED_TRACE(label);
  const auto [rc, out] = run_command("python3 -c 'import jsonschema'");
  ASSERT_EQ(rc, 0) << "python3-jsonschema is needed (scripts/install-deps.sh installs it): " << out;
  ServiceParams params;
  params.context.n_ctx = 4096;
  params.context.n_seq_max = 4;
  params.max_queued = 64;
  std::unique_ptr<InferenceService> service = InferenceService::open(path, params);
  grammar::GrammarCompiler compiler(grammar::TokenVocabulary::from_tokenizer(service->tokenizer()));
  const std::string dir = test::temp_dir();
  const std::vector<std::string> schemas = schema_files(all_schemas);
  ASSERT_EQ(schemas.size(), all_schemas ? 12u : kSanitizedSchemas.size());
  const int n = static_cast<int>(schemas.size()) * kOutputsPerSchema;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<RequestResult> results(static_cast<size_t>(n));  // [schema][output]
  int done = 0;
  for (size_t s = 0; s < schemas.size(); ++s) {
    const auto g = compiler.json_schema(Json::parse(test::read_file(schemas[s])));
    for (int i = 0; i < kOutputsPerSchema; ++i) {
      ServiceRequest r;
      r.prompt = "JSON:";
      r.sampling.temperature = 1.0f;
      r.sampling.top_k = 0;
      r.sampling.top_p = 1.0f;
      r.sampling.min_p = 0.0f;
      r.sampling.seed = 100 + static_cast<uint64_t>(i);
      r.generation.max_tokens = 3000;
      r.deadline_ms = 0;
      r.generation.grammar = g;
      const size_t slot = s * kOutputsPerSchema + static_cast<size_t>(i);
      r.on_finish = [&, slot](const RequestResult& res) {
        std::lock_guard<std::mutex> lock(mu);
        results[slot] = res;
        ++done;
        cv.notify_all();
      };
      service->submit(std::move(r));
    }
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::minutes(10), [&] { return done == n; }));
  }
  std::string pairs;  // "SCHEMA OUTPUTS" for each schema
  for (size_t s = 0; s < schemas.size(); ++s) {
    const std::string outputs = dir + "/" + label + "-" + std::filesystem::path(schemas[s]).stem().string() + ".jsonl";
    std::ofstream f(outputs);
    for (int i = 0; i < kOutputsPerSchema; ++i) {
      const RequestResult& res = results[s * kOutputsPerSchema + static_cast<size_t>(i)];
      Json rec = Json::object();
      rec.set("index", static_cast<uint64_t>(i));
      rec.set("text", res.text);
      rec.set("finish_reason", finish_reason_name(res.finish_reason));
      f << rec.dump() << "\n";
    }
    pairs += " " + schemas[s] + " " + outputs;
  }
  // One report line per schema; exit status 0 only when every output of every schema validates.
  const auto [vrc, verdict] = run_command("python3 scripts/validate-json-outputs.py" + pairs);
  EXPECT_EQ(vrc, 0) << verdict;
}

TEST(SchemaValidity, Stories260k) { check_model(test::shared_model("stories260K.gguf"), "stories260K", true); }
TEST(SchemaValidity, TinyZhPoems) { check_model(test::shared_model("tiny-zh-poems.gguf"), "tiny-zh-poems", !test::kSanitized); }
TEST(SchemaValidity, QwenVocabulary) {
  synth::SynthOptions o;
  o.shape = "tiny-qwen2-151k";
  o.type = "q8_0";
  o.tokenizer = test::shared_testdata("tokenizers/qwen3/tokenizer.json");
  o.n_threads = 2;
  const std::string path = test::temp_dir() + "/tiny-qwen2-151k.gguf";
  synth::write_synth_model(o, path);
  check_model(path, "tiny-qwen2-151k", !test::kSanitized);
}

}  // namespace
}  // namespace edgellm
