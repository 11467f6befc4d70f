// write_pack_file: the writing half of model/pack_file.h (the loading half is Model's,
// model_pack.cpp, since it rebinds the model's weight views).
#include "model/pack_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_writer.h"
#include "kernels/kernels.h"
#include "kernels/repack.h"
#include "model/model.h"
#include "model/model_fingerprint.h"
#include "platform/cpu_topology.h"
#include "platform/shared_thread_pool.h"

namespace edgellm {

namespace {

// Rows repacked per sink write: a few MB, whole 16-row groups (a slab of one matrix).
constexpr size_t kSlabBytes = size_t{8} << 20;
// Rows per work item inside a slab (whole groups), taken by the pool's threads.
constexpr int64_t kItemRows = 64;

std::string file_name_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A matrix the file stores: its view in the model and its X16 type.
struct PackedMatrix {
  const WeightView* w;
  TensorType packed;
  size_t packed_row_bytes;
};

}  // namespace

bool pack_file_usable_here(const Model& model) {
  for (const WeightView* w : model.matrices()) {
    if (!w->present() || !kernels::can_repack(w->type, w->n_in, w->n_out)) continue;
    if (!kernels::has_fast_packed_kernel(*kernels::packed_type_for(w->type))) return false;
  }
  return true;
}

std::string default_pack_file_path(const std::string& model_path) {
  return model_path + "." + kPackLayoutFamily + ".pack";
}

std::string pack_file_path(const std::string& model_path, const std::string& dir) {
  if (dir.empty()) return default_pack_file_path(model_path);
  const size_t slash = model_path.find_last_of('/');
  const std::string name = slash == std::string::npos ? model_path : model_path.substr(slash + 1);
  return (dir.back() == '/' ? dir : dir + "/") + default_pack_file_path(name);
}

PackFileStats write_pack_file(const Model& model, const std::string& path, int n_threads, const ProgressFn& progress) {
  std::vector<PackedMatrix> matrices;
  for (const WeightView* w : model.matrices()) {
    if (!w->present()) continue;
    if (kernels::is_packed_type(w->type)) {  // already repacked at load (or mapped): copy it
      matrices.push_back({w, w->type, w->row_bytes});
    } else if (kernels::can_repack(w->type, w->n_in, w->n_out)) {
      const TensorType packed = *kernels::packed_type_for(w->type);
      matrices.push_back({w, packed, tensor_row_bytes(packed, w->n_in)});
    }
  }
  require(!matrices.empty(), ErrorCode::kInvalidArgument,
          "the model has no matrix with an interleaved layout (q4_0, q5_0, q8_0, q4_K, q5_K on AVX-512, q6_K with a multiple of 16 "
          "rows): a pack file would be empty");

  const gguf::GgufFile& src = model.gguf();
  gguf::GgufWriter out;
  out.set_alignment(kPackFileAlignment);
  out.set_u32(kPackKeyFormatVersion, kPackFileFormatVersion);
  out.set_string(kPackKeyLayout, kPackLayoutFamily);
  out.set_u32(kPackKeyLayoutVersion, kernels::kPackedLayoutVersion);
  out.set_u64(kPackKeyFingerprint, model_fingerprint(src));
  out.set_u64(kPackKeySourceSize, src.file_size());
  out.set_string(kPackKeySourceName, src.mapping().path().empty() ? "in-memory GGUF" : file_name_of(src.mapping().path()));
  out.set_string(kPackKeyIsa, kernels::isa_name(kernels::active_isa()));
  std::vector<std::string> types;
  PackFileStats stats;
  for (const PackedMatrix& m : matrices) {
    types.emplace_back(tensor_type_name(m.packed));
    out.add_tensor_info(m.w->name, TensorType::I8,
                        {static_cast<int64_t>(m.packed_row_bytes), static_cast<int64_t>(m.w->n_out)});
    stats.packed_bytes += m.packed_row_bytes * static_cast<uint64_t>(m.w->n_out);
  }
  out.set_array_string(kPackKeyTypes, types);
  stats.tensors = static_cast<int>(matrices.size());
  stats.file_bytes = out.file_size();

  const int threads = n_threads > 0 ? n_threads : default_thread_count();
  std::shared_ptr<ThreadPool> pool = shared_thread_pool(threads);
  std::vector<uint8_t> slab;
  uint64_t total_bytes = 0, done_bytes = 0;
  for (const PackedMatrix& m : matrices) total_bytes += m.w->row_bytes * static_cast<uint64_t>(m.w->n_out);
  out.write(path, [&](size_t index, const gguf::WriterTensor& wt, gguf::TensorSink& sink) {
    const PackedMatrix& m = matrices[index];
    const WeightView& w = *m.w;
    done_bytes += w.row_bytes * static_cast<uint64_t>(w.n_out);
    const auto report = [&] {
      if (progress) progress(total_bytes > 0 ? static_cast<double>(done_bytes) / static_cast<double>(total_bytes) : 1.0, wt.name);
    };
    if (kernels::is_packed_type(w.type)) {
      sink.write(w.data, w.row_bytes * static_cast<size_t>(w.n_out));
      report();
      return;
    }
    const int64_t slab_rows =
        std::max<int64_t>(kernels::kPackRows, static_cast<int64_t>(kSlabBytes / m.packed_row_bytes) / kernels::kPackRows *
                                                  kernels::kPackRows);
    slab.resize(static_cast<size_t>(std::min(slab_rows, w.n_out)) * m.packed_row_bytes);
    for (int64_t r0 = 0; r0 < w.n_out; r0 += slab_rows) {
      const int64_t rows = std::min(slab_rows, w.n_out - r0);
      // repack_rows sees the slab's source rows as a whole tensor of `rows` rows.
      const uint8_t* slab_src = w.row(r0);
      pool->parallel_for(
          (rows + kItemRows - 1) / kItemRows,
          [&](int64_t i, int) {
            const int64_t a = i * kItemRows;
            kernels::repack_rows(w.type, slab_src, slab.data(), w.n_in, a, std::min(rows, a + kItemRows));
          },
          threads);
      sink.write(slab.data(), static_cast<size_t>(rows) * m.packed_row_bytes);
      // The slab's source rows are not read again: drop them from this process's mapping, so
      // packing holds one slab, not the whole model file, beside whatever else the app holds
      // (a service with its repacked copy: without this, ~2x the model at the end).
      src.mapping().release_pages(static_cast<size_t>(slab_src - src.mapping().data()),
                                  static_cast<size_t>(rows) * w.row_bytes);
    }
    report();
  });
  // Drop the file's pages from the page cache (the writer fsynced it): written a slab at a time,
  // they sit in small folios, which a mapping must map 4 KiB at a time. Read back by the first
  // load, they come in through readahead as 2 MiB folios where the filesystem allows (ext4 on
  // Linux 6.18 here), which map as huge pages. Measured on TinyLlama's 571 MiB pack file: 312 MiB
  // PMD-mapped right after writing, 530-540 MiB after a re-read; touching every page of a fresh
  // mapping took 125-190 ms vs 36 ms (docs/benchmarks.md has the decode A/B).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
  return stats;
}

}  // namespace edgellm
