// edgellm: one binary, many sub-commands (run, chat, info, tokenize, bench, quantize, ...).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "cli_args.h"
#include "command.h"
#include "core/error.h"

namespace edgellm::cli {

std::vector<Command>& command_registry() {
  static std::vector<Command> commands;
  return commands;
}

}  // namespace edgellm::cli

namespace {

void print_usage() {
  auto commands = edgellm::cli::command_registry();
  std::sort(commands.begin(), commands.end(),
            [](const auto& a, const auto& b) { return std::strcmp(a.name, b.name) < 0; });
  std::fprintf(stderr, "usage: edgellm COMMAND [options]   (edgellm COMMAND --help for details)\n\ncommands:\n");
  for (const auto& c : commands) std::fprintf(stderr, "  %-12s %s\n", c.name, c.summary);
  std::fprintf(stderr,
               "\nexit status: 0 ok, 1 the work failed, 2 bad command line, 3 plan: nothing fits, "
               "4 a verification failed, 130 interrupted (docs/cli.md)\n");
}

}  // namespace

int main(int argc, char** argv) {
  using edgellm::cli::kExitUsage;
  if (argc < 2 || std::strcmp(argv[1], "help") == 0 || std::strcmp(argv[1], "--help") == 0 ||
      std::strcmp(argv[1], "-h") == 0) {
    print_usage();
    return argc < 2 ? kExitUsage : 0;
  }
  if (std::strcmp(argv[1], "--version") == 0 || std::strcmp(argv[1], "version") == 0) {
    std::printf("%s\n", edgellm::cli::version_string().c_str());
    return 0;
  }
  const std::string name = argv[1];
  for (const auto& c : edgellm::cli::command_registry()) {
    if (name != c.name) continue;
    std::vector<std::string> args(argv + 2, argv + argc);
    try {
      return c.run(args);
    } catch (const edgellm::Error& e) {
      std::fprintf(stderr, "edgellm %s: error (%s): %s\n", c.name, edgellm::error_code_name(e.code()), e.what());
      return edgellm::cli::exit_status_for(e.code());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "edgellm %s: error: %s\n", c.name, e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "edgellm: unknown command '%s'\n\n", name.c_str());
  print_usage();
  return kExitUsage;
}
