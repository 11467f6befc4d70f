// Model::repack_weights: copies eligible Q4_0 / Q5_0 / Q8_0 / Q4_K / Q6_K matrices into the
// 16-row interleaved layout (kernels/repack.h) once, at load, and points their WeightViews at
// the copy.
#include <algorithm>
#include <memory>
#include <vector>

#include "core/error.h"
#include "kernels/repack.h"
#include "model/model.h"
#include "platform/cpu_topology.h"
#include "platform/shared_thread_pool.h"

namespace edgellm {

const char* repack_mode_name(RepackMode mode) {
  switch (mode) {
    case RepackMode::kAuto: return "auto";
    case RepackMode::kOn: return "on";
    case RepackMode::kOff: return "off";
  }
  return "?";
}

RepackMode parse_repack_mode(const std::string& text) {
  if (text == "auto") return RepackMode::kAuto;
  if (text == "on" || text == "1") return RepackMode::kOn;
  if (text == "off" || text == "0") return RepackMode::kOff;
  throw Error(ErrorCode::kInvalidArgument, "repack mode '" + text + "' is not one of auto, on, off");
}

void Model::repack_weights(const ModelLoadParams& params) {
  if (params.repack == RepackMode::kOff) return;
  // The matrices the forward pass multiplies. A tied output head is repacked as `output_`, and
  // `token_embd_` then follows it (embedding lookups dequantize one packed row): otherwise every
  // embedding row looked up would fault its file page back in next to the packed copy, up to a
  // second copy of the head (136 MB for Qwen2.5-0.5B) as a prompt's vocabulary grows.
  const std::vector<WeightView*> candidates = mutable_matrices();
  struct Job {
    WeightView* w;
    TensorType packed;
    size_t offset;           // in packed_
    size_t packed_row_bytes;  // Q4_K_X16 rows are 148/144 of the file's
  };
  std::vector<Job> jobs;
  size_t total = 0;
  for (WeightView* w : candidates) {
    if (!w->present() || !kernels::can_repack(w->type, w->n_in, w->n_out)) continue;
    const TensorType packed = *kernels::packed_type_for(w->type);
    if (params.repack == RepackMode::kAuto && !kernels::has_fast_packed_kernel(packed)) continue;
    const size_t packed_row_bytes = tensor_row_bytes(packed, w->n_in);
    jobs.push_back({w, packed, total, packed_row_bytes});
    // 64-byte aligned starts: with n_in a multiple of 64 every code vector is then aligned.
    total += (packed_row_bytes * static_cast<size_t>(w->n_out) + 63) / 64 * 64;
  }
  if (jobs.empty()) return;
  // Not zeroed: every byte but the alignment padding is written below, and untouched pages stay
  // out of the resident set until their rows are repacked (while the file pages are released).
  packed_ = AlignedBuffer(total, "repacked weights", AlignedBuffer::Uninitialized{});
  packed_.advise_huge_pages();

  // Work items of up to 256 rows, taken from a shared counter by every thread.
  constexpr int64_t kRowsPerItem = 256;
  struct Item {
    size_t job;
    int64_t r0, r1;
  };
  std::vector<Item> items;
  for (size_t j = 0; j < jobs.size(); ++j) {
    for (int64_t r = 0; r < jobs[j].w->n_out; r += kRowsPerItem) {
      items.push_back({j, r, std::min(jobs[j].w->n_out, r + kRowsPerItem)});
    }
  }
  const MappedFile& map = file_->mapping();
  // The process's shared pool (the one the Contexts use) with the thread budget of the forward
  // pass: the big cores, not every core the machine has (little cores only slow a barrier down).
  const int n_threads = params.repack_threads > 0 ? params.repack_threads : default_thread_count();
  std::shared_ptr<ThreadPool> pool = shared_thread_pool(n_threads);
  pool->parallel_for(
      static_cast<int64_t>(items.size()),
      [&](int64_t i, int) {
        const Item& it = items[static_cast<size_t>(i)];
        const Job& job = jobs[it.job];
        kernels::repack_rows(job.w->type, job.w->data, packed_.data() + job.offset, job.w->n_in, it.r0, it.r1);
        // Matmuls never read these file rows again: drop their pages now, so the peak resident
        // size stays near one copy of the weights instead of two (embedding lookups of a tied
        // head fault the few rows they need back in from the file).
        const size_t first = static_cast<size_t>(job.w->data - map.data()) + static_cast<size_t>(it.r0) * job.w->row_bytes;
        map.release_pages(first, static_cast<size_t>(it.r1 - it.r0) * job.w->row_bytes);
      },
      n_threads);

  const bool head_repacked =
      std::any_of(jobs.begin(), jobs.end(), [&](const Job& j) { return j.w == &output_; });
  for (const Job& job : jobs) {
    job.w->data = packed_.data() + job.offset;
    job.w->type = job.packed;
    job.w->row_bytes = job.packed_row_bytes;
    ++repacked_tensors_;
  }
  if (output_tied_ && head_repacked) token_embd_ = output_;
}

}  // namespace edgellm
