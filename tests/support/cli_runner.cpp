#include "support/cli_runner.h"

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "support/test_env.h"

namespace edgellm::test {
namespace {

// `stdin_path` empty: /dev/null. Output files are numbered per process (temp_dir() is too).
CliResult run_with_stdin(const std::vector<std::string>& args, const std::string& stdin_path) {
  static int counter = 0;
  const std::string base = temp_dir() + "/cli-runner" + std::to_string(counter++);
  std::string cmd = shell_quote(cli_path());
  for (const auto& a : args) cmd += ' ' + shell_quote(a);
  cmd += " >" + shell_quote(base + ".out") + " 2>" + shell_quote(base + ".err");
  cmd += " <" + (stdin_path.empty() ? std::string("/dev/null") : shell_quote(stdin_path));
  const int status = std::system(cmd.c_str());
  CliResult r;
  if (status != -1 && WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  r.out = read_file(base + ".out");
  r.err = read_file(base + ".err");
  return r;
}

}  // namespace

std::string cli_path() {
  if (const char* env = std::getenv("EDGELLM_CLI"); env != nullptr && *env != '\0') return env;
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "edgellm").string();
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

CliResult run_cli(const std::vector<std::string>& args) { return run_with_stdin(args, ""); }

CliResult run_cli(const std::vector<std::string>& args, const std::string& input) {
  static int counter = 0;
  const std::string in_path = temp_dir() + "/cli-runner-in" + std::to_string(counter++);
  std::ofstream(in_path, std::ios::binary) << input;
  return run_with_stdin(args, in_path);
}

}  // namespace edgellm::test
