// One parser and one set of shared options for every sub-command (issue 42): a table of every
// sub-command x every shared option (tools/edgellm/cli_args.cpp's catalogue), checked against
// the built CLI the way a user meets it, plus the exit status of each meaning (docs/cli.md).
//
// How a cell is probed without running the command: the option is given a value no command
// accepts ("bogus-42"), after a command line that is otherwise valid. A command that takes the
// option rejects the value, naming it (exit 2; 1 for -m / --registry: "cannot open" / "no
// registry"); one that does not take it says "does not apply to `edgellm CMD`" (exit 2). A flag
// gets "=x" ("takes no value" vs "does not apply"). So every cell ends before a model loads,
// and a cell whose option were silently ignored would run the command to completion (exit 0)
// and fail. The help texts of one shared option are the same in every command that takes it.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/cli_runner.h"
#include "support/test_env.h"

namespace edgellm {
namespace {

using test::CliResult;
using test::run_cli;

constexpr const char* kBogus = "bogus-42";

// Every shared option, as the catalogue spells its first names.
struct SharedName {
  const char* key;
  const char* option;  // the name probed
  bool flag;
};
const std::vector<SharedName> kShared = {
    {"model", "-m", false},         {"registry", "--registry", false}, {"ctx-size", "-c", false},
    {"batch-size", "-b", false},    {"threads", "-t", false},          {"threads-batch", "-tb", false},
    {"parallel", "-np", false},     {"kv-type", "--kv-type", false},   {"kv-type-k", "-ctk", false},
    {"kv-type-v", "-ctv", false},   {"repack", "--repack", false},     {"power", "--power", false},
    {"seed", "--seed", false},      {"json", "--json", true},          {"pooling", "--pooling", false},
};

struct Row {
  std::string command;
  std::vector<std::string> base;          // a valid command line (model included where it takes one)
  std::vector<std::string> base_no_model; // the same without the model, for probing -m
  std::set<std::string> takes;            // catalogue keys this command takes
};

class CliTable : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = test::temp_dir() + "/cli-table";
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ + "/messages.json") << R"([{"role": "user", "content": "Hi"}])";
    std::ofstream(dir_ + "/text.txt") << "Once upon a time there was a cat. The cat was happy.\n";
    std::ofstream(dir_ + "/tasks.jsonl") << R"({"id": "a", "prompt": "Once upon a time", "reference": "there was", "metric": "rouge"})" "\n";
  }
  static std::string dir_;

  std::vector<Row> rows() const {
    const std::string m = test::shared_model("stories260K.gguf");
    const std::set<std::string> context = {"ctx-size", "batch-size", "threads", "threads-batch", "kv-type",
                                           "kv-type-k", "kv-type-v", "repack", "power"};
    auto with = [](std::set<std::string> a, std::initializer_list<const char*> more) {
      for (const char* k : more) a.insert(k);
      return a;
    };
    const std::string out = dir_ + "/out.gguf";
    return {
        {"run", {"-m", m, "-p", "Once", "-n", "2"}, {"-p", "Once", "-n", "2"},
         with(context, {"model", "registry", "parallel", "seed", "json"})},
        {"chat", {"-m", m, "--messages", dir_ + "/messages.json", "-n", "2"}, {"--messages", dir_ + "/messages.json"},
         with(context, {"model", "registry", "seed", "json"})},
        {"serve", {"-m", m, "--port", "0", "--no-warmup"}, {"--port", "0"},
         with(context, {"model", "registry", "parallel", "pooling"})},
        {"info", {m}, {}, {"model", "registry", "ctx-size", "batch-size", "parallel", "kv-type", "kv-type-k",
                           "kv-type-v", "repack", "json"}},
        {"tokenize", {"-m", m, "hello"}, {"hello"}, {"model", "registry", "json"}},
        {"detokenize", {"-m", m, "1", "2"}, {"1", "2"}, {"model", "registry", "json"}},
        {"template", {"-m", m, "--messages", dir_ + "/messages.json"}, {"--messages", dir_ + "/messages.json"},
         {"model", "registry"}},
        {"bench", {"-m", m, "-p", "8", "-n", "2", "-r", "1", "--no-bandwidth", "--no-int8-peak"},
         {"-p", "8", "-n", "2", "-r", "1", "--no-bandwidth", "--no-int8-peak"},
         {"model", "threads", "batch-size", "kv-type", "kv-type-k", "kv-type-v", "repack", "seed", "json"}},
        {"bench-prefix", {"-m", m, "--prefix", "8", "--suffix", "2", "-n", "2", "-r", "1"},
         {"--prefix", "8", "--suffix", "2", "-n", "2", "-r", "1"},
         {"model", "registry", "batch-size", "threads", "threads-batch", "kv-type", "kv-type-k", "kv-type-v", "repack",
          "power", "seed"}},
        {"bench-classify", {"-m", m, "--prompt", "8", "--labels", "2", "--label-tokens", "2", "-r", "1"},
         {"--prompt", "8", "--labels", "2", "--label-tokens", "2", "-r", "1"},
         {"model", "registry", "batch-size", "threads", "threads-batch", "kv-type", "kv-type-k", "kv-type-v", "repack",
          "power", "seed"}},
        {"perplexity", {"-m", m, "-f", dir_ + "/text.txt", "-c", "8", "--chunks", "1"},
         {"-f", dir_ + "/text.txt", "-c", "8", "--chunks", "1"},
         {"model", "registry", "ctx-size", "batch-size", "threads", "kv-type", "kv-type-k", "kv-type-v", "repack",
          "json"}},
        {"quantize", {m, out, "q8_0"}, {m, out, "q8_0"}, {"threads"}},
        {"pack", {m, "-o", dir_ + "/out.pack"}, {"-o", dir_ + "/out.pack"}, {"model", "registry", "threads"}},
        {"synth", {"--shape", "qwen2.5-0.5b", "--type", "q8_0", "--layers", "1", "-o", out},
         {"--shape", "qwen2.5-0.5b", "--type", "q8_0", "--layers", "1", "-o", out}, {"threads", "seed"}},
        {"plan", {m, "--device", "phone-4gb"}, {"--device", "phone-4gb"},
         {"model", "registry", "ctx-size", "parallel", "power", "json"}},
        {"registry", {"verify", "--registry", dir_ + "/no-registry"}, {"verify"}, {"registry", "threads", "json"}},
        {"convert", {dir_ + "/no-hf-checkpoint", out}, {dir_ + "/no-hf-checkpoint", out}, {"threads"}},
        {"imatrix", {"-m", m, "-f", dir_ + "/text.txt", "-o", dir_ + "/imatrix.gguf", "-c", "8", "--chunks", "1"},
         {"-f", dir_ + "/text.txt", "-o", dir_ + "/imatrix.gguf", "-c", "8", "--chunks", "1"},
         {"model", "ctx-size", "batch-size", "threads", "json"}},
        {"eval", {"-m", m, "-f", dir_ + "/tasks.jsonl", "-n", "2"}, {"-f", dir_ + "/tasks.jsonl", "-n", "2"},
         with(context, {"model", "registry", "parallel", "seed", "json"})},
        {"embed", {"-m", m, "-p", "hello"}, {"-p", "hello"},
         {"model", "registry", "ctx-size", "batch-size", "threads", "pooling"}},
        {"rerank", {"-m", m, "-q", "a query", "-d", "a document"}, {"-q", "a query", "-d", "a document"},
         {"model", "registry", "ctx-size", "batch-size", "threads", "json"}},
        {"docqa", {"index", dir_, "-m", m, "--index", dir_ + "/docs.index"},
         {"index", dir_, "--index", dir_ + "/docs.index"},
         {"model", "registry", "ctx-size", "batch-size", "threads", "json"}},
        {"bench-grammar", {"-m", m, "--grammar", "root ::= \"a\"", "--pairs", "0", "--walks", "1"},
         {"--grammar", "root ::= \"a\"", "--pairs", "0", "--walks", "1"},
         {"model", "registry", "threads", "threads-batch", "power", "ctx-size", "batch-size", "repack"}},
    };
  }
};
std::string CliTable::dir_;

// The commands `edgellm help` lists.
std::vector<std::string> listed_commands() {
  const CliResult r = run_cli({"help"});
  std::vector<std::string> out;
  std::istringstream in(r.err);
  bool in_list = false;
  for (std::string line; std::getline(in, line);) {
    if (line == "commands:") {
      in_list = true;
      continue;
    }
    if (in_list) {
      if (line.size() < 3 || line[0] != ' ') break;
      std::istringstream words(line);
      std::string name;
      words >> name;
      out.push_back(name);
    }
  }
  return out;
}

TEST_F(CliTable, EveryCommandHasARow) {
  const auto listed = listed_commands();
  ASSERT_GE(listed.size(), 15u);
  std::set<std::string> in_table;
  for (const auto& r : rows()) in_table.insert(r.command);
  for (const auto& c : listed) {
    EXPECT_TRUE(in_table.count(c)) << "`edgellm " << c
                                   << "` has no row in tests/tools/test_cli_table.cpp: add which shared options it takes";
  }
}

TEST_F(CliTable, EveryCommandTimesEverySharedOption) {
  int cells = 0;
  for (const auto& row : rows()) {
    for (const auto& so : kShared) {
      std::vector<std::string> args = {row.command};
      const bool probing_model = std::string(so.key) == "model";
      for (const auto& a : probing_model ? row.base_no_model : row.base) args.push_back(a);
      args.push_back(so.flag ? std::string(so.option) + "=x" : so.option);
      if (!so.flag) args.push_back(kBogus);
      const CliResult r = run_cli(args);
      const bool takes = row.takes.count(so.key) > 0;
      const std::string where = "edgellm " + row.command + " " + so.option + "\nstderr: " + r.err;
      ++cells;
      if (!takes) {
        EXPECT_EQ(r.exit_code, 2) << where;
        EXPECT_NE(r.err.find("does not apply to `edgellm " + row.command + "`"), std::string::npos) << where;
        continue;
      }
      EXPECT_EQ(r.err.find("does not apply"), std::string::npos) << where;
      if (so.flag) {
        EXPECT_EQ(r.exit_code, 2) << where;
        EXPECT_NE(r.err.find("takes no value"), std::string::npos) << where;
      } else {
        // -m / --registry with a path that does not exist: the work fails (1); any other
        // value is a bad command line (2). Either way the message shows what was typed.
        const bool path = probing_model || std::string(so.key) == "registry";
        EXPECT_EQ(r.exit_code, path ? 1 : 2) << where;
        EXPECT_NE(r.err.find(kBogus), std::string::npos) << where;
      }
    }
  }
  EXPECT_EQ(cells, 23 * 15);
}

// The help line of a shared option (names, value, description) is the same in every command
// that takes it; only a note in parentheses at its end may differ (a default, what it means there).
std::string without_note(std::string line) {
  if (line.empty() || line.back() != ')') return line;
  int depth = 0;
  for (size_t i = line.size(); i-- > 0;) {
    if (line[i] == ')') ++depth;
    if (line[i] == '(' && --depth == 0) return i > 0 && line[i - 1] == ' ' ? line.substr(0, i - 1) : line.substr(0, i);
  }
  return line;
}

TEST_F(CliTable, SharedOptionsReadTheSameInEveryHelp) {
  std::map<std::string, std::map<std::string, std::string>> lines;  // option -> command -> help entry
  for (const auto& row : rows()) {
    const CliResult r = run_cli({row.command, "--help"});
    ASSERT_EQ(r.exit_code, 0) << row.command;
    const size_t shared = r.out.find("\nshared options");
    ASSERT_NE(shared, std::string::npos) << row.command << ":\n" << r.out;
    // One entry per option: its line, joined with the next when the description wrapped.
    std::vector<std::string> entries;
    std::istringstream in(r.out.substr(shared + 1));
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("  -", 0) == 0) {
        entries.push_back(line);
      } else if (line.rfind("      ", 0) == 0 && !entries.empty()) {
        entries.back() += " " + line.substr(line.find_first_not_of(' '));
      }
    }
    for (const auto& e : entries) {
      const std::string names = e.substr(0, e.find(' ', 2 + e.substr(2).find(' ')));
      for (const auto& so : kShared) {
        const std::string opt = so.option;
        if (e.rfind("  " + opt + ",", 0) == 0 || e.rfind("  " + opt + " ", 0) == 0 ||
            e.find(", " + opt + ",") != std::string::npos || e.find(", " + opt + " ") != std::string::npos) {
          // Collapse the padding between the value name and the description.
          std::string collapsed;
          for (char c : e) {
            if (!(c == ' ' && !collapsed.empty() && collapsed.back() == ' ')) collapsed += c;
          }
          lines[so.key][row.command] = without_note(collapsed);
        }
      }
      (void)names;
    }
    for (const auto& key : row.takes) {
      EXPECT_TRUE(lines[key].count(row.command)) << row.command << " --help lists no " << key << "\n" << r.out;
    }
  }
  for (const auto& [key, by_command] : lines) {
    ASSERT_FALSE(by_command.empty());
    const auto& [first_command, first] = *by_command.begin();
    for (const auto& [command, line] : by_command) {
      EXPECT_EQ(line, first) << key << ": " << command << " vs " << first_command;
    }
  }
}

// `edgellm serve`'s embedding flags as llama-server spells them (--embeddings, --reranking /
// --rerank, --pooling ... rank) and how they combine with ours (--embedding-model beside a
// generator): every refusal here ends before a model loads (exit 2, naming the flags).
TEST_F(CliTable, ServeEmbeddingFlagsAsLlamaServer) {
  const std::string m = test::shared_model("stories260K.gguf");
  const std::vector<std::string> base = {"serve", "-m", m, "--port", "0", "--no-warmup"};
  struct Case {
    std::vector<std::string> extra;
    const char* words;
  };
  for (const Case& c : std::vector<Case>{
           {{"--embeddings", "--embedding-model", m}, "serve the -m model alone"},
           {{"--embedding", "--docqa-index", dir_ + "/x.index", "--embedding-model", m}, "serve the -m model alone"},
           {{"--reranking", "--rerank-model", m}, "serve the -m model alone"},
           {{"--rerank", "--pooling", "mean"}, "--pooling mean does not combine"},
           {{"--embeddings", "--reranking", "--pooling", "cls"}, "--pooling cls does not combine"},
           {{"--reranking", "--pooling", "none"}, "--pooling none does not combine"},
           {{"--embeddings", "--pooling", "rank", "--rerank-model", m}, "serve the -m model alone"},
           {{"--pooling", "rank"}, "give --reranking"},
           {{"--pooling", "mean"}, "--pooling needs --embeddings"},
           {{"--embeddings", "--cloud-url", "https://example.com/v1"}, "only embeds"},
       }) {
    std::vector<std::string> args = base;
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    const CliResult r = run_cli(args);
    std::string line;
    for (const auto& a : c.extra) line += " " + a;
    EXPECT_EQ(r.exit_code, 2) << line << "\n" << r.err;
    EXPECT_NE(r.err.find(c.words), std::string::npos) << line << "\n" << r.err;
  }
  // The flags are listed in serve's help, aliases included.
  const CliResult help = run_cli({"serve", "--help"});
  for (const char* name : {"--embeddings, --embedding ", "--reranking, --rerank ", "--embedding-model", "--rerank-model"}) {
    EXPECT_NE(help.out.find(name), std::string::npos) << name;
  }
}

TEST_F(CliTable, ExitStatusPerMeaning) {
  const std::string m = test::shared_model("stories260K.gguf");
  // 0: help and version, of the CLI and of a command.
  CliResult r = run_cli({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind("edgellm 0.", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("C ABI"), std::string::npos) << r.out;
  r = run_cli({"run", "--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind("edgellm 0.", 0), 0u) << r.out;
  EXPECT_EQ(run_cli({"help"}).exit_code, 0);
  // 2: the command line is wrong.
  EXPECT_EQ(run_cli({}).exit_code, 2);
  EXPECT_EQ(run_cli({"frob"}).exit_code, 2);
  EXPECT_EQ(run_cli({"run", "--frob"}).exit_code, 2);
  EXPECT_EQ(run_cli({"run", "-m", m}).exit_code, 2) << "no prompt";
  EXPECT_EQ(run_cli({"registry", "frob", "--registry", dir_ + "/reg2"}).exit_code, 2);
  // 1: the work failed (a model that is not there, for every command that loads one).
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"run", "-m", dir_ + "/missing.gguf", "-p", "x"},
           {"info", dir_ + "/missing.gguf"},
           {"plan", dir_ + "/missing.gguf"},
           {"tokenize", "-m", dir_ + "/missing.gguf", "x"},
           {"perplexity", "-m", dir_ + "/missing.gguf", "-f", dir_ + "/text.txt"}}) {
    r = run_cli(args);
    EXPECT_EQ(r.exit_code, 1) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find("missing.gguf"), std::string::npos) << args[0] << ": " << r.err;
    EXPECT_EQ(r.err.find("fits"), std::string::npos) << args[0] << ": " << r.err;
  }
}

}  // namespace
}  // namespace edgellm
