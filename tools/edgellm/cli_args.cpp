#include "cli_args.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <utility>

#include <edgellm/edgellm.h>

#include "core/error.h"

#ifndef EDGELLM_VERSION_STRING
#error "EDGELLM_VERSION_STRING must be defined by the build (CMakeLists.txt: the project version)"
#endif

namespace edgellm::cli {

namespace {

std::vector<std::string> split_names(const std::string& names) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : names) {
    if (c == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else if (c != ' ') {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return {};
  const size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
  return out;
}

std::string with_note(const char* help, const std::string& note) {
  return note.empty() ? std::string(help) : std::string(help) + " (" + note + ")";
}

}  // namespace

int exit_status_for(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return kExitUsage;
    case ErrorCode::kCancelled:
      return kExitInterrupted;
    default:
      return kExitFailure;
  }
}

std::string version_string() {
  return std::string("edgellm ") + EDGELLM_VERSION_STRING + " (C ABI " + std::to_string(EDGELLM_ABI_VERSION) + ")";
}

const std::vector<SharedOption>& shared_options() {
  // Names follow llama.cpp's where it has the option (-c, -b, -t, -tb, -np, -ctk, -ctv).
  static const std::vector<SharedOption> kOptions = {
      {"model", "-m,--model", "FILE",
       "GGUF model file; with --registry the NAME or NAME@VERSION of an installed model"},
      {"registry", "--registry", "DIR",
       "model registry folder (edgellm registry): -m names an installed model, verified by SHA-256 before it loads"},
      {"ctx-size", "-c,--ctx-size,--ctx", "N", "context size in tokens; 0 = the model's training context"},
      {"batch-size", "-b,--batch-size,--batch", "N", "prompt tokens per forward pass"},
      {"threads", "-t,--threads", "N", "threads; 0 = the default (the big cores)"},
      {"threads-batch", "-tb,--threads-batch", "N", "threads for prompt processing; 0 = the power mode's, else --threads"},
      {"parallel", "-np,--parallel", "N", "sequences decoded at once"},
      {"kv-type", "--kv-type", "TYPE", "KV cache element type of K and V: f16, f32, q8_0 or q4_0"},
      {"kv-type-k", "--kv-type-k,-ctk,--cache-type-k", "TYPE", "K cache type; overrides --kv-type for K"},
      {"kv-type-v", "--kv-type-v,-ctv,--cache-type-v", "TYPE", "V cache type; overrides --kv-type for V"},
      {"repack", "--repack", "MODE",
       "repack Q4_0/Q5_0/Q8_0/Q4_K/Q5_K/Q6_K weights into 16-row interleaved groups at load: auto (when the CPU has a "
       "kernel for them), on, off"},
      {"power", "--power", "MODE",
       "performance, balanced or efficiency: threads, cores and worker priority per phase for this device"},
      {"seed", "--seed", "N", "random seed"},
      {"json", "--json", "", "print JSON instead of text"},
      {"pooling", "--pooling", "TYPE", "pooling of the embeddings: none, mean, cls, last or rank (llama.cpp's names)"},
  };
  return kOptions;
}

const SharedOption& shared_option(std::string_view key) {
  for (const auto& o : shared_options()) {
    if (key == o.key) return o;
  }
  throw Error(ErrorCode::kInternal, "no shared option '" + std::string(key) + "'");
}

int64_t parse_int(const std::string& text, const std::string& what, int64_t min, int64_t max) {
  const std::string t = trim(text);
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(t.c_str(), &end, 10);
  require(!t.empty() && end == t.c_str() + t.size() && errno != ERANGE, ErrorCode::kInvalidArgument,
          what + ": '" + text + "' is not an integer");
  require(v >= min && v <= max, ErrorCode::kInvalidArgument,
          what + ": " + text + " is outside [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  return static_cast<int64_t>(v);
}

double parse_double(const std::string& text, const std::string& what) {
  const std::string t = trim(text);
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  require(!t.empty() && end == t.c_str() + t.size() && errno != ERANGE && std::isfinite(v),
          ErrorCode::kInvalidArgument, what + ": '" + text + "' is not a finite number");
  return v;
}

std::vector<int32_t> parse_int_list(const std::string& text, const std::string& what, int64_t min, int64_t max) {
  std::vector<int32_t> out;
  require(!trim(text).empty(), ErrorCode::kInvalidArgument, what + ": the list is empty");
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    out.push_back(static_cast<int32_t>(
        parse_int(item, what + " (item " + std::to_string(out.size() + 1) + ")", min, max)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

ArgParser::ArgParser(std::string command, std::string synopsis)
    : command_(std::move(command)), synopsis_(std::move(synopsis)) {}

ArgParser::Option& ArgParser::add(const std::string& names, const std::string& metavar, const std::string& help,
                                  std::function<void(const std::string&)> apply) {
  Option o;
  o.names = split_names(names);
  o.metavar = metavar;
  o.help = help;
  o.apply = std::move(apply);
  options_.push_back(std::move(o));
  return options_.back();
}

void ArgParser::add_flag(const std::string& names, bool* out, const std::string& help) {
  add(names, "", help, [out](const std::string&) { *out = true; });
}

void ArgParser::add_string(const std::string& names, std::string* out, const std::string& metavar,
                           const std::string& help) {
  add(names, metavar, help, [out](const std::string& v) { *out = v; });
}

void ArgParser::add_strings(const std::string& names, std::vector<std::string>* out, const std::string& metavar,
                            const std::string& help) {
  add(names, metavar, help, [out](const std::string& v) { out->push_back(v); });
}

void ArgParser::add_int(const std::string& names, int32_t* out, const std::string& metavar, const std::string& help,
                        int64_t min, int64_t max) {
  const std::string what = split_names(names).back();
  add(names, metavar, help,
      [out, what, min, max](const std::string& v) { *out = static_cast<int32_t>(parse_int(v, what, min, max)); });
}

void ArgParser::add_int64(const std::string& names, int64_t* out, const std::string& metavar,
                          const std::string& help, int64_t min, int64_t max) {
  const std::string what = split_names(names).back();
  add(names, metavar, help, [out, what, min, max](const std::string& v) { *out = parse_int(v, what, min, max); });
}

void ArgParser::add_float(const std::string& names, float* out, const std::string& metavar, const std::string& help,
                          double min, double max) {
  const std::string what = split_names(names).back();
  add(names, metavar, help, [out, what, min, max](const std::string& v) {
    const double d = parse_double(v, what);
    std::ostringstream range;
    range << "[" << min << ", " << max << "]";
    require(d >= min && d <= max, ErrorCode::kInvalidArgument, what + ": " + v + " is outside " + range.str());
    // A double beyond float's range would become infinity here and be refused later with a
    // message that no longer shows what was typed.
    require(std::fabs(d) <= std::numeric_limits<float>::max(), ErrorCode::kInvalidArgument,
            what + ": " + v + " is too large (the largest value is 3.4e38)");
    *out = static_cast<float>(d);
  });
}

void ArgParser::add_custom(const std::string& names, const std::string& metavar, const std::string& help,
                           std::function<void(const std::string& value)> parse) {
  add(names, metavar, help, std::move(parse));
}

void ArgParser::add_flag(const SharedOption& o, bool* out, const std::string& note) {
  add(o.names, "", with_note(o.help, note), [out](const std::string&) { *out = true; }).shared = true;
}

void ArgParser::add_string(const SharedOption& o, std::string* out, const std::string& note) {
  add(o.names, o.metavar, with_note(o.help, note), [out](const std::string& v) { *out = v; }).shared = true;
}

void ArgParser::add_int(const SharedOption& o, int32_t* out, int64_t min, int64_t max, const std::string& note) {
  const std::string what = split_names(o.names).front();
  add(o.names, o.metavar, with_note(o.help, note),
      [out, what, min, max](const std::string& v) { *out = static_cast<int32_t>(parse_int(v, what, min, max)); })
      .shared = true;
}

void ArgParser::add_custom(const SharedOption& o, std::function<void(const std::string& value)> parse,
                           const std::string& note) {
  add(o.names, o.metavar, with_note(o.help, note), std::move(parse)).shared = true;
}

void ArgParser::allow_positionals(std::vector<std::string>* out, const std::string& metavar) {
  positionals_ = out;
  positional_metavar_ = metavar;
}

ArgParser::Option* ArgParser::find(const std::string& name) {
  for (auto& o : options_) {
    for (const auto& n : o.names) {
      if (n == name) return &o;
    }
  }
  return nullptr;
}

const ArgParser::Option* ArgParser::find(const std::string& name) const {
  return const_cast<ArgParser*>(this)->find(name);
}

bool ArgParser::seen(const std::string& name) const {
  const Option* o = find(name);
  return o != nullptr && o->seen;
}

bool ArgParser::parse(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      std::fputs(usage().c_str(), stdout);
      return false;
    }
    if (a == "--version" && find(a) == nullptr) {  // `registry --version V` is the model's version
      std::printf("%s\n", version_string().c_str());
      return false;
    }
    if (a.size() < 2 || a[0] != '-' || a == "--") {
      if (a == "--") {  // everything after "--" is positional
        for (size_t j = i + 1; j < args.size(); ++j) {
          require(positionals_ != nullptr, ErrorCode::kInvalidArgument,
                  "unexpected argument '" + args[j] + "'");
          positionals_->push_back(args[j]);
        }
        break;
      }
      require(positionals_ != nullptr, ErrorCode::kInvalidArgument,
              "unexpected argument '" + a + "' (options start with -; see --help)");
      positionals_->push_back(a);
      continue;
    }
    std::string name = a;
    std::string value;
    bool has_value = false;
    const size_t eq = a.find('=');
    if (a.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
      has_value = true;
    }
    Option* o = find(name);
    if (o == nullptr) {
      for (const auto& so : shared_options()) {
        const auto names = split_names(so.names);
        for (const auto& n : names) {
          if (n == name) {
            throw Error(ErrorCode::kInvalidArgument, "option " + name + " (" + so.help + ") does not apply to `edgellm " +
                                                         command_ + "` (see edgellm " + command_ + " --help)");
          }
        }
      }
      throw Error(ErrorCode::kInvalidArgument, "unknown option '" + name + "' (see edgellm " + command_ + " --help)");
    }
    if (o->metavar.empty()) {
      require(!has_value, ErrorCode::kInvalidArgument, "option " + name + " takes no value");
    } else if (!has_value) {
      require(i + 1 < args.size(), ErrorCode::kInvalidArgument,
              "option " + name + " needs a value (" + o->metavar + ")");
      value = args[++i];
    }
    o->apply(value);
    o->seen = true;
  }
  return true;
}

std::string ArgParser::usage() const {
  std::ostringstream out;
  out << "usage: edgellm " << command_ << " " << synopsis_ << "\n";
  const auto print = [&](const Option& o) {
    std::string left = "  " + join_names(o.names);
    if (!o.metavar.empty()) left += " " + o.metavar;
    out << left;
    if (left.size() < 30) {
      out << std::string(30 - left.size(), ' ');
    } else {
      out << "\n" << std::string(30, ' ');
    }
    out << o.help << "\n";
  };
  if (std::any_of(options_.begin(), options_.end(), [](const Option& o) { return !o.shared; })) {
    out << "\noptions:\n";
    for (const auto& o : options_) {
      if (!o.shared) print(o);
    }
  }
  out << "\nshared options (the same in every command that takes them; docs/cli.md):\n";
  for (const auto& o : options_) {
    if (o.shared) print(o);
  }
  out << "  -h, --help                  show this help\n";
  out << "  --version                   print the version\n";
  if (positionals_ != nullptr) out << "\narguments: " << positional_metavar_ << "\n";
  return out.str();
}

std::string read_text_file(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    throw Error(ErrorCode::kIo, what + " '" + path + "' is a directory, not a file");
  }
  std::ifstream in(path, std::ios::binary);
  require(static_cast<bool>(in), ErrorCode::kIo, "cannot open " + what + " '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  require(!in.bad(), ErrorCode::kIo, "cannot read " + what + " '" + path + "'");
  return ss.str();
}

}  // namespace edgellm::cli
