#include "support/json_validator.h"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>

#include "support/test_env.h"

namespace edgellm::test {
namespace {

// A JSON string literal.
std::string quoted(const std::string& s) {
  std::string q = "\"";
  for (const unsigned char c : s) {
    if (c == '"' || c == '\\') {
      q += '\\';
      q += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      q += buf;
    } else {
      q += static_cast<char>(c);
    }
  }
  return q + "\"";
}

}  // namespace

JsonValidation validate_json_outputs(const std::string& schema_json, const std::vector<GeneratedOutput>& outputs) {
  static std::atomic<int> n{0};
  const std::string tag = std::to_string(::getpid()) + "-" + std::to_string(n.fetch_add(1));
  const std::string schema_path = temp_dir() + "/validate-schema-" + tag + ".json";
  const std::string outputs_path = temp_dir() + "/validate-outputs-" + tag + ".jsonl";
  std::ofstream(schema_path) << schema_json;
  {
    std::ofstream f(outputs_path);
    for (const GeneratedOutput& o : outputs) {
      f << "{\"text\": " << quoted(o.text) << ", \"finish_reason\": " << quoted(o.finish_reason) << "}\n";
    }
  }
  FILE* p =
      ::popen(("python3 scripts/validate-json-outputs.py " + schema_path + " " + outputs_path + " 2>&1").c_str(), "r");
  JsonValidation v;
  char buf[4096];
  while (p != nullptr && std::fgets(buf, sizeof buf, p) != nullptr) v.report += buf;
  const int status = p != nullptr ? ::pclose(p) : -1;
  v.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return v;
}

}  // namespace edgellm::test
