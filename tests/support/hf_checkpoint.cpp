#include "support/hf_checkpoint.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <random>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

#include "core/json.h"
#include "gguf/gguf_reader.h"
#include "support/test_env.h"

namespace edgellm::test {
namespace {

namespace fs = std::filesystem;

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// IEEE half encode / decode, written out here (not the engine's core/fp16.h).
uint16_t half_bits(float x) {
  const uint32_t f = bits(x);
  const uint32_t sign = (f >> 16) & 0x8000u;
  const int32_t exp = static_cast<int32_t>((f >> 23) & 0xff) - 127 + 15;
  uint32_t mant = f & 0x7fffffu;
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);  // the tests never produce these
  if (exp <= 0) {
    if (exp < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    const int shift = 14 - exp;
    uint32_t h = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (h & 1))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) ++h;
  return static_cast<uint16_t>(sign | h);
}
float half_value(uint16_t h) {
  const int exp = (h >> 10) & 0x1f;
  const int mant = h & 0x3ff;
  double v = exp == 0 ? std::ldexp(mant, -24) : std::ldexp(1024 + mant, exp - 25);
  return static_cast<float>((h & 0x8000) ? -v : v);
}
uint16_t bf16_bits(float x) {
  const uint32_t f = bits(x);
  return static_cast<uint16_t>((f + 0x7fffu + ((f >> 16) & 1u)) >> 16);
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::string encode_values(const HfTensor& t) {
  if (!t.raw.empty()) return t.raw;
  std::string out;
  for (float v : t.values) {
    if (t.dtype == "F16" || t.dtype == "BF16") {
      const uint16_t h = t.dtype == "F16" ? half_bits(v) : bf16_bits(v);
      out.append(reinterpret_cast<const char*>(&h), 2);
    } else {
      out.append(reinterpret_cast<const char*>(&v), 4);
    }
  }
  return out;
}

std::string shape_json(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// GPT-2's byte -> printable character table, UTF-8 encoded.
std::string byte_symbol(int b) {
  auto printable = [](int c) { return (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF); };
  int cp = b;
  if (!printable(b)) {
    int n = 0;
    for (int c = 0; c < b; ++c) n += printable(c) ? 0 : 1;
    cp = 256 + n;
  }
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

double silu(double x) {
  return x / (1.0 + std::exp(-x));
}

// y = W x for an HF Linear weight [out, in].
std::vector<double> linear(const HfTensor& w, const std::vector<double>& x, const HfTensor* bias = nullptr) {
  const int64_t out = w.shape[0], in = w.shape[1];
  std::vector<double> y(static_cast<size_t>(out), 0.0);
  for (int64_t o = 0; o < out; ++o) {
    double s = 0;
    const float* row = w.values.data() + o * in;
    for (int64_t i = 0; i < in; ++i) s += static_cast<double>(row[i]) * x[static_cast<size_t>(i)];
    y[static_cast<size_t>(o)] = s + (bias ? bias->values[static_cast<size_t>(o)] : 0.0);
  }
  return y;
}

std::vector<double> rms_norm(const std::vector<double>& x, size_t at, size_t n, const HfTensor& w, double eps) {
  double ss = 0;
  for (size_t i = 0; i < n; ++i) ss += x[at + i] * x[at + i];
  const double inv = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
  std::vector<double> y(n);
  for (size_t i = 0; i < n; ++i) y[i] = x[at + i] * inv * w.values[i];
  return y;
}

// Rotary inverse frequencies as transformers computes them, scaling included.
std::vector<double> inv_freqs(const TinySpec& s, int64_t hd) {
  std::vector<double> f;
  for (int64_t i = 0; i < hd; i += 2) f.push_back(1.0 / std::pow(s.rope_theta, static_cast<double>(i) / hd));
  if (s.rope_scaling_json.empty()) return f;
  auto num = [&](const std::string& key, double fallback) {
    const size_t at = s.rope_scaling_json.find("\"" + key + "\"");
    if (at == std::string::npos) return fallback;
    return std::stod(s.rope_scaling_json.substr(s.rope_scaling_json.find(':', at) + 1));
  };
  const double factor = num("factor", 1.0);
  if (s.rope_scaling_json.find("\"linear\"") != std::string::npos) {
    for (double& x : f) x /= factor;
  } else if (s.rope_scaling_json.find("\"llama3\"") != std::string::npos) {
    // transformers' _compute_llama3_parameters
    const double low = num("low_freq_factor", 1.0), high = num("high_freq_factor", 4.0);
    const double old_ctx = num("original_max_position_embeddings", 8192);
    const double low_wavelen = old_ctx / low, high_wavelen = old_ctx / high;
    for (double& x : f) {
      const double wavelen = 2 * std::numbers::pi / x;
      double v = wavelen > low_wavelen ? x / factor : x;
      const bool medium = !(wavelen < high_wavelen) && !(wavelen > low_wavelen);
      if (medium) {
        const double smooth = (old_ctx / wavelen - low) / (high - low);
        v = (1 - smooth) * v / factor + smooth * v;
      }
      x = v;
    }
  }
  return f;
}

}  // namespace

float round_to_dtype(float x, const std::string& dtype) {
  if (dtype == "F16") return half_value(half_bits(x));
  if (dtype == "BF16") return from_bits(static_cast<uint32_t>(bf16_bits(x)) << 16);
  return x;
}

std::string safetensors_bytes(const std::vector<HfTensor>& tensors, const std::string& metadata_json) {
  std::string header = "{";
  std::string data;
  if (!metadata_json.empty()) header += "\"__metadata__\": " + metadata_json;
  for (const HfTensor& t : tensors) {
    const std::string bytes = encode_values(t);
    if (header.size() > 1) header += ", ";
    header += json_string(t.name) + ": {\"dtype\": " + json_string(t.dtype) + ", \"shape\": " + shape_json(t.shape) +
              ", \"data_offsets\": [" + std::to_string(data.size()) + ", " +
              std::to_string(data.size() + bytes.size()) + "]}";
    data += bytes;
  }
  header += "}";
  while (header.size() % 8 != 0) header += ' ';
  const uint64_t n = header.size();
  std::string out(reinterpret_cast<const char*>(&n), 8);
  return out + header + data;
}

const HfTensor& TinyCheckpoint::at(const std::string& name) const {
  const auto it = tensors.find(name);
  if (it == tensors.end()) throw std::runtime_error("tiny checkpoint has no tensor " + name);
  return it->second;
}

std::string small_tokenizer_json() {
  std::string vocab;
  for (int b = 0; b < 256; ++b) vocab += (b ? ", " : "") + json_string(byte_symbol(b)) + ": " + std::to_string(b);
  const std::string sp = byte_symbol(' ');
  // Merges: " t" "he" " the" "in": ids 256..259.
  vocab += ", " + json_string(sp + "t") + ": 256, \"he\": 257, " + json_string(sp + "the") + ": 258, \"in\": 259";
  return R"({"version": "1.0", "added_tokens": [
      {"id": 260, "content": "<|endoftext|>", "special": true, "normalized": false, "single_word": false, "lstrip": false, "rstrip": false},
      {"id": 261, "content": "<|im_start|>", "special": true, "normalized": false, "single_word": false, "lstrip": false, "rstrip": false}],
    "normalizer": null,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
    "post_processor": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": true},
    "decoder": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
    "model": {"type": "BPE", "dropout": null, "unk_token": null, "fuse_unk": false, "byte_fallback": false,
              "vocab": {)" +
         vocab + R"(}, "merges": [)" + json_string(sp + " t") + ", \"h e\", " + json_string(sp + "t he") +
         ", \"i n\"]}}";
}

std::string tiny_config_json(const TinySpec& s) {
  const std::string cls = s.arch == "qwen2"   ? "Qwen2ForCausalLM"
                          : s.arch == "qwen3" ? "Qwen3ForCausalLM"
                                              : "LlamaForCausalLM";
  int64_t bos = 260, eos = 260;
  if (s.tokenizer == "qwen3") bos = 151643, eos = 151645;
  if (s.tokenizer == "llama3") bos = 128000, eos = 128001;
  std::string c = "{\n  \"architectures\": [\"" + cls + "\"],\n  \"model_type\": \"" + s.arch + "\",\n";
  c += "  \"vocab_size\": " + std::to_string(s.vocab) + ",\n  \"hidden_size\": " + std::to_string(s.embd) +
       ",\n  \"num_hidden_layers\": " + std::to_string(s.layers) +
       ",\n  \"intermediate_size\": " + std::to_string(s.ffn) +
       ",\n  \"num_attention_heads\": " + std::to_string(s.heads) +
       ",\n  \"num_key_value_heads\": " + std::to_string(s.kv_heads) + ",\n";
  if (s.head_dim > 0) c += "  \"head_dim\": " + std::to_string(s.head_dim) + ",\n";
  char eps[64], theta[64];
  std::snprintf(eps, sizeof eps, "%.17g", s.rms_eps);
  std::snprintf(theta, sizeof theta, "%.17g", s.rope_theta);
  c += "  \"max_position_embeddings\": 4096,\n  \"rms_norm_eps\": " + std::string(eps) +
       ",\n  \"rope_theta\": " + theta +
       ",\n  \"rope_scaling\": " + (s.rope_scaling_json.empty() ? "null" : s.rope_scaling_json) +
       ",\n  \"tie_word_embeddings\": " + (s.tied ? "true" : "false") +
       ",\n  \"bos_token_id\": " + std::to_string(bos) + ",\n  \"eos_token_id\": " + std::to_string(eos) +
       ",\n  \"torch_dtype\": \"float32\"\n}\n";
  return c;
}

TinyCheckpoint write_tiny_checkpoint(const TinySpec& s, const std::string& dir) {
  fs::create_directories(dir);
  TinyCheckpoint ck;
  ck.spec = s;
  ck.dir = dir;
  const int64_t hd = ck.head_dim(), q = s.heads * hd, kv = s.kv_heads * hd;
  std::mt19937_64 rng(s.seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<HfTensor> order;
  auto add = [&](const std::string& name, std::vector<int64_t> shape, float scale, float offset = 0.0f) {
    HfTensor t;
    t.name = name;
    t.dtype = s.dtype;
    t.shape = std::move(shape);
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    t.values.resize(static_cast<size_t>(n));
    for (float& v : t.values) v = round_to_dtype(offset + scale * normal(rng), s.dtype);
    order.push_back(t);
    ck.tensors.emplace(name, std::move(t));
  };
  // Scales keep activations O(1) through the layers (weights ~ 1/sqrt(fan_in)), so the logits
  // are well spread and a wrong row order or norm changes them by O(1).
  const float in_e = 1.0f / std::sqrt(static_cast<float>(s.embd));
  add("model.embed_tokens.weight", {s.vocab, s.embd}, 1.0f);
  for (int64_t l = 0; l < s.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", {s.embd}, 0.2f, 1.0f);
    add(p + "self_attn.q_proj.weight", {q, s.embd}, 2.0f * in_e);
    add(p + "self_attn.k_proj.weight", {kv, s.embd}, 2.0f * in_e);
    add(p + "self_attn.v_proj.weight", {kv, s.embd}, in_e);
    if (s.arch == "qwen2") {
      add(p + "self_attn.q_proj.bias", {q}, 0.5f);
      add(p + "self_attn.k_proj.bias", {kv}, 0.5f);
      add(p + "self_attn.v_proj.bias", {kv}, 0.5f);
    }
    if (s.arch == "qwen3") {
      add(p + "self_attn.q_norm.weight", {hd}, 0.2f, 1.0f);
      add(p + "self_attn.k_norm.weight", {hd}, 0.2f, 1.0f);
    }
    add(p + "self_attn.o_proj.weight", {s.embd, q}, 1.0f / std::sqrt(static_cast<float>(q)));
    add(p + "post_attention_layernorm.weight", {s.embd}, 0.2f, 1.0f);
    add(p + "mlp.gate_proj.weight", {s.ffn, s.embd}, in_e);
    add(p + "mlp.up_proj.weight", {s.ffn, s.embd}, in_e);
    add(p + "mlp.down_proj.weight", {s.embd, s.ffn}, 1.0f / std::sqrt(static_cast<float>(s.ffn)));
  }
  add("model.norm.weight", {s.embd}, 0.2f, 1.0f);
  if (!s.tied) add("lm_head.weight", {s.vocab, s.embd}, in_e);

  write_file(dir + "/config.json", tiny_config_json(s));
  if (s.shards <= 1) {
    write_file(dir + "/model.safetensors", safetensors_bytes(order, R"({"format": "pt"})"));
  } else {
    // Tensors dealt round-robin over the shards, as no real writer does: the converter must not
    // depend on a shard holding whole layers.
    std::vector<std::vector<HfTensor>> parts(static_cast<size_t>(s.shards));
    for (size_t i = 0; i < order.size(); ++i) parts[i % parts.size()].push_back(order[i]);
    std::string index = "{\"metadata\": {\"total_size\": 0}, \"weight_map\": {";
    bool first = true;
    for (size_t p = 0; p < parts.size(); ++p) {
      char name[64];
      std::snprintf(name, sizeof name, "model-%05zu-of-%05d.safetensors", p + 1, s.shards);
      write_file(dir + "/" + name, safetensors_bytes(parts[p], R"({"format": "pt"})"));
      for (const HfTensor& t : parts[p]) {
        index += std::string(first ? "" : ", ") + json_string(t.name) + ": \"" + name + "\"";
        first = false;
      }
    }
    write_file(dir + "/model.safetensors.index.json", index + "}}\n");
  }
  if (s.tokenizer.empty()) {
    write_file(dir + "/tokenizer.json", small_tokenizer_json());
  } else {
    for (const char* f : {"tokenizer.json", "tokenizer_config.json"}) {
      fs::copy_file(shared_testdata("tokenizers/" + s.tokenizer + "/" + f), dir + "/" + f,
                    fs::copy_options::overwrite_existing);
    }
  }
  return ck;
}

std::vector<std::pair<std::string, std::string>> spm_merges(const std::vector<std::string>& tokens,
                                                            const std::vector<float>& scores,
                                                            const std::vector<int64_t>& types) {
  std::unordered_map<std::string, int64_t> id;
  for (size_t i = 0; i < tokens.size(); ++i) id.emplace(tokens[i], static_cast<int64_t>(i));
  struct M {
    std::string l, r;
    float score;
    int64_t il, ir;
  };
  std::vector<M> all;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (types[i] != 1) continue;
    const std::string& t = tokens[i];
    std::vector<M> local;
    for (size_t at = 1; at < t.size(); ++at) {
      if ((static_cast<unsigned char>(t[at]) & 0xC0) == 0x80) continue;  // split at code points only
      const std::string l = t.substr(0, at), r = t.substr(at);
      const auto a = id.find(l), b = id.find(r);
      if (a != id.end() && b != id.end()) local.push_back({l, r, scores[i], a->second, b->second});
    }
    std::sort(local.begin(), local.end(),
              [](const M& x, const M& y) { return std::tie(x.il, x.ir) < std::tie(y.il, y.ir); });
    all.insert(all.end(), local.begin(), local.end());
  }
  std::stable_sort(all.begin(), all.end(), [](const M& x, const M& y) { return x.score > y.score; });
  std::vector<std::pair<std::string, std::string>> out;
  for (const M& m : all) out.emplace_back(m.l, m.r);
  return out;
}

void write_hf_from_gguf(const std::string& gguf_path, const std::string& dir) {
  const auto f = gguf::GgufFile::open(gguf_path);
  if (f->get_string("general.architecture") != std::optional<std::string>("llama")) {
    throw std::runtime_error(gguf_path + ": not a llama GGUF");
  }
  const int64_t n_embd = *f->get_int("llama.embedding_length");
  const int64_t n_head = *f->get_int("llama.attention.head_count");
  const int64_t n_head_kv = f->get_int("llama.attention.head_count_kv").value_or(n_head);
  const int64_t hd = n_embd / n_head;
  const std::map<std::string, std::string> global = {{"token_embd.weight", "model.embed_tokens.weight"},
                                                     {"output_norm.weight", "model.norm.weight"},
                                                     {"output.weight", "lm_head.weight"}};
  const std::map<std::string, std::string> block = {
      {"attn_norm", "input_layernorm"}, {"attn_q", "self_attn.q_proj"},      {"attn_k", "self_attn.k_proj"},
      {"attn_v", "self_attn.v_proj"},   {"attn_output", "self_attn.o_proj"}, {"ffn_norm", "post_attention_layernorm"},
      {"ffn_gate", "mlp.gate_proj"},    {"ffn_up", "mlp.up_proj"},           {"ffn_down", "mlp.down_proj"}};
  std::vector<HfTensor> tensors;
  bool tied = true;
  for (const auto& t : f->tensors()) {
    if (t.type != TensorType::F32) throw std::runtime_error(std::string(t.name) + ": not F32");
    HfTensor h;
    h.dtype = "F32";
    for (int d = t.n_dims - 1; d >= 0; --d) h.shape.push_back(t.ne[d]);
    h.values.resize(static_cast<size_t>(t.n_elements()));
    std::memcpy(h.values.data(), t.data, t.n_bytes);
    const std::string name(t.name);
    if (name == "output.weight") tied = false;
    if (global.count(name)) {
      h.name = global.at(name);
    } else {
      // blk.N.kind.suffix
      const size_t a = name.find('.'), b = name.find('.', a + 1), c = name.find('.', b + 1);
      const std::string n = name.substr(a + 1, b - a - 1), kind = name.substr(b + 1, c - b - 1);
      h.name = "model.layers." + n + "." + block.at(kind) + name.substr(c);
      if (kind == "attn_q" || kind == "attn_k") {
        // GGUF row h*hd + 2j + s holds HF row h*hd + s*hd/2 + j.
        const int64_t cols = h.shape[1];
        std::vector<float> hf(h.values.size());
        for (int64_t r = 0; r < h.shape[0]; ++r) {
          const int64_t head = r / hd, j = (r % hd) / 2, s = r % 2;
          std::memcpy(hf.data() + (head * hd + s * (hd / 2) + j) * cols, h.values.data() + r * cols,
                      static_cast<size_t>(cols) * sizeof(float));
        }
        h.values.swap(hf);
      }
    }
    tensors.push_back(std::move(h));
  }
  fs::create_directories(dir);
  write_file(dir + "/model.safetensors", safetensors_bytes(tensors, R"({"format": "pt"})"));

  const auto tv = *f->get_string_array("tokenizer.ggml.tokens");
  const std::vector<std::string> tokens(tv.begin(), tv.end());
  const std::vector<float> scores =
      f->get_float_array("tokenizer.ggml.scores").value_or(std::vector<float>(tokens.size()));
  const std::vector<int64_t> types =
      f->get_int_array("tokenizer.ggml.token_type").value_or(std::vector<int64_t>(tokens.size(), 1));
  const int64_t bos = f->get_int("tokenizer.ggml.bos_token_id").value_or(1);
  const int64_t eos = f->get_int("tokenizer.ggml.eos_token_id").value_or(2);
  const bool prefix = f->get_bool("tokenizer.ggml.add_space_prefix").value_or(true);
  char eps[64], theta[64];
  std::snprintf(eps, sizeof eps, "%.9g", f->get_float("llama.attention.layer_norm_rms_epsilon").value_or(1e-5));
  std::snprintf(theta, sizeof theta, "%.9g", f->get_float("llama.rope.freq_base").value_or(10000.0));
  write_file(dir + "/config.json",
             "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\", \"vocab_size\": " +
                 std::to_string(tokens.size()) + ", \"hidden_size\": " + std::to_string(n_embd) +
                 ", \"num_hidden_layers\": " + std::to_string(*f->get_int("llama.block_count")) +
                 ", \"intermediate_size\": " + std::to_string(*f->get_int("llama.feed_forward_length")) +
                 ", \"num_attention_heads\": " + std::to_string(n_head) +
                 ", \"num_key_value_heads\": " + std::to_string(n_head_kv) + ", \"max_position_embeddings\": " +
                 std::to_string(f->get_int("llama.context_length").value_or(2048)) + ", \"rms_norm_eps\": " + eps +
                 ", \"rope_theta\": " + theta + ", \"tie_word_embeddings\": " + (tied ? "true" : "false") +
                 ", \"bos_token_id\": " + std::to_string(bos) + ", \"eos_token_id\": " + std::to_string(eos) + "}\n");

  const std::string sp = "\xE2\x96\x81";
  Json tj = Json::parse(std::string(R"({"version": "1.0", "normalizer": {"type": "Sequence", "normalizers": [)") +
                        (prefix ? R"({"type": "Prepend", "prepend": ")" + sp + R"("}, )" : "") +
                        R"({"type": "Replace", "pattern": {"String": " "}, "content": ")" + sp + R"("}]},
      "pre_tokenizer": null,
      "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": ")" +
                        sp +
                        R"("}, "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"}]},
      "model": {"type": "BPE", "dropout": null, "unk_token": "<unk>", "fuse_unk": true, "byte_fallback": true}})");
  Json vocab = Json::object();
  Json added = Json::array();
  Json merges = Json::array();
  for (size_t i = 0; i < tokens.size(); ++i) {
    vocab.as_object().emplace_back(tokens[i], Json(static_cast<int64_t>(i)));
    if (types[i] == 2 || types[i] == 3) {  // unknown, control
      Json a = Json::object();
      a.set("id", Json(static_cast<int64_t>(i)));
      a.set("content", Json(tokens[i]));
      a.set("special", Json(true));
      added.push_back(std::move(a));
    }
  }
  for (const auto& [l, r] : spm_merges(tokens, scores, types)) merges.push_back(Json(Json::Array{Json(l), Json(r)}));
  Json& model = const_cast<Json&>(tj.at("model"));
  model.set("vocab", std::move(vocab));
  model.set("merges", std::move(merges));
  tj.set("added_tokens", std::move(added));
  write_file(dir + "/tokenizer.json", tj.dump());
  Json tc = Json::object();
  tc.set("bos_token", Json(tokens[static_cast<size_t>(bos)]));
  tc.set("eos_token", Json(tokens[static_cast<size_t>(eos)]));
  tc.set("unk_token", Json("<unk>"));
  tc.set("add_bos_token", Json(f->get_bool("tokenizer.ggml.add_bos_token").value_or(true)));
  tc.set("add_eos_token", Json(false));
  tc.set("add_prefix_space", Json(prefix));
  write_file(dir + "/tokenizer_config.json", tc.dump());
}

std::vector<std::vector<double>> naive_hf_logits(const TinyCheckpoint& ck, const std::vector<int32_t>& tokens) {
  const TinySpec& s = ck.spec;
  const int64_t hd = ck.head_dim(), E = s.embd, H = s.heads, KV = s.kv_heads;
  const size_t T = tokens.size();
  const std::vector<double> freqs = inv_freqs(s, hd);
  std::vector<std::vector<double>> x(T, std::vector<double>(static_cast<size_t>(E)));
  const HfTensor& emb = ck.at("model.embed_tokens.weight");
  for (size_t t = 0; t < T; ++t) {
    for (int64_t i = 0; i < E; ++i) x[t][static_cast<size_t>(i)] = emb.values[static_cast<size_t>(tokens[t] * E + i)];
  }
  auto rope = [&](std::vector<double>& v, int64_t n_heads, size_t pos) {
    for (int64_t h = 0; h < n_heads; ++h) {
      double* p = v.data() + h * hd;
      for (int64_t i = 0; i < hd / 2; ++i) {
        const double a = static_cast<double>(pos) * freqs[static_cast<size_t>(i)];
        const double c = std::cos(a), sn = std::sin(a);
        const double x0 = p[i], x1 = p[i + hd / 2];
        p[i] = x0 * c - x1 * sn;
        p[i + hd / 2] = x1 * c + x0 * sn;
      }
    }
  };
  for (int64_t l = 0; l < s.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    std::vector<std::vector<double>> qs(T), ks(T), vs(T);
    for (size_t t = 0; t < T; ++t) {
      const std::vector<double> h =
          rms_norm(x[t], 0, static_cast<size_t>(E), ck.at(p + "input_layernorm.weight"), s.rms_eps);
      const bool bias = s.arch == "qwen2";
      qs[t] = linear(ck.at(p + "self_attn.q_proj.weight"), h, bias ? &ck.at(p + "self_attn.q_proj.bias") : nullptr);
      ks[t] = linear(ck.at(p + "self_attn.k_proj.weight"), h, bias ? &ck.at(p + "self_attn.k_proj.bias") : nullptr);
      vs[t] = linear(ck.at(p + "self_attn.v_proj.weight"), h, bias ? &ck.at(p + "self_attn.v_proj.bias") : nullptr);
      if (s.arch == "qwen3") {
        for (int64_t hh = 0; hh < H; ++hh) {
          const auto n = rms_norm(qs[t], static_cast<size_t>(hh * hd), static_cast<size_t>(hd),
                                  ck.at(p + "self_attn.q_norm.weight"), s.rms_eps);
          std::copy(n.begin(), n.end(), qs[t].begin() + hh * hd);
        }
        for (int64_t hh = 0; hh < KV; ++hh) {
          const auto n = rms_norm(ks[t], static_cast<size_t>(hh * hd), static_cast<size_t>(hd),
                                  ck.at(p + "self_attn.k_norm.weight"), s.rms_eps);
          std::copy(n.begin(), n.end(), ks[t].begin() + hh * hd);
        }
      }
      rope(qs[t], H, t);
      rope(ks[t], KV, t);
    }
    for (size_t t = 0; t < T; ++t) {
      std::vector<double> attn(static_cast<size_t>(H * hd), 0.0);
      for (int64_t hh = 0; hh < H; ++hh) {
        const int64_t g = hh / (H / KV);
        std::vector<double> score(t + 1);
        double mx = -1e300;
        for (size_t u = 0; u <= t; ++u) {
          double d = 0;
          for (int64_t i = 0; i < hd; ++i)
            d += qs[t][static_cast<size_t>(hh * hd + i)] * ks[u][static_cast<size_t>(g * hd + i)];
          score[u] = d / std::sqrt(static_cast<double>(hd));
          mx = std::max(mx, score[u]);
        }
        double sum = 0;
        for (double& v : score) sum += (v = std::exp(v - mx));
        for (size_t u = 0; u <= t; ++u) {
          for (int64_t i = 0; i < hd; ++i) {
            attn[static_cast<size_t>(hh * hd + i)] += score[u] / sum * vs[u][static_cast<size_t>(g * hd + i)];
          }
        }
      }
      const std::vector<double> o = linear(ck.at(p + "self_attn.o_proj.weight"), attn);
      for (int64_t i = 0; i < E; ++i) x[t][static_cast<size_t>(i)] += o[static_cast<size_t>(i)];
      const std::vector<double> h2 =
          rms_norm(x[t], 0, static_cast<size_t>(E), ck.at(p + "post_attention_layernorm.weight"), s.rms_eps);
      std::vector<double> g = linear(ck.at(p + "mlp.gate_proj.weight"), h2);
      const std::vector<double> u = linear(ck.at(p + "mlp.up_proj.weight"), h2);
      for (size_t i = 0; i < g.size(); ++i) g[i] = silu(g[i]) * u[i];
      const std::vector<double> d = linear(ck.at(p + "mlp.down_proj.weight"), g);
      for (int64_t i = 0; i < E; ++i) x[t][static_cast<size_t>(i)] += d[static_cast<size_t>(i)];
    }
  }
  const HfTensor& head = s.tied ? emb : ck.at("lm_head.weight");
  std::vector<std::vector<double>> logits(T);
  for (size_t t = 0; t < T; ++t) {
    logits[t] = linear(head, rms_norm(x[t], 0, static_cast<size_t>(E), ck.at("model.norm.weight"), s.rms_eps));
  }
  return logits;
}

}  // namespace edgellm::test
