// `edgellm convert DIR OUT.gguf [--type T] [--rule 'REGEX=type' ...] [--pure] [--name NAME]
// [--threads N] [--verbose]`: a Hugging Face model directory (config.json, *.safetensors,
// tokenizer.json) to a GGUF file llama.cpp loads too, optionally quantized on the way
// (src/tools/convert/convert_model.h, docs/convert.md). The output appears only when complete.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "cli_args.h"
#include "progress.h"
#include "command.h"
#include "core/error.h"
#include "interrupt.h"
#include "kernels/tensor_type.h"
#include "tools/convert/convert_model.h"
#include "tools/quant/quant_rules.h"

namespace edgellm::cli {
namespace {

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

int convert_command(const std::vector<std::string>& args) {
  std::vector<std::string> positionals;
  std::vector<std::string> rule_texts;
  convert::ConvertParams params;
  int32_t threads = 0;
  bool verbose = false;
  bool quiet = false;
  ArgParser ap("convert",
               "HF_DIR OUT.gguf [options]\n\nHF_DIR: a Hugging Face model directory (config.json, "
               "model.safetensors or model.safetensors.index.json + shards, tokenizer.json, "
               "tokenizer_config.json; BERT: vocab.txt without tokenizer.json, modules.json + 1_Pooling for the "
               "pooling)\nTYPE: auto, " +
                   quant::file_type_names());
  ap.allow_positionals(&positionals, "HF_DIR OUT.gguf");
  ap.add_string("--type,--outtype", &params.type, "TYPE",
                "tensor type of the weight matrices (default auto: bf16 for a bf16 checkpoint, else f16; a quantized "
                "type such as q8_0 or Q4_K_M quantizes on the way)");
  ap.add_strings("--rule", &rule_texts, "REGEX=type",
                 "give GGUF tensors whose name matches REGEX this type (first match wins; repeatable)");
  ap.add_flag("--pure", &params.pure, "quantized types: no mix adjustments (output/attn_v/ffn_down get TYPE too)");
  ap.add_string("--name", &params.name, "NAME",
                "general.name (default: config.json _name_or_path, else the directory)");
  ap.add_int(shared_option("threads"), &threads, 0, 1024, "conversion threads; default 0: all cores");
  ap.add_flag("-v,--verbose", &verbose, "print one line per tensor");
  ap.add_flag("-q,--quiet", &quiet, "no progress lines");
  if (!ap.parse(args)) return 0;
  require(positionals.size() == 2, ErrorCode::kInvalidArgument,
          "expected HF_DIR OUT.gguf, got " + std::to_string(positionals.size()) + " positional argument(s)");
  for (const auto& r : rule_texts) params.rules.push_back(quant::parse_type_rule(r));
  params.n_threads = threads;
  params.cancel = interrupt_flag();
  params.on_warning = [](const std::string& w) { std::fprintf(stderr, "edgellm convert: warning: %s\n", w.c_str()); };
  std::optional<ProgressDisplay> progress;
  if (!quiet) {
    progress.emplace("convert");
    params.on_progress = progress->callback();
  }
  if (verbose) {
    params.on_tensor = [](const convert::ConvertedTensor& t) {
      std::printf("[%4zu/%4zu] %-32s %-18s %9s -> %-6s %10s <- %s\n", t.index + 1, t.n_tensors, t.name.c_str(),
                  t.shape.c_str(), t.from.c_str(), tensor_type_name(t.to),
                  human_bytes(static_cast<double>(t.bytes_out)).c_str(),
                  t.source.empty() ? "(generated)" : t.source.c_str());
      std::fflush(stdout);
    };
  }

  const SigintScope sigint;
  convert::ConvertSummary s;
  try {
    s = convert::convert_hf_model(positionals[0], positionals[1], params);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kCancelled) {
      std::fprintf(stderr, "edgellm convert: interrupted; '%s' was not written\n", positionals[1].c_str());
      return 130;  // 128 + SIGINT
    }
    if (std::string(e.what()).find(std::strerror(ENOSPC)) != std::string::npos) {
      std::fprintf(stderr, "edgellm convert: error: no space left on device while writing '%s'; it was not written\n",
                   positionals[1].c_str());
      return 1;
    }
    throw;
  }
  std::printf("edgellm convert: %s (%s) -> %s: %s, %zu tensors, %lld parameters, vocab %lld (%s, pre %s)\n",
              positionals[0].c_str(), s.hf_class.c_str(), positionals[1].c_str(), s.arch.c_str(), s.n_tensors,
              static_cast<long long>(s.n_params), static_cast<long long>(s.n_vocab), s.tokenizer_model.c_str(),
              s.tokenizer_pre.c_str());
  if (!s.pooling.empty()) std::printf("pooling %s (%s)\n", s.pooling.c_str(), s.pooling_source.c_str());
  std::printf("type %s (general.file_type %u): tensor data %s -> %s, file %s, %.2f s\n", quant::file_type_name(s.ftype),
              static_cast<unsigned>(s.ftype), human_bytes(static_cast<double>(s.bytes_in)).c_str(),
              human_bytes(static_cast<double>(s.bytes_out)).c_str(),
              human_bytes(static_cast<double>(s.file_bytes)).c_str(), s.seconds);
  return 0;
}

const CommandRegistration kConvertRegistration(
    "convert", "Hugging Face checkpoint (safetensors + tokenizer.json) -> GGUF (--type to quantize)", convert_command);

}  // namespace
}  // namespace edgellm::cli
