// Option parsing shared by the edgellm sub-commands. Each command declares its options once
// (names, target variable, help text, allowed range); the parser fills the variables, rejects
// unknown options and bad values with an Error(kInvalidArgument) that names the option, and
// prints the generated usage for -h/--help and the version for --version.
//
//   ArgParser ap("run", "-m MODEL (-p PROMPT | -f FILE) [options]");
//   ap.add_string(shared_option("model"), &model);           // one of the shared options below
//   ap.add_int("-n,--max-tokens", &n, "N", "tokens to generate", -1);
//   if (!ap.parse(args)) return 0;  // --help or --version was printed
//
// Shared options: an option that more than one sub-command takes (-m, --registry, -c, -b, -t,
// -np, --kv-type, --repack, --json, ...) is spelled, described and validated once, in the
// catalogue of cli_args.cpp (shared_options()); a command registers the ones it takes. One that a
// command does not take is refused by name ("-c does not apply to `edgellm tokenize`"), so a user
// learns the difference from the error instead of from a silently ignored option.
// tests/tools/test_cli_table.cpp checks every sub-command x shared option.
//
// Why our own parser and not CLI11 (in Debian): the CLI follows llama.cpp's spellings, whose
// multi-letter single-dash options (-np, -tb, -ctk, -ctv) CLI11 reads as bundles of one-letter
// flags; and the sub-commands (and other helpers' new ones) are written against this small API.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace edgellm::cli {

// The exit status of every sub-command, one value per meaning (docs/cli.md "Exit status").
enum ExitStatus : int {
  kExitOk = 0,
  kExitFailure = 1,         // the work failed: a file missing or unreadable, an invalid model,
                            // out of memory, a generation error (the message says which)
  kExitUsage = 2,           // the command line is wrong: unknown command or option, a bad or
                            // missing value, options that do not combine
  kExitNoFit = 3,           // `plan`: no candidate fits the device (the plan says why)
  kExitVerifyFailed = 4,    // a check failed: `registry verify` (a file no longer matches its
                            // SHA-256), `bench-prefix` (cached and cold outputs differ)
  kExitInterrupted = 130,   // stopped by Ctrl-C (128 + SIGINT)
};
// kInvalidArgument -> kExitUsage, kCancelled -> kExitInterrupted, anything else -> kExitFailure.
int exit_status_for(ErrorCode code);

// "edgellm 0.2.0 (C ABI 5)": what --version prints.
std::string version_string();

// One option of the shared catalogue.
struct SharedOption {
  const char* key;      // catalogue key, e.g. "ctx-size"
  const char* names;    // "-c,--ctx-size,--ctx"
  const char* metavar;  // "" for a flag
  const char* help;     // the common description; a command may append its default
};
// Every shared option, in the order usage() lists them.
const std::vector<SharedOption>& shared_options();
// The catalogue entry `key`; throws Error(kInternal) for an unknown key (a bug in a command).
const SharedOption& shared_option(std::string_view key);

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
  // The same for a shared option: names, value name and help come from the catalogue; `note`
  // (e.g. "default 512") is appended to the help in parentheses.
  void add_flag(const SharedOption& o, bool* out, const std::string& note = "");
  void add_string(const SharedOption& o, std::string* out, const std::string& note = "");
  void add_int(const SharedOption& o, int32_t* out, int64_t min, int64_t max, const std::string& note = "");
  void add_custom(const SharedOption& o, std::function<void(const std::string& value)> parse,
                  const std::string& note = "");
  // Arguments that are not options are collected here; without this call they are an error.
  void allow_positionals(std::vector<std::string>* out, const std::string& metavar);

  // Returns false when -h/--help or --version was given (printed to stdout): the command should
  // return 0. Throws Error(kInvalidArgument) for unknown options, missing or malformed values,
  // and for a shared option this command does not take.
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
    bool shared = false;  // from the catalogue: listed under "shared options" in usage()
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
// The whole file as bytes; Error(kIo) "cannot open/read <what> '<path>'" otherwise (a folder
// is refused as such: "<what> '/tmp' is a directory, not a file").
std::string read_text_file(const std::string& path, const std::string& what);

}  // namespace edgellm::cli
