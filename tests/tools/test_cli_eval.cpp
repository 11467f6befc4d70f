// `edgellm eval` end to end as a user runs it: tiny-zh-poems quantized to Q4_0 against its F32
// original on a task set built here from shared/testdata/text/zh-eval.txt (title -> first line,
// first line -> second line, ROUGE; plus BLEU, QA and accuracy cases), the report files, the
// same outputs with 1 and 3 sequences per batch and equal to `edgellm run --temp 0`, scores
// recorded in the registry, and the refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/sha256.h"
#include "model/model.h"
#include "support/label_logprob.h"
#include "tokenizer/tokenizer.h"
#include "support/cli_runner.h"
#include "support/test_env.h"

namespace edgellm {
namespace {

using test::run_cli;

struct Poem {
  std::string title, author;
  std::vector<std::string> lines;
};

// Documents of zh-eval.txt (separated by lines "%") whose attribution line reads
// "-- AUTHOR《TITLE》", with their non-empty lines before it.
std::vector<Poem> poems() {
  std::istringstream in(test::read_file(test::shared_testdata("text/zh-eval.txt")));
  std::vector<Poem> out;
  std::vector<std::string> doc;
  for (std::string line; std::getline(in, line);) {
    if (line == "%") {
      doc.clear();
      continue;
    }
    const size_t dash = line.find("-- ");
    const size_t open = line.find("《"), close = line.find("》");
    if (dash != std::string::npos && line.find_first_not_of(' ') == dash && open != std::string::npos &&
        close != std::string::npos && close > open) {
      Poem p;
      p.author = line.substr(dash + 3, open - dash - 3);
      p.title = line.substr(open + 3, close - open - 3);
      for (const auto& l : doc) {
        if (!l.empty()) p.lines.push_back(l);
      }
      if (!p.author.empty() && p.author.find(' ') == std::string::npos && !p.lines.empty()) out.push_back(p);
      continue;
    }
    doc.push_back(line);
  }
  return out;
}

Json task(const std::string& id, const std::string& prompt, const std::string& reference, const char* metric) {
  Json j = Json::object();
  j.set("id", id);
  j.set("prompt", prompt);
  j.set("reference", reference);
  j.set("metric", metric);
  return j;
}

// The task file, written at run time (nothing of shared/ is committed).
std::string write_tasks(const std::string& path) {
  std::string text;
  int n = 0;
  for (const Poem& p : poems()) {
    const std::string head = "《" + p.title + "》\n作者：" + p.author + "\n";
    Json t = task("title-" + std::to_string(n), head, p.lines[0], "rouge");
    Json stop = Json::array();
    stop.push_back("\n");
    t.set("stop", stop);
    text += t.dump() + "\n";
    if (p.lines.size() > 1) {
      Json c = task("next-" + std::to_string(n), head + p.lines[0] + "\n", p.lines[1], "rouge");
      c.set("stop", stop);
      text += c.dump() + "\n";
    }
    if (++n == 6) break;
  }
  text += task("bleu-0", "《春晓》\n作者：孟浩然\n", "春眠不觉晓，处处闻啼鸟。", "bleu").dump() + "\n";
  text += task("qa-0", "问：中国的首都是哪里？\n答：", "北京", "qa").dump() + "\n";
  Json a = task("acc-0", "《静夜思》的作者是", "李白", "accuracy");
  Json labels = Json::array();
  labels.push_back("李白");
  labels.push_back("杜甫");
  a.set("labels", labels);
  text += a.dump() + "\n";
  std::ofstream(path, std::ios::binary) << text;
  return text;
}

const std::string& quantized_model() {
  static const std::string path = [] {
    const std::string out = test::temp_dir() + "/zh-q4_0.gguf";
    const auto r = run_cli({"quantize", test::shared_model("tiny-zh-poems.gguf"), out, "q4_0"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return out;
  }();
  return path;
}

TEST(CliEval, QuantizedVsBaseReport) {
  const std::string tasks = test::temp_dir() + "/zh-tasks.jsonl";
  write_tasks(tasks);
  const std::string f32 = test::shared_model("tiny-zh-poems.gguf");
  const std::string dir = test::temp_dir() + "/eval-report";
  auto r =
      run_cli({"eval", "-m", quantized_model(), "--base", f32, "-f", tasks, "-o", dir, "-n", "24", "--parallel", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("rougeL"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("changed outputs:"), std::string::npos) << r.out;
  const Json rep = Json::parse(test::read_file(dir + "/report.json"));
  const std::string md = test::read_file(dir + "/report.md");
  EXPECT_NE(md.find("## Scores"), std::string::npos);
  ASSERT_EQ(rep.at("models").size(), 2u);
  EXPECT_EQ(rep.at("task_file").at("sha256").as_string(), Sha256::hex_of(test::read_file(tasks)));
  std::vector<std::string> names;
  for (const Json& m : rep.at("comparison").at("metrics").as_array()) names.push_back(m.at("name").as_string());
  EXPECT_EQ(names, (std::vector<std::string>{"rouge1", "rouge2", "rougeL", "bleu", "exact_match", "f1", "accuracy"}));
  const Json& cases = rep.at("cases");
  ASSERT_GE(cases.size(), 10u);
  for (const Json& c : cases.as_array()) {
    EXPECT_EQ(c.at("outputs").at("base").at("finish_reason").as_string() == "error", false) << c.dump();
  }

  // Deterministic: one sequence per batch gives the same outputs as three.
  r = run_cli({"eval", "-m", quantized_model(), "--base", f32, "-f", tasks, "-n", "24", "--parallel", "1", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json solo = Json::parse(r.out);
  for (size_t i = 0; i < cases.size(); ++i) {
    for (const char* role : {"base", "model"}) {
      EXPECT_EQ(solo.at("cases").at(i).at("outputs").at(role).at("text").as_string(),
                cases.at(i).at("outputs").at(role).at("text").as_string())
          << role << " case " << cases.at(i).at("id").as_string();
    }
  }
  EXPECT_EQ(solo.at("comparison").at("metrics").dump(), rep.at("comparison").at("metrics").dump());

  // The same text as `edgellm run` greedy (generate(), no service) for a case with its stop.
  const Json& c0 = cases.at(0);
  r = run_cli(
      {"run", "-m", f32, "-p", c0.at("prompt").as_string(), "-n", "24", "--temp", "0", "--stop", "\n", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Json::parse(r.out).at("text").as_string(), c0.at("outputs").at("base").at("text").as_string());

  // --redact-inputs keeps no prompt or reference text.
  const std::string dir2 = test::temp_dir() + "/eval-redacted";
  r = run_cli({"eval", "-m", f32, "-f", tasks, "-o", dir2, "-n", "4", "--redact-inputs"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string red = test::read_file(dir2 + "/report.json") + test::read_file(dir2 + "/report.md");
  for (const Json& c : cases.as_array()) {
    // An accuracy case's predicted label is an output (one of its labels), not the redacted reference.
    if (c.at("metric").as_string() != "accuracy") EXPECT_EQ(red.find(c.at("references").at(0).as_string()), std::string::npos);
    EXPECT_EQ(red.find(c.at("prompt").as_string()), std::string::npos);
  }
}

// A case with labels is scored by the labels' likelihoods (classify), not by the greedy text:
// its labels are chosen so that the greedy generation starts with none of them (it would then
// score as "no label"), and the predicted label must be the one the independent reference
// (support/label_logprob.h: prompt + label through a fresh Context, log-softmax summed in
// double) finds most probable after the raw prompt.
TEST(CliEval, LabelledAccuracyIsScoredByLikelihood) {
  const std::string f32 = test::shared_model("tiny-zh-poems.gguf");
  const std::string prompt = "《静夜思》的作者是";
  auto r = run_cli({"run", "-m", f32, "-p", prompt, "-n", "8", "--temp", "0", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string greedy = Json::parse(r.out).at("text").as_string();
  std::vector<std::string> labels;
  for (const char* l : {"杜甫", "王维", "孟浩然", "白居易"}) {
    if (greedy.rfind(l, 0) != 0 && greedy.find(l) == std::string::npos) labels.push_back(l);
  }
  ASSERT_GE(labels.size(), 2u) << greedy;

  const auto model = Model::load(f32);
  const auto tok = Tokenizer::from_gguf(model->gguf());
  const std::vector<int32_t> prompt_tokens = tok->encode(prompt, /*add_special=*/true, /*parse_special=*/false);
  size_t best = 0;
  double best_lp = -1e300;
  for (size_t i = 0; i < labels.size(); ++i) {
    const double lp = test::naive_label_logprob(*model, prompt_tokens, tok->encode(labels[i], false, false));
    if (lp > best_lp) best_lp = lp, best = i;
  }

  Json c = task("acc-likelihood", prompt, labels[best], "accuracy");
  Json lj = Json::array();
  for (const auto& l : labels) lj.push_back(l);
  c.set("labels", lj);
  const std::string tasks = test::temp_dir() + "/acc-likelihood.jsonl";
  std::ofstream(tasks, std::ios::binary) << c.dump() << "\n";
  r = run_cli({"eval", "-m", f32, "-f", tasks, "-n", "8", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json report = Json::parse(r.out);
  const Json& out = report.at("cases").at(0).at("outputs").at("model");
  EXPECT_EQ(out.at("text").as_string(), greedy);  // the greedy text is still generated and reported
  EXPECT_EQ(out.at("score").at("predicted_label").as_string(), labels[best]) << "greedy: " << greedy;
  EXPECT_TRUE(out.at("score").at("correct").as_bool()) << out.dump();
}

TEST(CliEval, RecordsScoresInTheRegistry) {
  const std::string tasks = test::temp_dir() + "/zh-tasks-reg.jsonl";
  write_tasks(tasks);
  const std::string reg = test::temp_dir() + "/eval-reg";
  auto r = run_cli({"registry", "add", test::shared_model("tiny-zh-poems.gguf"), "--name", "zh", "--version", "1",
                    "--registry", reg});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (int round = 0; round < 2; ++round) {  // the second run replaces the first's entries
    r = run_cli({"eval", "--registry", reg, "-m", "zh@1", "-f", tasks, "-n", "8"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("recorded 7 task scores for zh@1"), std::string::npos) << r.err;
  }
  const Json m = Json::parse(test::read_file(reg + "/manifests/zh@1.json"));
  const Json& scores = m.at("task_scores");
  ASSERT_EQ(scores.size(), 7u);
  EXPECT_EQ(scores.at(0).at("task_file_sha256").as_string(), Sha256::hex_of(test::read_file(tasks)));
  EXPECT_EQ(scores.at(0).at("task_file").as_string(), "zh-tasks-reg.jsonl");
  EXPECT_EQ(scores.at(0).at("metric").as_string(), "rouge1");
  EXPECT_EQ(scores.at(0).at("date").as_string().size(), 20u);
  EXPECT_TRUE(m.at("task_score").is_null()) << "the hand-typed score is untouched";
  r = run_cli({"registry", "list", "--registry", reg});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("task zh-tasks-reg.jsonl"), std::string::npos) << r.out;
  r = run_cli({"registry", "list", "--registry", reg, "--json"});
  EXPECT_EQ(Json::parse(r.out).at("models").at(0).at("task_scores").size(), 7u);
  r = run_cli({"eval", "--registry", reg, "-m", "zh@2", "-f", tasks});
  EXPECT_EQ(r.exit_code, 2);  // a name the registry does not hold: a bad command line
  EXPECT_NE(r.err.find("'zh@2' is not installed"), std::string::npos) << r.err;
}

TEST(CliEval, Refusals) {
  const std::string f32 = test::shared_model("tiny-zh-poems.gguf");
  auto r = run_cli({"eval", "-m", f32});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("-f TASKS.jsonl is required"), std::string::npos) << r.err;
  const std::string bad = test::temp_dir() + "/bad-tasks.jsonl";
  std::ofstream(bad) << "{\"prompt\": \"p\", \"reference\": \"r\", \"metric\": \"rouge\"}\n{\"prompt\": \"p\"}\n";
  r = run_cli({"eval", "-m", f32, "-f", bad});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("line 2"), std::string::npos) << r.err;
  const std::string good = test::temp_dir() + "/one-task.jsonl";
  std::ofstream(good) << "{\"prompt\": \"p\", \"reference\": \"r\", \"metric\": \"rouge\"}\n";
  r = run_cli({"eval", "-m", test::temp_dir() + "/missing.gguf", "-f", good});
  EXPECT_EQ(r.exit_code, 1);
  r = run_cli({"eval", "-m", f32, "-f", good, "--bleu-smoothing", "method9"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("method9"), std::string::npos) << r.err;
  // A prompt longer than the context fails that case, names it, and the report is still written.
  std::string longp(3000, 'x');
  const std::string too_long = test::temp_dir() + "/long-task.jsonl";
  std::ofstream(too_long) << "{\"id\": \"long\", \"prompt\": \"" << longp
                          << "\", \"reference\": \"r\", \"metric\": \"rouge\"}\n"
                             "{\"id\": \"ok\", \"prompt\": \"p\", \"reference\": \"r\", \"metric\": \"rouge\"}\n";
  const std::string dir = test::temp_dir() + "/eval-long";
  r = run_cli({"eval", "-m", f32, "-f", too_long, "-c", "256", "-n", "4", "-o", dir});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("1 case(s) failed"), std::string::npos) << r.err;
  const Json rep = Json::parse(test::read_file(dir + "/report.json"));
  EXPECT_EQ(rep.at("cases").at(0).at("outputs").at("model").at("finish_reason").as_string(), "error");
  EXPECT_NE(rep.at("cases").at(1).at("outputs").at("model").at("finish_reason").as_string(), "error");
}

}  // namespace
}  // namespace edgellm
