// The C ABI of pack files (edgellm.h, edgellm_pack_model; model/pack_file.h): an app writes the
// pack file once, after installing or updating a model, and every later load maps it.
#include <string>

#include "api/c_api_internal.h"
#include "kernels/kernels.h"
#include "model/model.h"
#include "model/pack_file.h"

using namespace edgellm;
using edgellm::capi::fail;
using edgellm::capi::guard;

namespace {

constexpr int32_t kMaxPackThreads = 256;  // as a service's n_threads (engine/context.cpp)

}  // namespace

edgellm_status edgellm_pack_model(const char* model_path, const char* pack_dir, int32_t n_threads) {
  return guard([&] {
    if (model_path == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "model_path is NULL");
    if (n_threads < 0 || n_threads > kMaxPackThreads) {
      return fail(EDGELLM_ERR_INVALID_ARGUMENT, "n_threads must be in [0, " + std::to_string(kMaxPackThreads) + "]");
    }
    if (pack_dir != nullptr && pack_dir[0] == '\0') {
      // For a load "" means "never map a pack file"; writing one beside the model here would be
      // the opposite, so an empty folder is refused rather than guessed.
      return fail(EDGELLM_ERR_INVALID_ARGUMENT, "pack_dir is empty: NULL writes beside the model, or name a folder");
    }
    // The file layout as it is: the writer repacks a slab of rows at a time, so packing holds
    // one slab beside the mapping, not a second copy of the weights.
    ModelLoadParams portable;
    portable.repack = RepackMode::kOff;
    const auto model = Model::load(model_path, portable);
    // On a CPU whose kernels do not multiply the interleaved layouts with SIMD every load would
    // refuse the file: say so instead of writing a model-sized file no load here will use.
    if (!pack_file_usable_here(*model)) {
      return fail(EDGELLM_ERR_UNSUPPORTED, std::string("this CPU's kernels (") + kernels::isa_name(kernels::active_isa()) +
                                               ") do not multiply this model's interleaved layouts with SIMD, so loads here "
                                               "would refuse a pack file: none is written");
    }
    write_pack_file(*model, pack_file_path(model_path, pack_dir != nullptr ? pack_dir : ""), n_threads);
    return EDGELLM_OK;
  });
}
