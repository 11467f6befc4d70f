// libFuzzer target for model loading: arbitrary bytes as a GGUF image go through the whole load
// path an app runs on a downloaded file — GgufFile::from_bytes, Model::from_gguf (hyper-parameter
// ranges, tensor presence, shapes, types, data sizes, alignment) and Tokenizer::from_gguf (the
// tokenizer.ggml.* vocabulary) — then a short encode/decode. Each step must succeed or throw
// edgellm::Error; crashes, sanitizer reports, other exceptions, leaks and hangs are bugs. What
// loads is checked against itself: every matrix view must lie inside the file image.
//
// Seeds: tests/fuzz/corpus/model_load/ holds tiny valid models (llama + SentencePiece vocab,
// qwen2 + byte-level BPE, qwen3 with tied embeddings and key_length, llama with linear RoPE
// scaling and rope_freqs). They were written by LLVMFuzzerInitialize below with GgufWriter when
// EDGELLM_FUZZ_SEED_DIR is set (scripts/run-fuzzers.sh does that on every run, so a change to the
// loader's requirements shows up as seeds that no longer load: see the -runs=0 pass there).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace {

using edgellm::TensorType;
using edgellm::gguf::GgufWriter;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_model_load invariant violated: %s\n", what);
    std::abort();
  }
}

// ---------------------------------------------------------------- seeds

struct SeedSpec {
  const char* file;
  const char* arch;
  int n_embd, n_ff, n_head, n_head_kv, head_dim;  // head_dim 0: n_embd / n_head, no key_length key
  TensorType type;                                // every matrix
  bool tied, bpe, rope_linear, rope_freqs;
};

// Bytes of `n` elements of `type` (F32 or Q8_0: the two the seeds use).
size_t bytes_of(TensorType type, size_t n) { return type == TensorType::Q8_0 ? n / 32 * 34 : n * 4; }

// Deterministic small data: for Q8_0 every block gets scale 1/64 (F16 0x2400) and small quants.
std::vector<uint8_t> tensor_bytes(TensorType type, size_t n, uint32_t salt) {
  std::vector<uint8_t> b(bytes_of(type, n));
  if (type == TensorType::Q8_0) {
    for (size_t blk = 0; blk < n / 32; ++blk) {
      b[blk * 34] = 0x00;
      b[blk * 34 + 1] = 0x24;
      for (int i = 0; i < 32; ++i) b[blk * 34 + 2 + i] = static_cast<uint8_t>((blk * 7 + i * 13 + salt) % 17 - 8);
    }
  } else {
    for (size_t i = 0; i < n; ++i) {
      const float v = static_cast<float>(static_cast<int>((i * 2654435761u + salt) % 201) - 100) / 400.0f;
      std::memcpy(&b[i * 4], &v, 4);
    }
  }
  return b;
}

void write_vocab(GgufWriter& w, bool bpe) {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  if (bpe) {
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_string("tokenizer.ggml.pre", "qwen2");
    // Byte-level alphabet for ASCII letters and space (U+0120), a few merges, two control tokens.
    for (char c = 'a'; c <= 'z'; ++c) tokens.emplace_back(1, c);
    tokens.emplace_back("\xC4\xA0");
    tokens.emplace_back("he");
    tokens.emplace_back("ll");
    tokens.emplace_back("hell");
    tokens.emplace_back("\xC4\xA0w");
    types.assign(tokens.size(), 1);
    tokens.emplace_back("<|endoftext|>");
    tokens.emplace_back("<|im_start|>");
    types.push_back(3);
    types.push_back(3);
    w.set_array_string("tokenizer.ggml.merges", std::vector<std::string>{"h e", "l l", "he ll", "\xC4\xA0 w"});
    w.set_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(tokens.size() - 2));
    w.set_bool("tokenizer.ggml.add_bos_token", false);
  } else {
    w.set_string("tokenizer.ggml.model", "llama");
    tokens = {"<unk>", "<s>", "</s>", "<0x0A>", "\xE2\x96\x81", "a", "b", "\xE2\x96\x81" "a", "ab", "\xE4\xB8\xAD"};
    types = {2, 3, 3, 6, 1, 1, 1, 1, 1, 1};
    std::vector<float> scores;
    for (size_t i = 0; i < tokens.size(); ++i) scores.push_back(-static_cast<float>(i));
    w.set_array_f32("tokenizer.ggml.scores", scores);
    w.set_u32("tokenizer.ggml.bos_token_id", 1);
    w.set_u32("tokenizer.ggml.eos_token_id", 2);
    w.set_u32("tokenizer.ggml.unknown_token_id", 0);
  }
  w.set_array_string("tokenizer.ggml.tokens", tokens);
  w.set_array_i32("tokenizer.ggml.token_type", types);
}

std::vector<uint8_t> seed_model(const SeedSpec& s) {
  GgufWriter w;
  const std::string p = std::string(s.arch) + ".";
  const int head_dim = s.head_dim > 0 ? s.head_dim : s.n_embd / s.n_head;
  const int n_q = head_dim * s.n_head, n_kv = head_dim * s.n_head_kv;
  w.set_string("general.architecture", s.arch);
  w.set_u32(p + "embedding_length", static_cast<uint32_t>(s.n_embd));
  w.set_u32(p + "block_count", 1);
  w.set_u32(p + "feed_forward_length", static_cast<uint32_t>(s.n_ff));
  w.set_u32(p + "attention.head_count", static_cast<uint32_t>(s.n_head));
  w.set_u32(p + "attention.head_count_kv", static_cast<uint32_t>(s.n_head_kv));
  if (s.head_dim > 0) w.set_u32(p + "attention.key_length", static_cast<uint32_t>(s.head_dim));
  w.set_u32(p + "context_length", 256);
  w.set_f32(p + "attention.layer_norm_rms_epsilon", 1e-6f);
  w.set_f32(p + "rope.freq_base", 1e6f);
  if (s.rope_linear) {
    w.set_string(p + "rope.scaling.type", "linear");
    w.set_f32(p + "rope.scaling.factor", 4.0f);
  }
  write_vocab(w, s.bpe);
  // Vocabulary size = the token count written above.
  const int n_vocab = s.bpe ? 33 : 10;

  // add_tensor copies its bytes, so the temporaries may go at the end of each statement.
  uint32_t salt = 1;
  auto matrix = [&](const std::string& name, int n_in, int n_out) {
    const auto b = tensor_bytes(s.type, static_cast<size_t>(n_in) * n_out, salt++);
    w.add_tensor(name, s.type, {n_in, n_out}, b.data(), b.size());
  };
  auto vector = [&](const std::string& name, int n) {
    const auto b = tensor_bytes(TensorType::F32, static_cast<size_t>(n), salt++);
    w.add_tensor(name, TensorType::F32, {n}, b.data(), b.size());
  };
  matrix("token_embd.weight", s.n_embd, n_vocab);
  vector("output_norm.weight", s.n_embd);
  if (!s.tied) matrix("output.weight", s.n_embd, n_vocab);
  if (s.rope_freqs) vector("rope_freqs.weight", head_dim / 2);
  vector("blk.0.attn_norm.weight", s.n_embd);
  matrix("blk.0.attn_q.weight", s.n_embd, n_q);
  matrix("blk.0.attn_k.weight", s.n_embd, n_kv);
  matrix("blk.0.attn_v.weight", s.n_embd, n_kv);
  matrix("blk.0.attn_output.weight", n_q, s.n_embd);
  if (std::string(s.arch) == "qwen2") {
    vector("blk.0.attn_q.bias", n_q);
    vector("blk.0.attn_k.bias", n_kv);
    vector("blk.0.attn_v.bias", n_kv);
  }
  if (std::string(s.arch) == "qwen3") {
    vector("blk.0.attn_q_norm.weight", head_dim);
    vector("blk.0.attn_k_norm.weight", head_dim);
  }
  vector("blk.0.ffn_norm.weight", s.n_embd);
  matrix("blk.0.ffn_gate.weight", s.n_embd, s.n_ff);
  matrix("blk.0.ffn_up.weight", s.n_embd, s.n_ff);
  matrix("blk.0.ffn_down.weight", s.n_ff, s.n_embd);
  return w.write_to_bytes();
}

void write_seeds(const std::string& dir) {
  const SeedSpec specs[] = {
      {"seed-llama-spm.gguf", "llama", 16, 32, 2, 1, 0, TensorType::F32, false, false, false, false},
      {"seed-qwen2-bpe-q8_0.gguf", "qwen2", 32, 64, 2, 1, 0, TensorType::Q8_0, false, true, false, false},
      {"seed-qwen3-tied.gguf", "qwen3", 16, 32, 2, 2, 12, TensorType::F32, true, true, false, false},
      {"seed-llama-rope.gguf", "llama", 16, 32, 4, 2, 0, TensorType::F32, true, false, true, true},
  };
  for (const auto& s : specs) {
    const auto bytes = seed_model(s);
    const std::string path = dir + "/" + s.file;
    if (FILE* f = std::fopen(path.c_str(), "wb")) {
      std::fwrite(bytes.data(), 1, bytes.size(), f);
      std::fclose(f);
    }
  }
}

// ---------------------------------------------------------------- the target

bool inside(const uint8_t* p, size_t n, const edgellm::gguf::GgufFile& f) {
  const uint8_t* lo = f.mapping().data();
  const size_t size = f.mapping().size();
  return p >= lo && n <= size && p <= lo + (size - n);
}

void exercise(const edgellm::Model& m) {
  const auto& hp = m.hparams();
  check(hp.n_embd >= 1 && hp.n_layer >= 1 && hp.n_vocab >= 1 && hp.head_dim % 2 == 0, "hparams out of range");
  check(m.n_layer() == hp.n_layer, "layer count");
  for (const auto* w : m.matrices()) {
    check(w->n_out >= 1 && w->n_in >= 1, "empty matrix");
    // The loader was asked not to repack: every view is into the mapped file.
    check(inside(w->data, static_cast<size_t>(w->n_out) * w->row_bytes, m.gguf()), "matrix view outside the file");
    volatile uint8_t sink = w->row(w->n_out - 1)[w->row_bytes - 1];  // ASan checks the last byte
    (void)sink;
  }
  volatile float acc = 0;
  for (int64_t i = 0; i < m.output_norm().n; ++i) acc = acc + m.output_norm().data[i];
  for (int i = 0; i < m.n_layer(); ++i) {
    const auto& l = m.layer(i);
    for (int64_t k = 0; k < l.ffn_norm.n; ++k) acc = acc + l.ffn_norm.data[k];
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("EDGELLM_FUZZ_SEED_DIR"); dir && *dir) write_seeds(dir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::unique_ptr<edgellm::Model> model;
  try {
    edgellm::ModelLoadParams params;
    params.repack = edgellm::RepackMode::kOff;  // repacking is the kernels' business, not parsing
    model = edgellm::Model::from_gguf(edgellm::gguf::GgufFile::from_bytes(data, size), params);
  } catch (const edgellm::Error&) {
    return 0;  // rejected cleanly
  }
  exercise(*model);
  try {
    const auto tok = edgellm::Tokenizer::from_gguf(model->gguf());
    check(tok->n_vocab() >= 1, "empty vocabulary");
    for (const char* text : {"hello world", "ab \xE4\xB8\xAD\n", "<|im_start|>a"}) {
      const auto ids = tok->encode(text, true, true);
      for (int32_t id : ids) check(id >= 0 && id < tok->n_vocab(), "token id out of range");
      (void)tok->decode(ids);
    }
  } catch (const edgellm::Error&) {
    // A model file without a usable vocabulary loads (weights-only); its tokenizer is refused.
  }
  return 0;
}
