#include "tools/synth/model_shapes.h"

#include <cmath>
#include <cstring>
#include <numbers>

#include "core/error.h"

namespace edgellm::synth {
namespace {

constexpr Llama3RopeScaling kNoScaling{};
// Llama 3.1 / 3.2 config.json: factor 32, low 1, high 4, original context 8192.
constexpr Llama3RopeScaling kLlama32Scaling{32.0f, 1.0f, 4.0f, 8192};

// Values from each model's config.json (hidden_size, num_hidden_layers, intermediate_size,
// num_attention_heads, num_key_value_heads, head_dim, vocab_size, max_position_embeddings,
// rope_theta, rms_norm_eps, tie_word_embeddings).
const std::vector<ModelShape> kShapes = {
    //  name              display            arch     size   vocab   embd  lay  ff     head kv  hdim ctx     base      eps    tied
    {"qwen2.5-0.5b", "Qwen2.5-0.5B", "qwen2", "0.5B", 151936, 896, 24, 4864, 14, 2, 64, 32768, 1e6f, 1e-6f, true, kNoScaling},
    {"qwen2.5-1.5b", "Qwen2.5-1.5B", "qwen2", "1.5B", 151936, 1536, 28, 8960, 12, 2, 128, 32768, 1e6f, 1e-6f, true, kNoScaling},
    {"qwen2.5-3b", "Qwen2.5-3B", "qwen2", "3B", 151936, 2048, 36, 11008, 16, 2, 128, 32768, 1e6f, 1e-6f, true, kNoScaling},
    {"llama-3.2-1b", "Llama-3.2-1B", "llama", "1B", 128256, 2048, 16, 8192, 32, 8, 64, 131072, 5e5f, 1e-5f, true, kLlama32Scaling},
    {"llama-3.2-3b", "Llama-3.2-3B", "llama", "3B", 128256, 3072, 28, 8192, 24, 8, 128, 131072, 5e5f, 1e-5f, true, kLlama32Scaling},
    {"tinyllama-1.1b", "TinyLlama-1.1B", "llama", "1.1B", 32000, 2048, 22, 5632, 32, 4, 64, 2048, 1e4f, 1e-5f, false, kNoScaling},
    {"qwen3-0.6b", "Qwen3-0.6B", "qwen3", "0.6B", 151936, 1024, 28, 3072, 16, 8, 128, 40960, 1e6f, 1e-6f, true, kNoScaling},
    {"qwen3-1.7b", "Qwen3-1.7B", "qwen3", "1.7B", 151936, 2048, 28, 6144, 16, 8, 128, 40960, 1e6f, 1e-6f, true, kNoScaling},
    // CI shapes: every width a multiple of 256 so every K-quant applies; a few MB at F32.
    // tiny-llama: untied head + llama3 rope factors; tiny-qwen2: tied + QKV bias;
    // tiny-qwen3: Q/K norm and n_head * head_dim (512) != n_embd (256), like the real qwen3.
    {"tiny-llama", "Tiny-Llama", "llama", "2M", 1024, 256, 2, 512, 4, 2, 64, 512, 1e4f, 1e-5f, false, kTinyLlama3Scaling},
    {"tiny-qwen2", "Tiny-Qwen2", "qwen2", "2M", 1024, 256, 2, 512, 4, 2, 64, 512, 1e6f, 1e-6f, true, kNoScaling},
    {"tiny-qwen3", "Tiny-Qwen3", "qwen3", "2M", 1024, 256, 2, 512, 8, 4, 64, 512, 1e6f, 1e-6f, true, kNoScaling},
    // tiny-qwen2-151k: Qwen2.5's vocabulary size (151,936 rows, room for the real tokenizer with
    // --tokenizer) on a one-layer body: what a test of anything vocabulary-bound (grammars, the
    // sampler) needs, at a few milliseconds per token.
    {"tiny-qwen2-151k", "Tiny-Qwen2-151k", "qwen2", "20M", 151936, 128, 1, 256, 2, 1, 64, 4096, 1e6f, 1e-6f, true, kNoScaling},
    // BERT encoders (config.json: vocab_size, hidden_size, num_hidden_layers, intermediate_size,
    // num_attention_heads, max_position_embeddings, layer_norm_eps, type_vocab_size; pooling from
    // the sentence-transformers modules: 2 = cls, 1 = mean, 4 = rank). head_dim 32.
    {"bge-small-en", "bge-small-en-v1.5", "bert", "33M", 30522, 384, 12, 1536, 12, 12, 32, 512, 0.0f, 1e-12f, false,
     kNoScaling, 0, 2, 2, 0},
    {"bge-small-zh", "bge-small-zh-v1.5", "bert", "24M", 21128, 384, 4, 1536, 12, 12, 32, 512, 0.0f, 1e-12f, false,
     kNoScaling, 0, 2, 2, 0},
    {"all-minilm-l6", "all-MiniLM-L6-v2", "bert", "22M", 30522, 384, 6, 1536, 12, 12, 32, 512, 0.0f, 1e-12f, false,
     kNoScaling, 0, 2, 1, 0},
    // A cross-encoder (cross-encoder/ms-marco-MiniLM-L-6-v2: BertForSequenceClassification, one label).
    {"ms-marco-minilm-l6", "ms-marco-MiniLM-L-6-v2", "bert", "22M", 30522, 384, 6, 1536, 12, 12, 32, 512, 0.0f,
     1e-12f, false, kNoScaling, 0, 2, 4, 1},
};

}  // namespace

bool ModelShape::qkv_bias() const { return std::strcmp(arch, "qwen2") == 0; }
bool ModelShape::qk_norm() const { return std::strcmp(arch, "qwen3") == 0; }
bool ModelShape::is_encoder() const { return std::strcmp(arch, "bert") == 0; }

const std::vector<ModelShape>& model_shapes() { return kShapes; }

std::string model_shape_names() {
  std::string s;
  for (const auto& m : kShapes) {
    if (!s.empty()) s += ", ";
    s += m.name;
  }
  return s;
}

const ModelShape& find_model_shape(std::string_view name) {
  for (const auto& m : kShapes) {
    if (name == m.name) return m;
  }
  throw Error(ErrorCode::kInvalidArgument,
              "unknown model shape '" + std::string(name) + "' (known: " + model_shape_names() + ")");
}

std::vector<float> llama3_rope_factors(const ModelShape& shape) {
  std::vector<float> out;
  if (!shape.has_rope_freqs()) return out;
  const Llama3RopeScaling& s = shape.rope_scaling;
  // Wavelengths above low_freq_wavelen are slowed down by `factor`; below high_freq_wavelen they
  // are kept; in between the divisor is interpolated smoothly (the llama3 scaling rule).
  const double low_freq_wavelen = s.original_context / s.low_freq_factor;
  const double high_freq_wavelen = s.original_context / s.high_freq_factor;
  // Frequencies run over the rotated dimensions only (all of head_dim in every catalogue shape).
  const int32_t n_rot = shape.rot_dims();
  const int32_t half = n_rot / 2;
  out.reserve(static_cast<size_t>(half));
  for (int32_t i = 0; i < half; ++i) {
    const double freq = 1.0 / std::pow(static_cast<double>(shape.rope_freq_base), 2.0 * i / n_rot);
    const double wavelen = 2.0 * std::numbers::pi / freq;
    double divisor = 1.0;
    if (wavelen < high_freq_wavelen) {
      divisor = 1.0;
    } else if (wavelen > low_freq_wavelen) {
      divisor = s.factor;
    } else {
      const double smooth =
          (s.original_context / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
      divisor = 1.0 / ((1.0 - smooth) / s.factor + smooth);
    }
    out.push_back(static_cast<float>(divisor));
  }
  return out;
}

}  // namespace edgellm::synth
