#include "tools/synth/synth_tensor_writer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>

#include "core/error.h"
#include "core/fp16.h"
#include "kernels/kernels.h"
#include "tools/synth/weight_generator.h"

namespace edgellm::synth {
namespace {

// Standard deviation of random matrices and biases: the common N(0, 0.02) initialiser scale;
// norm gains are 1 + N(0, 0.02) so activations keep a realistic magnitude through the layers.
constexpr float kWeightStd = 0.02f;
constexpr float kNormStd = 0.02f;
// Elements one task makes and quantizes (256 KiB of F32 scratch): large enough to amortise
// the task hand-out, small enough that a slab of 16 tasks per thread stays a few MB.
constexpr int64_t kElementsPerTask = 64 * 1024;
constexpr int64_t kTasksPerThreadPerSlab = 16;

int resolve_threads(int n_threads) {
  return n_threads > 0 ? n_threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

int64_t n_rows_of(const SynthTensor& t) {
  int64_t r = 1;
  for (size_t i = 1; i < t.ne.size(); ++i) r *= t.ne[i];
  return r;
}

// Converts one F32 row to `type` (floats converted, quantized types through the kernels).
void encode_row(TensorType type, const float* src, uint8_t* dst, int64_t n) {
  switch (type) {
    case TensorType::F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case TensorType::F16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = fp32_to_fp16(src[i]);
        std::memcpy(dst + 2 * i, &h, sizeof h);
      }
      return;
    case TensorType::BF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = fp32_to_bf16(src[i]);
        std::memcpy(dst + 2 * i, &h, sizeof h);
      }
      return;
    default:
      kernels::quantize_row(type, src, dst, n);
  }
}

}  // namespace

SynthTensorWriter::SynthTensorWriter(std::vector<SynthTensor> tensors, std::vector<float> rope_factors, uint64_t seed,
                                     int n_threads)
    : tensors_(std::move(tensors)),
      rope_factors_(std::move(rope_factors)),
      seed_(seed),
      pool_(resolve_threads(n_threads)),
      scratch_(static_cast<size_t>(pool_.max_threads())) {}

void SynthTensorWriter::add_infos(gguf::GgufWriter& w) const {
  for (const auto& t : tensors_) w.add_tensor_info(t.name, t.type, t.ne);
}

gguf::GgufWriter::TensorDataFn SynthTensorWriter::fill_fn() {
  return [this](size_t index, const gguf::WriterTensor&, gguf::TensorSink& sink) { fill(index, sink); };
}

void SynthTensorWriter::fill(size_t index, gguf::TensorSink& sink) {
  require(index < tensors_.size(), ErrorCode::kInternal,
          "synthetic tensor " + std::to_string(index) + " requested, the list has " + std::to_string(tensors_.size()));
  const SynthTensor& t = tensors_[index];
  const int64_t n_in = t.ne.at(0);
  const int64_t n_rows = n_rows_of(t);
  const size_t row_bytes = tensor_row_bytes(t.type, n_in);
  if (t.init == TensorInit::kRopeFactors) {
    require(static_cast<int64_t>(rope_factors_.size()) == n_in && n_rows == 1 && t.type == TensorType::F32,
            ErrorCode::kInternal,
            t.name + ": " + std::to_string(rope_factors_.size()) + " rope factors do not match its shape or type");
    sink.write(rope_factors_.data(), rope_factors_.size() * sizeof(float));
    return;
  }
  float mean = 0.0f;
  float stddev = kWeightStd;
  if (t.init == TensorInit::kNorm) {
    mean = 1.0f;
    stddev = kNormStd;
  } else if (t.init == TensorInit::kScaledWeight) {
    stddev = static_cast<float>(1.0 / std::sqrt(static_cast<double>(n_in)));
  }
  const uint64_t stream = tensor_stream_id(t.name);

  // Rows are made a slab at a time: every thread fills and encodes whole rows of the slab, then
  // the slab goes to the sink in row order.
  const int64_t rows_per_task = std::max<int64_t>(1, kElementsPerTask / n_in);
  const int64_t slab_rows = rows_per_task * kTasksPerThreadPerSlab * pool_.max_threads();
  out_.resize(static_cast<size_t>(std::min(slab_rows, n_rows)) * row_bytes);
  for (auto& s : scratch_) s.resize(static_cast<size_t>(n_in));

  for (int64_t r0 = 0; r0 < n_rows; r0 += slab_rows) {
    const int64_t r1 = std::min(n_rows, r0 + slab_rows);
    const int64_t n_tasks = (r1 - r0 + rows_per_task - 1) / rows_per_task;
    pool_.parallel_for(n_tasks, [&](int64_t task, int thread) {
      float* row = scratch_[static_cast<size_t>(thread)].data();
      const int64_t a = r0 + task * rows_per_task;
      const int64_t b = std::min(r1, a + rows_per_task);
      for (int64_t r = a; r < b; ++r) {
        fill_gaussian(seed_, stream, static_cast<uint64_t>(r) * static_cast<uint64_t>(n_in), mean, stddev, row, n_in);
        encode_row(t.type, row, out_.data() + static_cast<size_t>(r - r0) * row_bytes, n_in);
      }
    });
    sink.write(out_.data(), static_cast<size_t>(r1 - r0) * row_bytes);
  }
}

}  // namespace edgellm::synth
