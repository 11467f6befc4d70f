// The CI-sized version of scripts/validity-run.sh: for the 12 schemas of tests/grammar/schemas/
// (increasing difficulty, up to $ref recursion), outputs sampled at temperature 1 through the
// service on stories260K, tiny-zh-poems and a one-layer synthetic model with Qwen's real
// vocabulary (synth shape tiny-qwen2-151k + shared/testdata/tokenizers/qwen3) must all finish,
// parse and validate -- checked by an independent validator, python3-jsonschema
// (scripts/validate-json-outputs.py, Draft 2020-12 with format checks), not by our code.
// The full run (1,000 outputs per schema and model) is scripts/validity-run.sh; its numbers are
// in docs/structured-output.md.
#include <gtest/gtest.h>

#include <array>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "core/json.h"
#include "grammar/grammar_compiler.h"
#include "model/model.h"
#include "service/inference_service.h"
#include "support/test_env.h"
#include "tokenizer/tokenizer.h"
#include "tools/synth/synth_model.h"

namespace edgellm {
namespace {

constexpr int kOutputsPerSchema = 1;

std::vector<std::string> schema_files() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator("tests/grammar/schemas")) {
    if (e.path().extension() == ".json") out.push_back(e.path().string());
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

void check_model(const std::string& path, const std::string& label) {
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
  for (const std::string& schema_path : schema_files()) {
    SCOPED_TRACE(schema_path);
    const auto g = compiler.json_schema(Json::parse(test::read_file(schema_path)));
    std::mutex mu;
    std::condition_variable cv;
    std::vector<RequestResult> results(kOutputsPerSchema);
    int done = 0;
    for (int i = 0; i < kOutputsPerSchema; ++i) {
      ServiceRequest r;
      r.prompt = "JSON:";
      r.sampling.temperature = 1.0f;
      r.sampling.top_k = 0;
      r.sampling.top_p = 1.0f;
      r.sampling.min_p = 0.0f;
      r.sampling.seed = 100 + static_cast<uint64_t>(i);
      r.max_tokens = 3000;
      r.deadline_ms = 0;
      r.grammar = g;
      r.on_finish = [&, i](const RequestResult& res) {
        std::lock_guard<std::mutex> lock(mu);
        results[static_cast<size_t>(i)] = res;
        ++done;
        cv.notify_all();
      };
      service->submit(std::move(r));
    }
    {
      std::unique_lock<std::mutex> lock(mu);
      ASSERT_TRUE(cv.wait_for(lock, std::chrono::minutes(10), [&] { return done == kOutputsPerSchema; }));
    }
    const std::string outputs = dir + "/" + label + "-" + std::filesystem::path(schema_path).stem().string() + ".jsonl";
    {
      std::ofstream f(outputs);
      for (size_t i = 0; i < results.size(); ++i) {
        Json rec = Json::object();
        rec.set("index", static_cast<uint64_t>(i));
        rec.set("text", results[i].text);
        rec.set("finish_reason", finish_reason_name(results[i].finish_reason));
        f << rec.dump() << "\n";
      }
    }
    const auto [vrc, verdict] = run_command("python3 scripts/validate-json-outputs.py " + schema_path + " " + outputs);
    EXPECT_EQ(vrc, 0) << verdict;
  }
}

TEST(SchemaValidity, Stories260k) { check_model(test::shared_model("stories260K.gguf"), "stories260K"); }
TEST(SchemaValidity, TinyZhPoems) { check_model(test::shared_model("tiny-zh-poems.gguf"), "tiny-zh-poems"); }
TEST(SchemaValidity, QwenVocabulary) {
  synth::SynthOptions o;
  o.shape = "tiny-qwen2-151k";
  o.type = "q8_0";
  o.tokenizer = test::shared_testdata("tokenizers/qwen3/tokenizer.json");
  o.n_threads = 2;
  const std::string path = test::temp_dir() + "/tiny-qwen2-151k.gguf";
  synth::write_synth_model(o, path);
  check_model(path, "tiny-qwen2-151k");
}

}  // namespace
}  // namespace edgellm
