// `edgellm quantize IN.gguf OUT.gguf TYPE [--rule 'REGEX=type' ...] [--rules-file F] [--threads N]
// [--allow-requantize] [--pure]`: converts a model's weight matrices to TYPE (a llama.cpp file
// type such as Q4_K_M, or a plain tensor type such as q8_0), optionally overriding single tensors
// with rules. Prints one line per tensor and a total; the output appears only when complete.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_args.h"
#include "command.h"
#include "interrupt.h"
#include "progress.h"
#include "core/error.h"
#include "kernels/tensor_type.h"
#include "tools/quant/quant_rules.h"
#include "tools/quant/quantize_model.h"

namespace edgellm::cli {
namespace {

std::string read_rules_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  require(static_cast<bool>(in), ErrorCode::kIo, "cannot open rules file '" + path + "': " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string human_bytes(double b) {
  char buf[32];
  if (b >= 1024.0 * 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024 * 1024));
  } else if (b >= 1024.0 * 1024) {
    std::snprintf(buf, sizeof buf, "%.2f MiB", b / (1024.0 * 1024));
  } else {
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  }
  return buf;
}

int quantize_command(const std::vector<std::string>& args) {
  std::vector<std::string> positionals;
  std::vector<std::string> rule_texts;
  std::string rules_file;
  int32_t threads = 0;
  bool allow_requantize = false;
  bool pure = false;
  ArgParser ap("quantize", "IN.gguf OUT.gguf TYPE [options]\n\nTYPE: " + quant::file_type_names());
  ap.allow_positionals(&positionals, "IN OUT TYPE");
  ap.add_strings("--rule", &rule_texts, "REGEX=type",
                 "give tensors whose name matches REGEX this type (first matching rule wins; repeatable)");
  ap.add_string("--rules-file", &rules_file, "FILE", "rules, one REGEX=type per line, # comments (after --rule ones)");
  ap.add_int(shared_option("threads"), &threads, 0, 1024, "quantization threads; 0 = all cores (default)");
  ap.add_flag("--allow-requantize", &allow_requantize, "accept already-quantized inputs other than q8_0");
  ap.add_flag("--pure", &pure, "no mix adjustments: output/attn_v/ffn_down get TYPE too");
  if (!ap.parse(args)) return 0;
  require(positionals.size() == 3, ErrorCode::kInvalidArgument,
          "expected IN.gguf OUT.gguf TYPE, got " + std::to_string(positionals.size()) + " positional argument(s)");

  quant::QuantizeParams params;
  params.ftype = quant::file_type_from_name(positionals[2]);
  for (const auto& r : rule_texts) params.rules.push_back(quant::parse_type_rule(r));
  if (!rules_file.empty()) {
    auto more = quant::parse_type_rules(read_rules_file(rules_file), rules_file);
    for (auto& r : more) params.rules.push_back(std::move(r));
  }
  params.n_threads = threads;
  params.allow_requantize = allow_requantize;
  params.pure = pure;
  params.cancel = interrupt_flag();
  params.on_warning = [](const std::string& w) { std::fprintf(stderr, "edgellm quantize: warning: %s\n", w.c_str()); };
  ProgressDisplay bar("quantize");
  params.on_tensor = [&bar](const quant::TensorReport& r) {
    bar.clear();  // the tensor's line on stdout, then the bar again on stderr
    std::printf("[%4zu/%4zu] %-32s %-16s %6s -> %-6s %10s -> %10s", r.index + 1, r.n_tensors, r.name.c_str(),
                r.shape.c_str(), tensor_type_name(r.from), tensor_type_name(r.to),
                human_bytes(static_cast<double>(r.bytes_in)).c_str(), human_bytes(static_cast<double>(r.bytes_out)).c_str());
    if (r.fallback) {
      std::printf("   note: %s", r.reason.c_str());
    } else if (!r.reason.empty() && r.from != r.to) {
      std::printf("   (%s)", r.reason.c_str());
    }
    std::printf("\n");
    std::fflush(stdout);
    bar.update(static_cast<double>(r.index + 1) / static_cast<double>(r.n_tensors), r.name);
  };

  std::printf("edgellm quantize: %s -> %s as %s (general.file_type %u)\n", positionals[0].c_str(),
              positionals[1].c_str(), quant::file_type_name(params.ftype), static_cast<unsigned>(params.ftype));
  // First Ctrl-C: stop after the current chunk and remove the temporary file; a second one kills.
  const SigintScope sigint;
  quant::QuantizeSummary s;
  try {
    s = quant::quantize_model(positionals[0], positionals[1], params);
    bar.finish();
  } catch (const Error& e) {
    bar.clear();
    if (e.code() == ErrorCode::kCancelled) {
      std::fprintf(stderr, "edgellm quantize: interrupted; '%s' was not written\n", positionals[1].c_str());
      return 130;  // 128 + SIGINT
    }
    if (std::string(e.what()).find(std::strerror(ENOSPC)) != std::string::npos) {
      std::fprintf(stderr, "edgellm quantize: error: no space left on device while writing '%s'; it was not written\n",
                   positionals[1].c_str());
      return 1;
    }
    throw;
  }
  std::printf("tensor data: %s -> %s, %.3f bits per weight (%lld weights); file %s\n",
              human_bytes(static_cast<double>(s.bytes_in)).c_str(), human_bytes(static_cast<double>(s.bytes_out)).c_str(),
              s.bits_per_weight(), static_cast<long long>(s.n_weight_elements),
              human_bytes(static_cast<double>(s.file_bytes)).c_str());
  std::printf("%zu of %zu tensors converted, %zu fell back to another type, %.2f s\n", s.n_quantized, s.n_tensors,
              s.n_fallback, s.seconds);
  return 0;
}

const CommandRegistration kRegistration("quantize", "convert a GGUF model to another weight type (q4_0 ... Q4_K_M)",
                                        quantize_command);

}  // namespace
}  // namespace edgellm::cli
