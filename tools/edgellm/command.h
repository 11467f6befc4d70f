// Sub-command registry of the edgellm CLI: each cmd_*.cpp registers itself with a static
// CommandRegistration, so adding a command never touches main.cpp.
#pragma once

#include <string>
#include <vector>

namespace edgellm::cli {

using CommandFn = int (*)(const std::vector<std::string>& args);

struct Command {
  const char* name;
  const char* summary;  // one line for `edgellm help`
  CommandFn run;
};

std::vector<Command>& command_registry();

struct CommandRegistration {
  CommandRegistration(const char* name, const char* summary, CommandFn fn) {
    command_registry().push_back({name, summary, fn});
  }
};

}  // namespace edgellm::cli
