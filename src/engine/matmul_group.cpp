#include "engine/matmul_group.h"

#include <algorithm>
#include <atomic>

#include "core/error.h"
#include "engine/row_parallel.h"
#include "kernels/kernels.h"
#include "platform/thread_pool.h"

namespace edgellm {

namespace {

// Matmul rows are claimed in multiples of this (packed kernels run 16-row groups; file-layout
// kernels tile rows in smaller groups).
constexpr int64_t kRowGranule = 16;

size_t round64(size_t n) {
  return (n + 63) / 64 * 64;
}

}  // namespace

size_t matmul_input_row_bytes(const WeightView& w) {
  return round64(kernels::activation_row_bytes(w.type, w.n_in));
}

size_t tiled_group_bytes(std::initializer_list<const WeightView*> group, int64_t tokens) {
  size_t bytes = 0;
  TensorType seen[kMaxMatmulInputs] = {};
  int n_seen = 0;
  for (const WeightView* w : group) {
    if (!w->present()) continue;
    const size_t b = kernels::tiled_activation_bytes(w->type, w->n_in, tokens);
    if (b == 0) continue;
    const TensorType at = kernels::activation_type(w->type);
    if (std::find(seen, seen + n_seen, at) != seen + n_seen) continue;
    if (n_seen < kMaxMatmulInputs) seen[n_seen++] = at;
    bytes += round64(b);
  }
  return bytes;
}

void run_matmul_group(const MatmulJob* jobs, int n_jobs, int32_t n_tokens, AlignedBuffer& xq_buf, AlignedBuffer& xt_buf,
                      ThreadPool& pool, int n_threads) {
  if (n_jobs < 1 || n_jobs > kMaxMatmulInputs) throw Error(ErrorCode::kInternal, "matmul group: 1 to 3 jobs");
  if (n_tokens <= 0) return;
  // 1. Quantize each distinct (input, activation type) once.
  const float* slot_x[kMaxMatmulInputs] = {};
  TensorType slot_type[kMaxMatmulInputs] = {};
  int job_slot[kMaxMatmulInputs + 1] = {};
  int n_slots = 0;
  for (int j = 0; j < n_jobs; ++j) {
    const TensorType at = kernels::activation_type(jobs[j].w->type);
    int s = 0;
    while (s < n_slots && !(slot_x[s] == jobs[j].x && slot_type[s] == at)) ++s;
    if (s == n_slots) {
      if (n_slots == kMaxMatmulInputs) throw Error(ErrorCode::kInternal, "forward: too many distinct matmul inputs");
      slot_x[s] = jobs[j].x;
      slot_type[s] = at;
      ++n_slots;
    }
    job_slot[j] = s;
  }
  // Slot s holds n_tokens rows of `stride` bytes (the widest activation row of this call).
  size_t stride = 0;
  for (int j = 0; j < n_jobs; ++j) stride = std::max(stride, matmul_input_row_bytes(*jobs[j].w));
  if (static_cast<size_t>(n_slots) * static_cast<size_t>(n_tokens) * stride > xq_buf.size()) {
    throw Error(ErrorCode::kInternal, "forward: quantized input buffer too small");
  }
  auto slot_base = [&](int s) {
    return xq_buf.data() + static_cast<size_t>(s) * static_cast<size_t>(n_tokens) * stride;
  };
  int slot_job[kMaxMatmulInputs] = {};
  for (int j = n_jobs - 1; j >= 0; --j) slot_job[job_slot[j]] = j;
  // On a tile ISA (AMX) a slot also gets its tiled copy, made once here for every thread and row
  // range (kernels.h: tile_activations), by the job type that has one; a job whose type has no
  // tiled form reads the rows.
  int tile_job[kMaxMatmulInputs] = {-1, -1, -1};
  size_t tile_offset[kMaxMatmulInputs] = {};
  bool job_tiled[kMaxMatmulInputs + 1] = {};
  size_t tiled_total = 0;
  for (int j = 0; j < n_jobs; ++j) {
    const size_t bytes = kernels::tiled_activation_bytes(jobs[j].w->type, jobs[j].w->n_in, n_tokens);
    if (bytes == 0) continue;
    job_tiled[j] = true;
    const int s = job_slot[j];
    if (tile_job[s] >= 0) continue;
    tile_job[s] = j;
    tile_offset[s] = tiled_total;
    tiled_total += round64(bytes);
  }
  if (tiled_total > xt_buf.size()) {  // not planned for (the ISA changed after construction): the rows
    for (int& j : tile_job) j = -1;
    for (bool& t : job_tiled) t = false;
  }
  const bool any_tiled = tile_job[0] >= 0 || tile_job[1] >= 0 || tile_job[2] >= 0;
  auto quantize_rows = [&](int s, int64_t t0, int64_t t1) {
    const WeightView& w = *jobs[slot_job[s]].w;
    for (int64_t t = t0; t < t1; ++t) {
      kernels::quantize_activation_row(w.type, slot_x[s] + t * w.n_in, slot_base(s) + static_cast<size_t>(t) * stride,
                                       w.n_in);
    }
  };
  if (!any_tiled) {  // a task per (slot, token)
    const int64_t n_quant = static_cast<int64_t>(n_slots) * n_tokens;
    auto quantize = [&](int64_t task) {
      quantize_rows(static_cast<int>(task / n_tokens), task % n_tokens, task % n_tokens + 1);
    };
    if (n_tokens < kParallelRowsMin || n_threads == 1) {
      for (int64_t t = 0; t < n_quant; ++t) quantize(t);
    } else {
      pool.parallel_for(
          n_quant, [&](int64_t t, int) { quantize(t); }, n_threads);
    }
  } else {  // a task per (slot, 16-token tile): its rows quantized, then tiled while in cache
    const int64_t tiles = (n_tokens + kernels::kActivationTileTokens - 1) / kernels::kActivationTileTokens;
    pool.parallel_for(
        static_cast<int64_t>(n_slots) * tiles,
        [&](int64_t task, int) {
          const int s = static_cast<int>(task / tiles);
          const int64_t i = task % tiles;
          quantize_rows(s, i * kernels::kActivationTileTokens,
                        std::min<int64_t>(n_tokens, (i + 1) * kernels::kActivationTileTokens));
          if (tile_job[s] >= 0) {
            const WeightView& w = *jobs[tile_job[s]].w;
            kernels::tile_activations(w.type, w.n_in, slot_base(s), stride, n_tokens, i, i + 1,
                                      xt_buf.data() + tile_offset[s]);
          }
        },
        n_threads);
  }

  // 2. One parallel region runs every matmul of the call. The rows of all jobs form one range
  // that threads claim from a shared cursor in guided chunks: a claim takes 1/(2 x threads) of
  // what is left (whole 16-row granules, never across a job boundary). Early claims are large,
  // so a thread streams long contiguous row ranges (prefetch stays ahead); the last ones are one
  // granule, so threads finish within a few microseconds of each other instead of one waiting
  // for the other's last 1/8 of a matrix; and a thread that is descheduled (a busy core) simply
  // claims less. The claim is a CAS on one counter: a few dozen per region.
  int64_t job_end[kMaxMatmulInputs + 1] = {};  // cumulative rows
  for (int j = 0; j < n_jobs; ++j) job_end[j] = (j ? job_end[j - 1] : 0) + jobs[j].w->n_out;
  const int64_t total_rows = job_end[n_jobs - 1];
  auto rows = [&](int j, int64_t r0, int64_t r1) {
    const WeightView& w = *jobs[j].w;
    const uint8_t* xt = job_tiled[j] ? xt_buf.data() + tile_offset[job_slot[j]] : nullptr;
    kernels::matmul_tiled(w.type, w.n_in, w.data, w.row_bytes, r0, r1, slot_base(job_slot[j]), stride, xt, n_tokens,
                          jobs[j].y, w.n_out);
  };
  if (n_threads == 1) {
    for (int j = 0; j < n_jobs; ++j) rows(j, 0, jobs[j].w->n_out);
    return;
  }
  std::atomic<int64_t> cursor{0};
  const int64_t divisor = 2 * static_cast<int64_t>(n_threads);
  auto claim_and_run = [&](int64_t, int) {
    int64_t start = cursor.load(std::memory_order_relaxed);
    for (;;) {
      if (start >= total_rows) return;
      int j = 0;
      while (start >= job_end[j]) ++j;
      const int64_t left = total_rows - start;
      int64_t take = std::max<int64_t>(kRowGranule, left / divisor / kRowGranule * kRowGranule);
      take = std::min(take, job_end[j] - start);
      if (!cursor.compare_exchange_weak(start, start + take, std::memory_order_relaxed)) continue;
      const int64_t job_start = job_end[j] - jobs[j].w->n_out;
      rows(j, start - job_start, start - job_start + take);
      start = cursor.load(std::memory_order_relaxed);
    }
  };
  pool.parallel_for(n_threads, claim_and_run, n_threads);
}

}  // namespace edgellm
