// `edgellm pack MODEL.gguf [-o OUT] [--threads N]`: writes the model's pack file (model/pack_file.h:
// its repackable matrices in the interleaved X16 layout), by default beside the model as
// MODEL.gguf.x16.pack, where every later load finds and maps it instead of repacking. Then loads
// the model with it, as an app would, and prints the load time.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "cli_args.h"
#include "command.h"
#include "generation_options.h"
#include "progress.h"
#include "core/error.h"
#include "model/model.h"
#include "model/pack_file.h"

namespace edgellm::cli {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

int pack_command(const std::vector<std::string>& args) {
  std::vector<std::string> positionals;
  std::string out;
  int32_t threads = 0;
  ArgParser ap("pack", "MODEL.gguf [-o OUT] [options]\n\nStores MODEL's repacked (interleaved) matrices once, so loads "
                       "map them instead of repacking. The model file is not changed.");
  ap.allow_positionals(&positionals, "MODEL");
  ModelOptions model_opt;
  add_model_options(ap, &model_opt, "or as the argument");
  ap.add_string("-o,--output", &out, "FILE", "where to write it (default MODEL.x16.pack, where loads look for it)");
  ap.add_int(shared_option("threads"), &threads, 0, 1024, "repacking threads; default 0");
  if (!ap.parse(args)) return 0;
  require(positionals.size() + (model_opt.model.empty() ? 0 : 1) == 1, ErrorCode::kInvalidArgument,
          "expected one MODEL.gguf (as the argument or -m), got " +
              std::to_string(positionals.size() + (model_opt.model.empty() ? 0 : 1)));
  if (model_opt.model.empty()) model_opt.model = positionals[0];
  const std::string model_path = resolve_model_path(model_opt);
  if (out.empty()) out = default_pack_file_path(model_path);

  const auto t0 = std::chrono::steady_clock::now();
  ModelLoadParams portable;
  portable.repack = RepackMode::kOff;  // the file layout: the writer repacks a slab at a time
  ProgressDisplay bar("pack");
  const PackFileStats s = write_pack_file(*Model::load(model_path, portable), out, threads, bar.callback());
  bar.finish();
  std::printf("edgellm pack: %s -> %s: %d matrices, %.1f MiB packed, file %.1f MiB, %.0f ms\n", model_path.c_str(),
              out.c_str(), s.tensors, static_cast<double>(s.packed_bytes) / (1 << 20),
              static_cast<double>(s.file_bytes) / (1 << 20), ms_since(t0));

  // Check it the way an app will use it: a load that must map it.
  ModelLoadParams with_pack;
  with_pack.pack_file = PackFileMode::kRequire;
  with_pack.pack_path = out;
  with_pack.repack = RepackMode::kOn;  // accept it even where this CPU lacks the SIMD kernels
  const auto t1 = std::chrono::steady_clock::now();
  const auto m = Model::load(model_path, with_pack);
  std::printf("edgellm pack: checked: a load maps %d matrices from it in %.1f ms (%d repacked at load)\n",
              m->pack_mapped_tensors(), ms_since(t1), m->repacked_tensors());
  return 0;
}

const CommandRegistration kPackRegistration("pack", "store a model's repacked weights beside it, for millisecond loads",
                                        pack_command);

}  // namespace
}  // namespace edgellm::cli
