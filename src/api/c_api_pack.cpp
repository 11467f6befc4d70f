// The C ABI of pack files (edgellm.h, edgellm_pack_model; model/pack_file.h): an app writes the
// pack file once, after installing or updating a model, and every later load maps it.
#include <string>

#include "api/c_api_internal.h"
#include "model/model.h"
#include "model/pack_file.h"

using namespace edgellm;
using edgellm::capi::fail;
using edgellm::capi::guard;

edgellm_status edgellm_pack_model(const char* model_path, const char* pack_dir, int32_t n_threads) {
  return guard([&] {
    if (model_path == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "model_path is NULL");
    if (n_threads < 0) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "n_threads must be >= 0");
    // The file layout as it is: the writer repacks a slab of rows at a time, so packing holds
    // one slab beside the mapping, not a second copy of the weights.
    ModelLoadParams portable;
    portable.repack = RepackMode::kOff;
    const auto model = Model::load(model_path, portable);
    write_pack_file(*model, pack_file_path(model_path, pack_dir != nullptr ? pack_dir : ""), n_threads);
    return EDGELLM_OK;
  });
}
