// `edgellm synth`: write a synthetic GGUF model with the exact shapes, tensor types and
// metadata of a real checkpoint (random, seeded weights), for benchmarks and tests that must not
// depend on multi-GB downloads.
#include <sys/statvfs.h>

#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "cli_args.h"
#include "command.h"
#include "interrupt.h"
#include "progress.h"
#include "core/error.h"
#include "kernels/tensor_type.h"
#include "tools/quant/quant_rules.h"
#include "tools/synth/model_shapes.h"
#include "tools/synth/synth_model.h"

namespace edgellm::cli {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

int synth_command(const std::vector<std::string>& args) {
  synth::SynthOptions o;
  std::string out;
  int64_t seed = 1;
  bool quiet = false;
  bool list = false;
  ArgParser ap("synth", "--shape NAME --type TYPE -o OUT.gguf [options]");
  ap.add_string("--shape", &o.shape, "NAME", "model shape: " + synth::model_shape_names());
  ap.add_string("--type", &o.type, "TYPE", "file type (default q4_0): " + quant::file_type_names());
  ap.add_string("-o,--output", &out, "FILE", "GGUF file to write");
  ap.add_custom(shared_option("seed"), [&](const std::string& v) { seed = parse_int(v, "--seed", 0, INT64_MAX); },
                "of the weights; default 1; same seed, same bytes");
  ap.add_string("--tokenizer", &o.tokenizer, "FILE",
                "tokenizer.json or a .gguf to take tokenizer.* from (default: placeholder vocabulary)");
  ap.add_int("--layers", &o.n_layer, "N", "override the block count (small files for tests)", 1, 100000);
  ap.add_int(shared_option("threads"), &o.n_threads, 0, 4096, "default 0: all");
  ap.add_flag("-q,--quiet", &quiet, "no progress on stderr");
  bool force = false;
  ap.add_flag("--force", &force, "write even a file larger than 64 GiB (the free space is checked in any case)");
  ap.add_flag("--list-shapes", &list, "print the known shapes and exit");
  if (!ap.parse(args)) return 0;

  if (list) {
    std::printf("%-16s %-6s %7s %6s %5s %6s %5s %4s %5s %10s %5s %s\n", "shape", "arch", "vocab", "embd", "layer", "ff",
                "head", "kv", "hdim", "rope_base", "tied", "rope_freqs");
    for (const auto& s : synth::model_shapes()) {
      std::printf("%-16s %-6s %7d %6d %5d %6d %5d %4d %5d %10.0f %5s %s\n", s.name, s.arch, s.n_vocab, s.n_embd,
                  s.n_layer, s.n_ff, s.n_head, s.n_head_kv, s.head_dim, static_cast<double>(s.rope_freq_base),
                  s.tied_embeddings ? "yes" : "no", s.has_rope_freqs() ? "llama3" : "-");
    }
    return 0;
  }
  require(!o.shape.empty(), ErrorCode::kInvalidArgument, "--shape is required (known: " + synth::model_shape_names() + ")");
  require(!out.empty(), ErrorCode::kInvalidArgument, "-o/--output is required");
  o.seed = static_cast<uint64_t>(seed);
  // The file's size is known before anything is written: refuse what cannot fit, and a size
  // no test or benchmark needs unless asked for (--layers 100000 asked for ~46 GB).
  o.before_write = [&](uint64_t bytes) {
    constexpr uint64_t kLargeFile = uint64_t{64} << 30;
    const std::string human = std::to_string(static_cast<double>(bytes) / (1024.0 * 1024 * 1024)).substr(0, 6) + " GiB";
    require(force || bytes <= kLargeFile, ErrorCode::kInvalidArgument,
            "synth: the file would be " + human + " (over 64 GiB); check --layers, or pass --force");
    std::filesystem::path dir = std::filesystem::absolute(out).parent_path();
    struct statvfs fs {};
    if (::statvfs(dir.c_str(), &fs) == 0) {
      const uint64_t free_bytes = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
      require(bytes <= free_bytes, ErrorCode::kIo,
              "synth: the file would be " + human + " but " + dir.string() + " has only " +
                  std::to_string(static_cast<double>(free_bytes) / (1024.0 * 1024 * 1024)).substr(0, 6) + " GiB free");
    }
  };
  // Ctrl-C or `kill`: stop after the current tensor and remove the temporary file.
  const SigintScope interrupt(/*clear_flag=*/true, /*also_sigterm=*/true);
  o.cancel = interrupt_flag();

  ProgressDisplay bar("synth");
  const synth::SynthReport r = synth::write_synth_model(o, out, [&](const synth::SynthProgress& p) {
    if (quiet || p.bytes_total == 0) return;
    bar.update_bytes(p.bytes_done, p.bytes_total,
                     std::to_string(p.tensor_index + 1) + "/" + std::to_string(p.n_tensors) + " tensors");
  });
  if (quiet) {
    bar.clear();
  } else {
    bar.finish();
  }
  std::string types;
  for (const auto& [type, count] : r.type_counts) {
    if (!types.empty()) types += ", ";
    types += std::string(tensor_type_name(type)) + " x" + std::to_string(count);
  }
  std::printf("wrote %s: %s %s, %" PRIu64 " parameters, %zu tensors (%s), %.2f MiB in %.1f s\n", out.c_str(),
              o.shape.c_str(), o.type.c_str(), r.n_params, r.n_tensors, types.c_str(),
              static_cast<double>(r.file_bytes) / kMiB, r.seconds);
  return 0;
}

const CommandRegistration kSynthRegistration("synth", "write a synthetic GGUF model of a real model's shape", synth_command);

}  // namespace
}  // namespace edgellm::cli
