#include "support/synthetic_model.h"

#include <algorithm>
#include <cmath>

#include "gguf/gguf_writer.h"
#include "kernels/kernels.h"

namespace edgellm::test {

namespace {

// splitmix64: tiny, seedable, and identical on every platform (std distributions are not).
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  float uniform(float lo, float hi) { return lo + (hi - lo) * static_cast<float>(next() >> 40) / 16777216.0f; }
};

enum class Fill { kMatrix, kNorm, kBias, kRopeFreqs };

struct TensorPlan {
  std::string name;
  TensorType type;
  std::vector<int64_t> ne;
  Fill fill;
};

std::vector<TensorPlan> plan(const SyntheticModelSpec& s) {
  const int64_t hd = s.head_dim > 0 ? s.head_dim : s.n_embd / s.n_head;
  const int64_t nq = s.n_head * hd, nkv = s.n_head_kv * hd;
  std::vector<TensorPlan> t;
  auto mat = [&](const std::string& name, int64_t n_in, int64_t n_out) {
    t.push_back({name, synthetic_matrix_type(s, n_in), {n_in, n_out}, Fill::kMatrix});
  };
  auto vec = [&](const std::string& name, int64_t n, Fill f) { t.push_back({name, TensorType::F32, {n}, f}); };
  mat("token_embd.weight", s.n_embd, s.n_vocab);
  vec("output_norm.weight", s.n_embd, Fill::kNorm);
  if (!s.tied) mat("output.weight", s.n_embd, s.n_vocab);
  if (s.rope_freqs) vec("rope_freqs.weight", (s.n_rot > 0 ? s.n_rot : hd) / 2, Fill::kRopeFreqs);
  for (int i = 0; i < s.n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    vec(p + "attn_norm.weight", s.n_embd, Fill::kNorm);
    mat(p + "attn_q.weight", s.n_embd, nq);
    mat(p + "attn_k.weight", s.n_embd, nkv);
    mat(p + "attn_v.weight", s.n_embd, nkv);
    if (s.arch == "qwen2") {
      vec(p + "attn_q.bias", nq, Fill::kBias);
      vec(p + "attn_k.bias", nkv, Fill::kBias);
      vec(p + "attn_v.bias", nkv, Fill::kBias);
    }
    if (s.arch == "qwen3") {
      vec(p + "attn_q_norm.weight", hd, Fill::kNorm);
      vec(p + "attn_k_norm.weight", hd, Fill::kNorm);
    }
    mat(p + "attn_output.weight", nq, s.n_embd);
    vec(p + "ffn_norm.weight", s.n_embd, Fill::kNorm);
    mat(p + "ffn_gate.weight", s.n_embd, s.n_ff);
    mat(p + "ffn_up.weight", s.n_embd, s.n_ff);
    mat(p + "ffn_down.weight", s.n_ff, s.n_embd);
  }
  for (auto& [name, ne] : s.shape_overrides) {
    for (auto& p : t) {
      if (p.name == name) p.ne = ne;
    }
  }
  t.erase(std::remove_if(t.begin(), t.end(),
                         [&](const TensorPlan& p) {
                           return std::find(s.omit_tensors.begin(), s.omit_tensors.end(), p.name) != s.omit_tensors.end();
                         }),
          t.end());
  return t;
}

gguf::GgufWriter make_writer(const SyntheticModelSpec& s, std::vector<TensorPlan>& tensors) {
  gguf::GgufWriter w;
  const std::string a = s.arch;
  w.set_string("general.architecture", a);
  w.set_string("general.name", "synthetic-" + a);
  w.set_u32(a + ".context_length", static_cast<uint32_t>(s.n_ctx_train));
  w.set_u32(a + ".embedding_length", static_cast<uint32_t>(s.n_embd));
  w.set_u32(a + ".block_count", static_cast<uint32_t>(s.n_layer));
  w.set_u32(a + ".feed_forward_length", static_cast<uint32_t>(s.n_ff));
  w.set_u32(a + ".attention.head_count", static_cast<uint32_t>(s.n_head));
  w.set_u32(a + ".attention.head_count_kv", static_cast<uint32_t>(s.n_head_kv));
  if (s.head_dim > 0) {
    w.set_u32(a + ".attention.key_length", static_cast<uint32_t>(s.head_dim));
    w.set_u32(a + ".attention.value_length", static_cast<uint32_t>(s.head_dim));
  }
  w.set_f32(a + ".attention.layer_norm_rms_epsilon", s.rms_eps);
  w.set_f32(a + ".rope.freq_base", s.rope_base);
  if (s.n_rot > 0) w.set_u32(a + ".rope.dimension_count", static_cast<uint32_t>(s.n_rot));
  if (!s.rope_scaling.empty()) {
    w.set_string(a + ".rope.scaling.type", s.rope_scaling);
    w.set_f32(a + ".rope.scaling.factor", s.rope_scaling_factor);
    w.set_u32(a + ".rope.scaling.original_context_length", static_cast<uint32_t>(s.n_ctx_train));
  }
  if (s.write_vocab) {
    std::vector<std::string> tokens;
    for (int i = 0; i < s.n_vocab; ++i) tokens.push_back("t" + std::to_string(i));
    w.set_array_string("tokenizer.ggml.tokens", tokens);
  }
  tensors = plan(s);
  for (const auto& t : tensors) w.add_tensor_info(t.name, t.type, t.ne);
  return w;
}

// Streams tensor `index`: generates and quantizes one row at a time.
void fill_tensor(const SyntheticModelSpec& s, const TensorPlan& p, size_t index, gguf::TensorSink& sink) {
  Rng rng{s.seed * 1000003ull + index * 7919ull + 17};
  const int64_t n_in = p.ne[0];
  int64_t rows = 1;
  for (size_t d = 1; d < p.ne.size(); ++d) rows *= p.ne[d];
  std::vector<float> row(static_cast<size_t>(n_in));
  std::vector<uint8_t> q(tensor_row_bytes(p.type, n_in));
  // Uniform(-a, a) with a = sqrt(3 / n_in) keeps each matmul output at unit variance for unit
  // inputs, so activations stay O(1) through the layers.
  const float a = std::sqrt(3.0f / static_cast<float>(n_in));
  for (int64_t r = 0; r < rows; ++r) {
    for (auto& v : row) {
      switch (p.fill) {
        case Fill::kMatrix: v = rng.uniform(-a, a); break;
        case Fill::kNorm: v = rng.uniform(0.8f, 1.2f); break;
        case Fill::kBias: v = rng.uniform(-0.2f, 0.2f); break;
        case Fill::kRopeFreqs: v = rng.uniform(1.0f, 8.0f); break;
      }
    }
    if (p.type == TensorType::F32) {
      sink.write(row.data(), row.size() * sizeof(float));
    } else {
      kernels::quantize_row(p.type, row.data(), q.data(), n_in);
      sink.write(q.data(), q.size());
    }
  }
}

}  // namespace

TensorType synthetic_matrix_type(const SyntheticModelSpec& spec, int64_t n_in) {
  return n_in % tensor_block_size(spec.weight_type) == 0 ? spec.weight_type : TensorType::Q8_0;
}

void write_synthetic_model(const SyntheticModelSpec& spec, const std::string& path) {
  std::vector<TensorPlan> tensors;
  gguf::GgufWriter w = make_writer(spec, tensors);
  w.write(path, [&](size_t i, const gguf::WriterTensor&, gguf::TensorSink& sink) { fill_tensor(spec, tensors[i], i, sink); });
}

std::unique_ptr<gguf::GgufFile> synthetic_model(const SyntheticModelSpec& spec) {
  std::vector<TensorPlan> tensors;
  gguf::GgufWriter w = make_writer(spec, tensors);
  const std::vector<uint8_t> bytes =
      w.write_to_bytes([&](size_t i, const gguf::WriterTensor&, gguf::TensorSink& sink) { fill_tensor(spec, tensors[i], i, sink); });
  return gguf::GgufFile::from_bytes(bytes.data(), bytes.size());
}

}  // namespace edgellm::test
