// Model::use_pack_file: maps a pack file (model/pack_file.h) and points the matrices it holds at
// it, after checking everything that can be checked without reading the weights; a refused file
// leaves the model untouched (all checks come before the first view is rebound).
#include <sys/mman.h>
#include <sys/stat.h>

#include <cstring>
#include <exception>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "kernels/kernels.h"
#include "kernels/repack.h"
#include "model/model.h"
#include "model/model_fingerprint.h"
#include "model/pack_file.h"

namespace edgellm {

namespace {

// Asks for the pack file's pages in 2 MiB folios, mapped as huge pages. Why: the forward pass
// streams all of them every token, and 4 KiB mappings cost a TLB miss per 4 KiB (the repacked
// buffer it replaces has huge pages, AlignedBuffer::advise_huge_pages). On a VM_HUGEPAGE file
// mapping a page fault reads ahead in PMD-sized folios, which are then PMD-mapped; without it the
// fault path reads small folios. Measured (TinyLlama pack file, 571 MiB, read from disk by
// touching every page): 6 MiB PMD-mapped without the advice, 570 MiB with it; a later mapping of
// the cached file touched every page in 30 ms (huge) vs 125-515 ms (small folios). Pages already
// cached in small folios stay small until evicted (write_pack_file drops its own). A hint: no-op
// where THP is off or the filesystem has no large folios.
void advise_huge_pages(const MappedFile& map) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (map.is_mapped() && map.size() > 0) {
    (void)::madvise(const_cast<uint8_t*>(map.data()), map.size(), MADV_HUGEPAGE);
  }
#else
  (void)map;
#endif
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

void Model::use_pack_file(const ModelLoadParams& params) {
  if (params.repack == RepackMode::kOff || params.pack_file == PackFileMode::kOff) {
    pack_status_ = "off";
    return;
  }
  std::string path = params.pack_path;
  if (path.empty()) {
    if (file_->mapping().path().empty()) {
      require(params.pack_file != PackFileMode::kRequire, ErrorCode::kInvalidArgument,
              "a pack file is required but the model is not a file and no pack_path was given");
      return;
    }
    path = pack_file_path(file_->mapping().path(), params.pack_dir);
    // The default location is only a guess: its absence is the normal case, not a refusal.
    if (params.pack_file == PackFileMode::kAuto && !file_exists(path)) {
      pack_status_ = "none at " + path;
      return;
    }
  }
  try {
    map_pack_file(path, params.repack == RepackMode::kOn);
    pack_status_ = "mapped " + path;
  } catch (const std::exception& e) {  // Error, or bad_alloc on a hostile header: only a cache miss
    if (params.pack_file == PackFileMode::kRequire) throw;
    pack_status_ = std::string("refused: ") + e.what();
    log_message(LogLevel::kWarn, "pack file not used, loading the portable model file instead: " + std::string(e.what()));
  }
}

void Model::map_pack_file(const std::string& path, bool any_isa) {
  std::unique_ptr<gguf::GgufFile> pack = gguf::GgufFile::open(path);  // kIo / kInvalidFile naming the path
  advise_huge_pages(pack->mapping());  // before any tensor page is faulted in
  const std::string where = "pack file '" + path + "'";
  const auto remake = std::string(": rebuild it with `edgellm pack ") +
                      (file_->mapping().path().empty() ? std::string("<model>") : file_->mapping().path()) + "`";

  const auto format = pack->get_int(kPackKeyFormatVersion);
  require(format.has_value(), ErrorCode::kInvalidFile, where + " has no " + kPackKeyFormatVersion + ": not a pack file");
  require(*format == kPackFileFormatVersion, ErrorCode::kUnsupported,
          where + " has format version " + std::to_string(*format) + "; this build reads " +
              std::to_string(kPackFileFormatVersion) + remake);
  const auto layout = pack->get_string(kPackKeyLayout);
  const auto layout_version = pack->get_int(kPackKeyLayoutVersion);
  require(layout.has_value() && layout_version.has_value(), ErrorCode::kInvalidFile,
          where + " does not say which kernel layout it holds (" + kPackKeyLayout + ", " + kPackKeyLayoutVersion + ")");
  require(*layout == kPackLayoutFamily && *layout_version == kernels::kPackedLayoutVersion, ErrorCode::kUnsupported,
          where + " holds the '" + *layout + "' layout version " + std::to_string(*layout_version) +
              ", but this build's kernels use '" + kPackLayoutFamily + "' version " +
              std::to_string(kernels::kPackedLayoutVersion) + remake);

  // u64 keys (a fingerprint uses all 64 bits: get_int would refuse half of them).
  const gguf::Value* fingerprint = pack->find(kPackKeyFingerprint);
  const gguf::Value* source_size = pack->find(kPackKeySourceSize);
  const std::string source_name = pack->get_string(kPackKeySourceName).value_or("?");
  require(fingerprint != nullptr && fingerprint->type == gguf::ValueType::kUint64 && source_size != nullptr &&
              source_size->type == gguf::ValueType::kUint64,
          ErrorCode::kInvalidFile,
          where + " does not name its model file (u64 " + kPackKeyFingerprint + ", " + kPackKeySourceSize + ")");
  const uint64_t ours = model_fingerprint(*file_);
  require(fingerprint->u == ours && source_size->u == file_->file_size(), ErrorCode::kInvalidFile,
          where + " was made from another model file ('" + source_name + "', " + std::to_string(source_size->u) +
              " bytes, fingerprint " + std::to_string(fingerprint->u) + "; this one: " +
              std::to_string(file_->file_size()) + " bytes, fingerprint " + std::to_string(ours) + ")" + remake);

  const auto types = pack->get_string_array(kPackKeyTypes);
  require(types.has_value() && types->size() == pack->tensors().size(), ErrorCode::kInvalidFile,
          where + ": " + kPackKeyTypes + " must name the type of each of its " + std::to_string(pack->tensors().size()) +
              " tensors");

  // The model's matrices by name (a tied head is `output_`, named token_embd.weight).
  std::unordered_map<std::string_view, WeightView*> by_name;
  for (WeightView* w : mutable_matrices()) {
    if (w->present()) by_name.emplace(w->name, w);
  }
  struct Binding {
    WeightView* w;
    TensorType packed;
    const gguf::TensorInfo* t;
  };
  std::vector<Binding> bindings;
  std::unordered_set<const WeightView*> bound;
  std::vector<uint8_t> group;  // one repacked 16-row group, for the spot check
  for (size_t i = 0; i < pack->tensors().size(); ++i) {
    const gguf::TensorInfo& t = pack->tensors()[i];
    const std::string tq = where + " tensor '" + std::string(t.name) + "'";
    const auto it = by_name.find(t.name);
    require(it != by_name.end(), ErrorCode::kInvalidFile, tq + " is not a matrix of this model" + remake);
    WeightView* w = it->second;
    require(bound.insert(w).second, ErrorCode::kInvalidFile, tq + " appears twice");
    const std::optional<TensorType> packed = tensor_type_from_name((*types)[i]);
    const std::optional<TensorType> expected = kernels::packed_type_for(w->type);
    require(expected.has_value() && kernels::can_repack(w->type, w->n_in, w->n_out), ErrorCode::kInvalidFile,
            tq + ": the model's " + tensor_type_name(w->type) + " matrix has no interleaved layout" + remake);
    require(packed == expected, ErrorCode::kInvalidFile,
            tq + " has type '" + std::string((*types)[i]) + "', expected " + tensor_type_name(*expected) + remake);
    const size_t packed_row_bytes = tensor_row_bytes(*expected, w->n_in);
    require(t.type == TensorType::I8 && t.n_dims == 2 && t.ne[0] == static_cast<int64_t>(packed_row_bytes) &&
                t.ne[1] == w->n_out,
            ErrorCode::kInvalidFile,
            tq + " is " + tensor_type_name(t.type) + " " + t.shape_string() + ", expected i8 [" +
                std::to_string(packed_row_bytes) + ", " + std::to_string(w->n_out) + "]" + remake);
    require(reinterpret_cast<uintptr_t>(t.data) % 64 == 0, ErrorCode::kInvalidFile, tq + " data is not 64-byte aligned");
    // A CPU without SIMD kernels for the packed layouts would run them on the scalar reference,
    // slower than the file layout's own kernels: refuse (repack=on asks for them anyway).
    require(any_isa || kernels::has_fast_packed_kernel(*expected), ErrorCode::kUnsupported,
            where + " holds " + tensor_type_name(*expected) + " matrices, which this CPU's kernels (" +
                kernels::isa_name(kernels::active_isa()) + ") do not multiply with SIMD");
    // Spot check: the first group must be the repack of the model's first 16 rows.
    group.resize(packed_row_bytes * static_cast<size_t>(kernels::kPackRows));
    kernels::repack_rows(w->type, w->data, group.data(), w->n_in, 0, kernels::kPackRows);
    require(std::memcmp(group.data(), t.data, group.size()) == 0, ErrorCode::kInvalidFile,
            tq + ": its first rows are not the repacked rows of the model (stale layout or foreign data)" + remake);
    bindings.push_back({w, *expected, &t});
  }
  // Every check passed: rebind. The model file's pages of these matrices are never read again:
  // drop the few the fingerprint and the spot check mapped (as repack_weights drops all it read),
  // so the resident set holds the packed copy only.
  const MappedFile& map = file_->mapping();
  for (const Binding& b : bindings) {
    map.release_pages(static_cast<size_t>(b.w->data - map.data()), b.w->row_bytes * static_cast<size_t>(b.w->n_out));
    b.w->type = b.packed;
    b.w->data = b.t->data;
    b.w->row_bytes = tensor_row_bytes(b.packed, b.w->n_in);
  }
  const bool head_packed = output_tied_ && kernels::is_packed_type(output_.type);
  if (head_packed) token_embd_ = output_;
  pack_mapped_tensors_ = static_cast<int>(bindings.size());
  pack_file_ = std::move(pack);
}

}  // namespace edgellm
