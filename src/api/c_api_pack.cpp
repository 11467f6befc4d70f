// The C ABI of pack files (edgellm.h, edgellm_pack_model; model/pack_file.h): an app writes the
// pack file once, after installing or updating a model, and every later load maps it.
#include <string>

#include "api/c_api_internal.h"
#include "kernels/kernels.h"
#include "kernels/repack.h"
#include "model/model.h"
#include "model/pack_file.h"

using namespace edgellm;
using edgellm::capi::fail;
using edgellm::capi::guard;

namespace {

constexpr int32_t kMaxPackThreads = 256;  // as a service's n_threads (engine/context.cpp)

// False when a load on this CPU would refuse the model's pack file (model_pack.cpp: every
// interleaved type in it needs a SIMD kernel here). True for a model with nothing to interleave:
// write_pack_file reports that one.
bool any_fast_packed_kernel(const Model& model) {
  for (const WeightView* w : model.matrices()) {
    if (!w->present() || !kernels::can_repack(w->type, w->n_in, w->n_out)) continue;
    if (!kernels::has_fast_packed_kernel(*kernels::packed_type_for(w->type))) return false;
  }
  return true;
}

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
    if (!any_fast_packed_kernel(*model)) {
      return fail(EDGELLM_ERR_UNSUPPORTED, std::string("this CPU's kernels (") + kernels::isa_name(kernels::active_isa()) +
                                               ") do not multiply this model's interleaved layouts with SIMD, so loads here "
                                               "would refuse a pack file: none is written");
    }
    write_pack_file(*model, pack_file_path(model_path, pack_dir != nullptr ? pack_dir : ""), n_threads);
    return EDGELLM_OK;
  });
}
