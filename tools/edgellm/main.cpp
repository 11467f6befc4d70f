// edgellm: one binary, many sub-commands (run, chat, info, tokenize, bench, quantize, ...).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

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
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "help") == 0 || std::strcmp(argv[1], "--help") == 0 ||
      std::strcmp(argv[1], "-h") == 0) {
    print_usage();
    return argc < 2 ? 2 : 0;
  }
  const std::string name = argv[1];
  for (const auto& c : edgellm::cli::command_registry()) {
    if (name != c.name) continue;
    std::vector<std::string> args(argv + 2, argv + argc);
    try {
      return c.run(args);
    } catch (const edgellm::Error& e) {
      std::fprintf(stderr, "edgellm %s: error (%s): %s\n", c.name, edgellm::error_code_name(e.code()), e.what());
      return 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "edgellm %s: error: %s\n", c.name, e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "edgellm: unknown command '%s'\n\n", name.c_str());
  print_usage();
  return 2;
}
