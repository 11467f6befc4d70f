// End-to-end tests of `edgellm quantize` and `edgellm perplexity` as a user runs them: exit
// status, the per-tensor progress lines, the final totals, --json output and error messages.
// The binary is found through $EDGELLM_CLI, else next to this test executable.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/json.h"
#include "gguf/gguf_reader.h"
#include "support/cli_runner.h"
#include "support/test_env.h"

namespace edgellm {
namespace {

using RunResult = test::CliResult;
using test::cli_path;
using test::run_cli;

TEST(CliQuantize, MixedRulesOneCommand) {
  if (!test::file_exists(cli_path())) GTEST_SKIP() << "edgellm binary not built: " << cli_path();
  const std::string out = test::temp_dir() + "/mix.gguf";
  const RunResult r = run_cli({"quantize", test::shared_model("stories260K.gguf"), out, "q4_0", "--rule",
                               "attn_(q|k|v|output)=q8_0", "--rule", "ffn_.*=q4_K", "--threads", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // One line per tensor (48 in stories260K), the fallback note, totals.
  EXPECT_NE(r.out.find("[  48/  48]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("blk.0.attn_q.weight"), std::string::npos);
  EXPECT_NE(r.out.find("row width 172"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bits per weight"), std::string::npos);
  auto f = gguf::GgufFile::open(out);
  EXPECT_EQ(f->find_tensor("blk.2.attn_v.weight")->type, TensorType::Q8_0);
  EXPECT_EQ(f->find_tensor("blk.2.ffn_gate.weight")->type, TensorType::Q5_0);  // q4_K fell back (64 wide)
  EXPECT_EQ(f->find_tensor("blk.2.ffn_down.weight")->type, TensorType::F16);   // 172 wide
  EXPECT_EQ(f->get_int("general.file_type"), 2);
}

TEST(CliQuantize, ErrorsNameTheProblem) {
  if (!test::file_exists(cli_path())) GTEST_SKIP() << "edgellm binary not built: " << cli_path();
  const std::string out = test::temp_dir() + "/never.gguf";
  // A bad type or rule is a bad command line (2); a missing input, a failed run (1): docs/cli.md.
  RunResult r = run_cli({"quantize", test::shared_model("stories260K.gguf"), out, "q3_K_XL"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("q3_K_XL"), std::string::npos) << r.err;
  r = run_cli({"quantize", test::shared_model("stories260K.gguf"), out, "q8_0", "--rule", "attn(=q8_0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("attn(=q8_0"), std::string::npos) << r.err;
  r = run_cli({"quantize", test::temp_dir() + "/missing.gguf", out, "q8_0"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("missing.gguf"), std::string::npos) << r.err;
  EXPECT_FALSE(test::file_exists(out));
}

TEST(CliPerplexity, JsonAndKlRoundTrip) {
  if (!test::file_exists(cli_path())) GTEST_SKIP() << "edgellm binary not built: " << cli_path();
  const std::string model = test::shared_model("stories260K.gguf");
  const std::string base = test::temp_dir() + "/cli-base.kld";
  RunResult r = run_cli({"perplexity", "-m", model, "-f", test::shared_testdata("text/stories-eval.txt"), "-c", "256",
                         "--chunks", "4", "--kl-divergence-base", base, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j.at("n_chunk").as_int(), 4);
  EXPECT_EQ(j.at("n_scored").as_int(), 4 * 127);
  const double ppl = j.at("ppl").as_number();
  EXPECT_GT(ppl, 1.0);
  r = run_cli({"perplexity", "-m", model, "--kl-divergence", "--kl-divergence-base", base, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json k = Json::parse(r.out);
  EXPECT_NEAR(k.at("ppl").as_number(), ppl, ppl * 1e-6);
  EXPECT_LT(k.at("kld_mean").as_number(), 1e-5);
  EXPECT_DOUBLE_EQ(k.at("same_top").as_number(), 1.0);
  // Text output carries llama.cpp's final line.
  r = run_cli({"perplexity", "-m", model, "-f", test::shared_testdata("text/stories-eval.txt"), "-c", "256",
               "--chunks", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Final estimate: PPL = "), std::string::npos) << r.out;
  // Too little text for the context: a clear error.
  r = run_cli({"perplexity", "-m", model, "-f", test::shared_testdata("text/stories-eval.txt"), "-c", "65536"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("131072"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace edgellm
