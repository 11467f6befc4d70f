#include "synth/synth_model.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <thread>

#include "core/error.h"
#include "core/fp16.h"
#include "gguf/gguf_writer.h"
#include "kernels/kernels.h"
#include "runtime/thread_pool.h"
#include "synth/synth_vocab.h"
#include "synth/weight_generator.h"

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

class SlabWriter {
 public:
  explicit SlabWriter(int n_threads) : pool_(n_threads), scratch_(static_cast<size_t>(n_threads)) {}

  void write(const SynthTensor& t, uint64_t seed, const std::vector<float>& rope_factors, gguf::TensorSink& sink) {
    const int64_t n_in = t.ne.at(0);
    const int64_t n_rows = n_rows_of(t);
    const size_t row_bytes = tensor_row_bytes(t.type, n_in);
    if (t.init == TensorInit::kRopeFactors) {
      require(static_cast<int64_t>(rope_factors.size()) == n_in && n_rows == 1, ErrorCode::kInternal,
              t.name + ": rope factor count does not match its shape");
      sink.write(rope_factors.data(), rope_factors.size() * sizeof(float));
      return;
    }
    const float mean = t.init == TensorInit::kNorm ? 1.0f : 0.0f;
    const float stddev = t.init == TensorInit::kNorm ? kNormStd : kWeightStd;
    const uint64_t stream = tensor_stream_id(t.name);

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
          fill_gaussian(seed, stream, static_cast<uint64_t>(r) * static_cast<uint64_t>(n_in), mean, stddev, row, n_in);
          encode_row(t.type, row, out_.data() + static_cast<size_t>(r - r0) * row_bytes, n_in);
        }
      });
      sink.write(out_.data(), static_cast<size_t>(r1 - r0) * row_bytes);
    }
  }

 private:
  ThreadPool pool_;
  std::vector<std::vector<float>> scratch_;
  std::vector<uint8_t> out_;
};

}  // namespace

std::vector<SynthTensor> plan_synth_tensors(const ModelShape& s, quant::FileType ftype, int32_t n_layer) {
  require(n_layer >= 1, ErrorCode::kInvalidArgument, "layer count must be >= 1, got " + std::to_string(n_layer));
  std::vector<SynthTensor> out;
  const int64_t n_embd = s.n_embd;
  const int64_t n_q = static_cast<int64_t>(s.n_head) * s.head_dim;
  const int64_t n_kv = static_cast<int64_t>(s.n_head_kv) * s.head_dim;
  const int64_t n_ff = s.n_ff;
  const int64_t n_vocab = s.n_vocab;

  // Shapes first (as an F32 source model), then the quantizer's planner assigns types in file
  // order, exactly as it would when quantizing a real F32 checkpoint of this shape.
  auto matrix = [&](std::string name, int64_t n_in, int64_t n_out) {
    out.push_back({std::move(name), TensorType::F32, {n_in, n_out}, TensorInit::kWeight});
  };
  auto vector = [&](std::string name, int64_t n, TensorInit init) {
    out.push_back({std::move(name), TensorType::F32, {n}, init});
  };

  matrix("token_embd.weight", n_embd, n_vocab);
  if (s.has_rope_freqs()) vector("rope_freqs.weight", s.head_dim / 2, TensorInit::kRopeFactors);
  for (int32_t i = 0; i < n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    vector(p + "attn_norm.weight", n_embd, TensorInit::kNorm);
    matrix(p + "attn_q.weight", n_embd, n_q);
    matrix(p + "attn_k.weight", n_embd, n_kv);
    matrix(p + "attn_v.weight", n_embd, n_kv);
    if (s.qkv_bias()) {
      vector(p + "attn_q.bias", n_q, TensorInit::kBias);
      vector(p + "attn_k.bias", n_kv, TensorInit::kBias);
      vector(p + "attn_v.bias", n_kv, TensorInit::kBias);
    }
    if (s.qk_norm()) {
      vector(p + "attn_q_norm.weight", s.head_dim, TensorInit::kNorm);
      vector(p + "attn_k_norm.weight", s.head_dim, TensorInit::kNorm);
    }
    matrix(p + "attn_output.weight", n_q, n_embd);
    vector(p + "ffn_norm.weight", n_embd, TensorInit::kNorm);
    matrix(p + "ffn_gate.weight", n_embd, n_ff);
    matrix(p + "ffn_up.weight", n_embd, n_ff);
    matrix(p + "ffn_down.weight", n_ff, n_embd);
  }
  vector("output_norm.weight", n_embd, TensorInit::kNorm);
  if (!s.tied_embeddings) matrix("output.weight", n_embd, n_vocab);

  std::vector<quant::TensorDesc> descs;
  descs.reserve(out.size());
  for (const auto& t : out) {
    quant::TensorDesc d;
    d.name = t.name;
    d.type = TensorType::F32;
    d.n_dims = static_cast<int>(t.ne.size());
    for (size_t k = 0; k < t.ne.size(); ++k) d.ne[k] = t.ne[k];
    descs.push_back(std::move(d));
  }
  quant::PlannerOptions popts;
  popts.ftype = ftype;
  quant::TypePlanner planner(popts, descs);
  for (size_t k = 0; k < out.size(); ++k) {
    const quant::TypeDecision d = planner.decide(descs[k]);
    if (d.quantizable) out[k].type = d.type;
  }
  return out;
}

SynthReport write_synth_model(const SynthOptions& options, const std::string& path,
                              const std::function<void(const SynthProgress&)>& progress) {
  const auto t_start = std::chrono::steady_clock::now();
  const ModelShape& shape = find_model_shape(options.shape);
  const quant::FileType ftype = quant::file_type_from_name(options.type);
  require(options.n_layer >= 0, ErrorCode::kInvalidArgument,
          "--layers must be >= 0, got " + std::to_string(options.n_layer));
  const int32_t n_layer = options.n_layer > 0 ? options.n_layer : shape.n_layer;
  int n_threads = options.n_threads;
  if (n_threads <= 0) n_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  const std::vector<SynthTensor> plan = plan_synth_tensors(shape, ftype, n_layer);
  const std::vector<float> rope_factors = llama3_rope_factors(shape);

  gguf::GgufWriter w;
  const std::string arch = shape.arch;
  const std::string p = arch + ".";
  w.set_string("general.architecture", arch);
  w.set_string("general.type", "model");
  w.set_string("general.name", std::string(shape.display_name) + " (synthetic)");
  w.set_string("general.size_label", shape.size_label);
  w.set_u32("general.file_type", static_cast<uint32_t>(ftype));
  w.set_u32("general.quantization_version", 2);  // ggml's current quantization format version
  // Provenance: tools (and people) must be able to tell these files from real checkpoints.
  w.set_string("edgellm.synth.shape", shape.name);
  w.set_string("edgellm.synth.type", quant::file_type_name(ftype));
  w.set_u64("edgellm.synth.seed", options.seed);
  w.set_u32(p + "vocab_size", static_cast<uint32_t>(shape.n_vocab));
  w.set_u32(p + "context_length", static_cast<uint32_t>(shape.n_ctx_train));
  w.set_u32(p + "embedding_length", static_cast<uint32_t>(shape.n_embd));
  w.set_u32(p + "block_count", static_cast<uint32_t>(n_layer));
  w.set_u32(p + "feed_forward_length", static_cast<uint32_t>(shape.n_ff));
  w.set_u32(p + "attention.head_count", static_cast<uint32_t>(shape.n_head));
  w.set_u32(p + "attention.head_count_kv", static_cast<uint32_t>(shape.n_head_kv));
  w.set_u32(p + "attention.key_length", static_cast<uint32_t>(shape.head_dim));
  w.set_u32(p + "attention.value_length", static_cast<uint32_t>(shape.head_dim));
  w.set_u32(p + "rope.dimension_count", static_cast<uint32_t>(shape.head_dim));
  w.set_f32(p + "rope.freq_base", shape.rope_freq_base);
  w.set_f32(p + "attention.layer_norm_rms_epsilon", shape.rms_eps);
  if (options.tokenizer.empty()) {
    write_placeholder_vocab(w, shape.n_vocab);
  } else {
    write_tokenizer_from_file(w, options.tokenizer, shape.n_vocab);
  }

  SynthReport report;
  std::map<uint32_t, size_t> type_counts;
  for (const auto& t : plan) {
    w.add_tensor_info(t.name, t.type, t.ne);
    int64_t n = 1;
    for (const int64_t d : t.ne) n *= d;
    report.n_params += static_cast<uint64_t>(n);
    ++type_counts[static_cast<uint32_t>(t.type)];
  }
  for (const auto& wt : w.tensors()) report.tensor_bytes += wt.n_bytes;
  report.n_tensors = plan.size();
  for (const auto& [id, count] : type_counts) report.type_counts.emplace_back(static_cast<TensorType>(id), count);

  SlabWriter slab(n_threads);
  SynthProgress prog;
  prog.n_tensors = plan.size();
  prog.bytes_total = report.tensor_bytes;
  w.write(path, [&](size_t index, const gguf::WriterTensor& wt, gguf::TensorSink& sink) {
    slab.write(plan.at(index), options.seed, rope_factors, sink);
    prog.tensor_index = index;
    prog.bytes_done += wt.n_bytes;
    if (progress) progress(prog);
  });
  report.file_bytes = w.file_size();
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  return report;
}

}  // namespace edgellm::synth
