// `edgellm registry` and `edgellm plan` end to end, as a user runs them: add / install / list /
// verify / use / remove, the refusals (bad digest, unknown version, not GGUF), a tampered file
// found by verify (exit 4), and plan over the registry in text and JSON.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "core/json.h"
#include "support/cli_runner.h"
#include "support/test_env.h"

namespace edgellm {
namespace {

using test::run_cli;

TEST(CliRegistry, BenchWritesMeasuredSpeedsThatPlanUses) {
  const std::string reg = test::temp_dir() + "/cli-reg-bench";
  const std::string stories = test::shared_model("stories260K.gguf");
  auto r = run_cli({"registry", "add", stories, "--name", "tiny", "--version", "1", "--registry", reg, "--bench"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("measured tiny@1 on"), std::string::npos) << r.out;
  const Json m = Json::parse(test::read_file(reg + "/manifests/tiny@1.json"));
  const double pp = m.at("prefill_tokens_per_second").as_number();
  const double tg = m.at("decode_tokens_per_second").as_number();
  EXPECT_GT(pp, 0);
  EXPECT_GT(tg, 0);
  EXPECT_EQ(m.at("sha256").as_string(), "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d");

  // The plan shows them with the time estimate, in text and JSON.
  r = run_cli({"plan", "--registry", reg, "--device", "phone-4gb", "--estimate-prompt", "100", "--estimate-answer", "10"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("measured here: prefill"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("100-token prompt"), std::string::npos) << r.out;
  r = run_cli({"plan", "--registry", reg, "--device", "phone-4gb", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json plan = Json::parse(r.out);
  const Json& measured = plan.at("choice").at("measured");
  EXPECT_EQ(measured.at("decode_tokens_per_second").as_number(), tg);
  EXPECT_NEAR(measured.at("estimate_prefill_seconds").as_number(), 512 / pp, 1e-9);
  // A floor above the measured decode speed: nothing is chosen, and the plan says why.
  r = run_cli({"plan", "--registry", reg, "--device", "phone-4gb", "--min-decode-tps", "1e9"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("below the"), std::string::npos) << r.out;

  // Re-measuring an installed model rewrites only the speeds.
  r = run_cli({"registry", "bench", "tiny", "--registry", reg, "--pp", "32", "--tg", "8", "-t", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("on 1 threads"), std::string::npos) << r.out;
  const Json m2 = Json::parse(test::read_file(reg + "/manifests/tiny@1.json"));
  EXPECT_GT(m2.at("decode_tokens_per_second").as_number(), 0);
  EXPECT_EQ(m2.at("sha256").as_string(), m.at("sha256").as_string());
  r = run_cli({"registry", "bench", "nope", "--registry", reg});
  EXPECT_EQ(r.exit_code, 2);  // a name that is not installed: the command line is wrong
}

TEST(CliRegistry, AddInstallListVerifyUseRemove) {
  const std::string reg = test::temp_dir() + "/cli-reg";
  const std::string stories = test::shared_model("stories260K.gguf");
  const std::string zh = test::shared_model("tiny-zh-poems.gguf");
  auto r = run_cli({"registry", "add", stories, "--name", "tiny", "--version", "1", "--registry", reg});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("installed tiny@1"), std::string::npos);
  r = run_cli({"registry", "install", zh, "--name", "tiny", "--version", "2", "--registry", reg, "--sha256",
               "fecdd45e2bd727a1c22e3ae5fea6ccbb50715ae50685408343fdad4a2d29ca9f"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // A wrong digest is refused and the current version stays.
  r = run_cli({"registry", "install", stories, "--name", "tiny", "--version", "3", "--registry", reg, "--sha256",
               std::string(64, '0')});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("SHA-256 mismatch"), std::string::npos) << r.err;
  r = run_cli({"registry", "install", stories, "--name", "tiny", "--version", "3", "--registry", reg});
  EXPECT_EQ(r.exit_code, 2) << "install without --sha256 must be refused";

  r = run_cli({"registry", "list", "--json", "--registry", reg});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json list = Json::parse(r.out);
  ASSERT_EQ(list.at("models").size(), 2u);
  EXPECT_FALSE(list.at("models").at(0).at("current").as_bool());
  EXPECT_TRUE(list.at("models").at(1).at("current").as_bool());
  EXPECT_EQ(list.at("models").at(1).at("sha256").as_string(),
            "fecdd45e2bd727a1c22e3ae5fea6ccbb50715ae50685408343fdad4a2d29ca9f");

  r = run_cli({"registry", "verify", "--registry", reg});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // Tamper with version 1's file: verify fails with exit 4 and names it.
  {
    std::fstream f(reg + "/models/tiny@1.gguf", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(1000);
    f.put('\x7f');
  }
  r = run_cli({"registry", "verify", "tiny@1", "--registry", reg});
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_NE(r.out.find("FAIL tiny@1"), std::string::npos) << r.out;

  r = run_cli({"registry", "use", "tiny@1", "--registry", reg});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = run_cli({"registry", "use", "tiny@9", "--registry", reg});
  EXPECT_EQ(r.exit_code, 2);
  // tiny@1 is current: removing it needs --force, which says what is current now.
  r = run_cli({"registry", "remove", "tiny@1", "--registry", reg, "--force"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("tiny@2 is now the current version of tiny"), std::string::npos) << r.out;
}

// `edgellm serve --registry DIR -m NAME` serves the registry's verified file or refuses to start.
TEST(CliRegistry, ServeRefusesWhatTheRegistryDoesNotVouchFor) {
  const std::string reg = test::temp_dir() + "/serve-reg";
  ASSERT_EQ(run_cli({"registry", "add", test::shared_model("stories260K.gguf"), "--name", "s", "--version", "1",
                     "--registry", reg}).exit_code, 0);
  auto r = run_cli({"serve", "--registry", reg, "-m", "nothing", "--port", "1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("is not installed"), std::string::npos) << r.err;
  {
    std::fstream f(reg + "/models/s@1.gguf", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(3000);
    f.put('\x42');
  }
  r = run_cli({"serve", "--registry", reg, "-m", "s", "--port", "1"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("failed verification"), std::string::npos) << r.err;
}

TEST(CliPlan, TiersAndJson) {
  const std::string reg = test::temp_dir() + "/plan-reg";
  ASSERT_EQ(run_cli({"registry", "add", test::shared_model("stories260K.gguf"), "--name", "s", "--version", "1",
                     "--registry", reg}).exit_code, 0);
  ASSERT_EQ(run_cli({"registry", "add", test::shared_model("tiny-zh-poems.gguf"), "--name", "z", "--version", "1",
                     "--registry", reg}).exit_code, 0);
  auto r = run_cli({"plan", "--registry", reg, "--all-tiers"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* tier : {"phone-4gb", "phone-8gb", "phone-12gb", "phone-16gb"}) {
    EXPECT_NE(r.out.find(std::string("device ") + tier), std::string::npos) << tier;
  }
  EXPECT_NE(r.out.find("=> CHOSEN z@1"), std::string::npos) << r.out;
  r = run_cli({"plan", "--registry", reg, "--device", "phone-8gb", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json plan = Json::parse(r.out);
  EXPECT_EQ(plan.at("choice").at("model").as_string(), "z@1");
  const Json& mem = plan.at("choice").at("memory");
  EXPECT_EQ(mem.at("total_bytes").as_number(),
            mem.at("weights_touched_bytes").as_number() + mem.at("kv_bytes").as_number() +
                mem.at("scratch_bytes").as_number() + mem.at("logits_bytes").as_number() +
                mem.at("tokenizer_bytes").as_number() + mem.at("runtime_bytes").as_number());
  EXPECT_LE(mem.at("total_bytes").as_number(), plan.at("budget_bytes").as_number());
  // A device profile file, and one too small for anything: exit 3 with the arithmetic.
  const std::string dev = test::temp_dir() + "/tiny-device.json";
  std::ofstream(dev) << R"({"name": "watch", "ram_total_mib": 64, "app_limit_mib": 4, "clusters": [{"cores": 2}]})";
  r = run_cli({"plan", "--registry", reg, "--device", dev});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.out.find("no candidate fits"), std::string::npos) << r.out;
  r = run_cli({"plan", "--device", "phone-3gb", test::shared_model("stories260K.gguf")});
  EXPECT_EQ(r.exit_code, 2);  // no such device: the command line is wrong
}

}  // namespace
}  // namespace edgellm
