// `edgellm convert` as a user runs it: exit status, the progress lines on stderr, the per-tensor
// lines (-v), the summary, and the errors. The converted file is then used by `edgellm run`.
#include <gtest/gtest.h>

#include <string>

#include "gguf/gguf_reader.h"
#include "support/cli_runner.h"
#include "support/hf_checkpoint.h"
#include "support/test_env.h"

namespace edgellm {
namespace {

using test::cli_path;
using test::run_cli;

TEST(CliConvert, ConvertsQuantizesAndRuns) {
  if (!test::file_exists(cli_path())) GTEST_SKIP() << "edgellm binary not built: " << cli_path();
  test::TinySpec s;
  s.arch = "qwen2";
  s.shards = 2;
  const auto ck = test::write_tiny_checkpoint(s, test::temp_dir() + "/cli-qwen2");
  const std::string out = test::temp_dir() + "/cli-qwen2-q8.gguf";
  const test::CliResult r =
      run_cli({"convert", ck.dir, out, "--type", "q8_0", "-v", "--threads", "2", "--name", "tiny"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("convert:   0%"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("convert: 100%"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("[  27/  27]"), std::string::npos) << r.out;  // 2 blocks x 12 + embeddings, norm, head
  EXPECT_NE(r.out.find("blk.1.attn_q.bias"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("<- model.layers.1.self_attn.q_proj.bias"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("qwen2, 27 tensors"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("type Q8_0 (general.file_type 7)"), std::string::npos) << r.out;
  const auto f = gguf::GgufFile::open(out);
  EXPECT_EQ(f->get_string("general.name"), std::optional<std::string>("tiny"));
  EXPECT_EQ(f->find_tensor("blk.0.ffn_down.weight")->type, TensorType::Q8_0);

  const test::CliResult run = run_cli({"run", "-m", out, "-p", "the", "-n", "4", "--temp", "0"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
}

TEST(CliConvert, ErrorsNameTheProblem) {
  if (!test::file_exists(cli_path())) GTEST_SKIP() << "edgellm binary not built: " << cli_path();
  const std::string out = test::temp_dir() + "/never.gguf";
  test::CliResult r = run_cli({"convert", test::temp_dir() + "/no-such-model", out});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no-such-model' is not a directory"), std::string::npos) << r.err;
  r = run_cli({"convert", test::temp_dir()});
  EXPECT_EQ(r.exit_code, 2);  // a bad command line
  EXPECT_NE(r.err.find("expected HF_DIR OUT.gguf"), std::string::npos) << r.err;
  const auto ck = test::write_tiny_checkpoint({}, test::temp_dir() + "/cli-llama");
  r = run_cli({"convert", ck.dir, out, "--type", "q2_K"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown quantization type 'q2_K'"), std::string::npos) << r.err;
  EXPECT_FALSE(test::file_exists(out));
  r = run_cli({"convert", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--type"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace edgellm
