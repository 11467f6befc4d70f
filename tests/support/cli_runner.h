// Runs the built `edgellm` binary the way a user would (through the shell) and captures what it
// printed, for the end-to-end CLI tests (tests/tools, tests/quant/test_cli_quantize.cpp).
// The binary is $EDGELLM_CLI, else `edgellm` next to the test executable (CMake puts every
// executable in the build directory's root).
#pragma once

#include <string>
#include <vector>

namespace edgellm::test {

struct CliResult {
  int exit_code = -1;  // -1: did not exit normally (crashed on a signal)
  std::string out;
  std::string err;
};

std::string cli_path();
// `s` in single quotes for /bin/sh (embedded quotes escaped).
std::string shell_quote(const std::string& s);
// Runs `edgellm ARGS...` with stdin from /dev/null; stdout and stderr go to files in temp_dir().
CliResult run_cli(const std::vector<std::string>& args);
// The same with `input` on stdin (through a file, so stdin is not a terminal).
CliResult run_cli(const std::vector<std::string>& args, const std::string& input);

}  // namespace edgellm::test
