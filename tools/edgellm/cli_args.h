// Option parsing shared by the edgellm sub-commands. Each command declares its options once
// (names, target variable, help text, allowed range); the parser fills the variables, rejects
// unknown options and bad values with an Error(kInvalidArgument) that names the option, and
// prints the generated usage for -h/--help.
//
//   ArgParser ap("run", "-m MODEL (-p PROMPT | -f FILE) [options]");
//   ap.add_string("-m,--model", &model, "FILE", "GGUF model to load");
//   ap.add_int("-n,--max-tokens", &n, "N", "tokens to generate", -1);
//   if (!ap.parse(args)) return 0;  // --help was printed
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace edgellm::cli {

class ArgParser {
 public:
  ArgParser(std::string command, std::string synopsis);

  // `names` is a comma-separated list ("-n,--max-tokens"). Values are given as "--opt VALUE" or
  // "--opt=VALUE". A later occurrence overrides an earlier one, except add_strings (appends).
  void add_flag(const std::string& names, bool* out, const std::string& help);
  void add_string(const std::string& names, std::string* out, const std::string& metavar, const std::string& help);
  void add_strings(const std::string& names, std::vector<std::string>* out, const std::string& metavar,
                   const std::string& help);
  void add_int(const std::string& names, int32_t* out, const std::string& metavar, const std::string& help,
               int64_t min = std::numeric_limits<int32_t>::min(), int64_t max = std::numeric_limits<int32_t>::max());
  void add_int64(const std::string& names, int64_t* out, const std::string& metavar, const std::string& help,
                 int64_t min = std::numeric_limits<int64_t>::min(), int64_t max = std::numeric_limits<int64_t>::max());
  void add_float(const std::string& names, float* out, const std::string& metavar, const std::string& help,
                 double min = -std::numeric_limits<double>::infinity(),
                 double max = std::numeric_limits<double>::infinity());
  // A custom value parser (throws Error(kInvalidArgument) itself on a bad value).
  void add_custom(const std::string& names, const std::string& metavar, const std::string& help,
                  std::function<void(const std::string& value)> parse);
  // Arguments that are not options are collected here; without this call they are an error.
  void allow_positionals(std::vector<std::string>* out, const std::string& metavar);

  // Returns false when -h/--help was given (usage already printed to stdout): the command should
  // return 0. Throws Error(kInvalidArgument) for unknown options, missing or malformed values.
  bool parse(const std::vector<std::string>& args);

  // True if the option (any of its names, e.g. "--seed") appeared on the command line.
  bool seen(const std::string& name) const;
  std::string usage() const;

 private:
  struct Option {
    std::vector<std::string> names;
    std::string metavar;  // empty: a flag without a value
    std::string help;
    std::function<void(const std::string&)> apply;
    bool seen = false;
  };
  Option& add(const std::string& names, const std::string& metavar, const std::string& help,
              std::function<void(const std::string&)> apply);
  Option* find(const std::string& name);
  const Option* find(const std::string& name) const;

  std::string command_;
  std::string synopsis_;
  std::vector<Option> options_;
  std::vector<std::string>* positionals_ = nullptr;
  std::string positional_metavar_;
};

// Strict conversions; `what` names the option or field in the error message.
int64_t parse_int(const std::string& text, const std::string& what, int64_t min, int64_t max);
double parse_double(const std::string& text, const std::string& what);
// "1,2,3" (spaces allowed around commas) -> {1, 2, 3}; every value in [min, max].
std::vector<int32_t> parse_int_list(const std::string& text, const std::string& what, int64_t min = 0,
                                    int64_t max = std::numeric_limits<int32_t>::max());
// The whole file as bytes; Error(kIo) "cannot open/read <what> '<path>'" otherwise.
std::string read_text_file(const std::string& path, const std::string& what);

}  // namespace edgellm::cli
