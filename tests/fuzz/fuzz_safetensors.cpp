// libFuzzer target for what `edgellm convert` reads from a downloaded model directory: the first
// byte picks the reader, the rest is the file.
//   mode 0: a safetensors file -> SafetensorsFile::from_bytes. What loads must keep the promise
//           the converter relies on: every tensor's bytes lie inside the buffer (all of them are
//           read here, so ASan sees any escape), byte size = elements x dtype size, and the
//           tensors tile the data section; the F32 / F16 / BF16 rows are converted as convert does.
//   mode 1: a config.json -> read_hf_config, then the architecture mapping and the shapes it
//           derives (dimensions positive, products without overflow).
//   mode 2: a tokenizer.json (with one of three tokenizer_config.json variants, by length) ->
//           export_hf_tokenizer: byte-level BPE, SentencePiece-style BPE, WordPiece, the special
//           tokens and post-processor rules; ids in range, one type per token.
// Each step must succeed or throw edgellm::Error. Reads no files.
//
// Seeds: with EDGELLM_FUZZ_SEED_DIR set, LLVMFuzzerInitialize writes small valid inputs of each
// mode (safetensors of every float dtype, sharded-style headers, the config.json shapes of
// Qwen2.5-0.5B, Qwen3-0.6B and Llama 3.2-1B with their RoPE settings, bge-small and BERT-base
// (BertModel / BertForMaskedLM), tokenizer.json files of the three families).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/json.h"
#include "kernels/kernels.h"
#include "tools/convert/arch_mapping.h"
#include "tools/convert/hf_config.h"
#include "tools/convert/safetensors.h"
#include "tools/convert/tokenizer_export.h"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_safetensors invariant violated: %s\n", what);
    std::abort();
  }
}

std::string safetensors(const std::string& header_body, const std::string& data) {
  std::string header = "{" + header_body + "}";
  while (header.size() % 8) header += ' ';
  const uint64_t n = header.size();
  return std::string(reinterpret_cast<const char*>(&n), 8) + header + data;
}

void write_seed(const std::string& dir, const std::string& name, char mode, const std::string& body) {
  const std::string path = dir + "/" + name;
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fputc(mode, f);
    std::fwrite(body.data(), 1, body.size(), f);
    std::fclose(f);
  }
}

void write_seeds(const std::string& dir) {
  const std::string f32(24, '\x3f'), f16(12, '\x3c'), bf16(16, '\x3f');
  write_seed(
      dir, "st-f32.safetensors", 0,
      safetensors(
          R"("__metadata__": {"format": "pt"}, "model.norm.weight": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]})",
          f32));
  write_seed(
      dir, "st-mixed.safetensors", 0,
      safetensors(
          R"("a": {"dtype": "F16", "shape": [2, 3], "data_offsets": [0, 12]}, "b": {"dtype": "BF16", "shape": [8], "data_offsets": [12, 28]}, "c": {"dtype": "I64", "shape": [0], "data_offsets": [28, 28]})",
          f16 + bf16));
  write_seed(dir, "st-empty.safetensors", 0, safetensors("", ""));
  write_seed(
      dir, "config-qwen25.json", 1,
      R"({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "vocab_size": 151936, "hidden_size": 896, "num_hidden_layers": 24, "intermediate_size": 4864, "num_attention_heads": 14, "num_key_value_heads": 2, "max_position_embeddings": 32768, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "rope_scaling": null, "tie_word_embeddings": true, "bos_token_id": 151643, "eos_token_id": 151643})");
  write_seed(
      dir, "config-qwen3.json", 1,
      R"({"architectures": ["Qwen3ForCausalLM"], "vocab_size": 151936, "hidden_size": 1024, "num_hidden_layers": 28, "intermediate_size": 3072, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128, "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}, "tie_word_embeddings": true, "eos_token_id": 151645})");
  write_seed(
      dir, "config-llama32.json", 1,
      R"({"architectures": ["LlamaForCausalLM"], "vocab_size": 128256, "hidden_size": 2048, "num_hidden_layers": 16, "intermediate_size": 8192, "num_attention_heads": 32, "num_key_value_heads": 8, "rope_theta": 500000.0, "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"}, "eos_token_id": [128001, 128008, 128009], "pad_token_id": -1})");
  write_seed(
      dir, "config-bge-small.json", 1,
      R"({"_name_or_path": "BAAI/bge-small-en-v1.5", "architectures": ["BertModel"], "attention_probs_dropout_prob": 0.1, "hidden_act": "gelu", "hidden_size": 384, "intermediate_size": 1536, "layer_norm_eps": 1e-12, "max_position_embeddings": 512, "model_type": "bert", "num_attention_heads": 12, "num_hidden_layers": 12, "pad_token_id": 0, "position_embedding_type": "absolute", "type_vocab_size": 2, "vocab_size": 30522})");
  write_seed(
      dir, "config-bert-mlm.json", 1,
      R"({"architectures": ["BertForMaskedLM"], "hidden_act": "gelu", "hidden_size": 768, "intermediate_size": 3072, "layer_norm_eps": 1e-12, "max_position_embeddings": 512, "model_type": "bert", "num_attention_heads": 12, "num_hidden_layers": 12, "type_vocab_size": 2, "vocab_size": 30522, "is_decoder": false})");
  write_seed(
      dir, "tok-bytelevel.json", 2,
      R"({"added_tokens": [{"id": 4, "content": "<|endoftext|>", "special": true}, {"id": 5, "content": "<think>", "special": false}],
                 "pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, "behavior": "Isolated"}, {"type": "ByteLevel", "use_regex": false}]},
                 "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<|endoftext|>"}}, {"Sequence": {"id": "A"}}], "pair": [{"SpecialToken": {"id": "<|endoftext|>"}}, {"Sequence": {"id": "A"}}, {"SpecialToken": {"id": "<|endoftext|>"}}, {"Sequence": {"id": "B"}}]},
                 "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "\u0120": 3}, "merges": [["a", "b"]]}})");
  write_seed(
      dir, "tok-spm.json", 2,
      R"({"added_tokens": [{"id": 0, "content": "<unk>", "special": true}, {"id": 1, "content": "<s>", "special": true}],
                 "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"}, {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
                 "model": {"type": "BPE", "byte_fallback": true, "unk_token": "<unk>", "vocab": {"<unk>": 0, "<s>": 1, "<0x41>": 2, "\u2581": 3, "a": 4, "\u2581a": 5}, "merges": ["\u2581 a"]}})");
  write_seed(
      dir, "tok-wordpiece.json", 2,
      R"({"added_tokens": [{"id": 0, "content": "[PAD]", "special": true}, {"id": 1, "content": "[CLS]", "special": true}, {"id": 2, "content": "[SEP]", "special": true}],
                 "normalizer": {"type": "BertNormalizer", "lowercase": true, "strip_accents": null},
                 "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "[CLS]"}}, {"Sequence": {"id": "A"}}, {"SpecialToken": {"id": "[SEP]"}}], "pair": [{"SpecialToken": {"id": "[CLS]"}}, {"Sequence": {"id": "A"}}, {"SpecialToken": {"id": "[SEP]"}}, {"Sequence": {"id": "B"}}, {"SpecialToken": {"id": "[SEP]"}}]},
                 "model": {"type": "WordPiece", "vocab": {"[PAD]": 0, "[CLS]": 1, "[SEP]": 2, "hello": 3, "##lo": 4}}})");
}

const edgellm::Json* tokenizer_config(size_t variant) {
  static const edgellm::Json configs[] = {
      edgellm::Json::parse(
          R"({"bos_token": null, "eos_token": "<|endoftext|>", "add_bos_token": false, "chat_template": "{{ x }}"})"),
      edgellm::Json::parse(
          R"({"cls_token": "[CLS]", "sep_token": {"content": "[SEP]"}, "unk_token": "<unk>", "add_prefix_space": true,
                               "chat_template": [{"name": "default", "template": "a"}, {"name": "tool use!", "template": "b"}]})"),
  };
  return variant < 2 ? &configs[variant] : nullptr;
}

void fuzz_safetensors_file(const uint8_t* data, size_t size) {
  using edgellm::convert::SafetensorsFile;
  try {
    const SafetensorsFile f = SafetensorsFile::from_bytes(data, size, "fuzz");
    const uint8_t* base = f.mapping().data();
    size_t covered = 0;
    std::vector<float> row;
    for (const auto& t : f.tensors()) {
      check(t.offset >= 8 + f.header_bytes() && t.offset <= size && t.n_bytes <= size - t.offset,
            "tensor outside the file");
      check(t.data == base + t.offset, "tensor data pointer");
      check(static_cast<uint64_t>(t.n_elements) * edgellm::convert::dtype_size(t.dtype) == t.n_bytes, "byte size");
      covered += t.n_bytes;
      volatile uint8_t sink = 0;
      for (size_t i = 0; i < t.n_bytes; ++i) sink = sink ^ t.data[i];  // ASan checks every byte
      edgellm::TensorType type;
      if (edgellm::convert::dtype_tensor_type(t.dtype, &type) && t.n_elements > 0 && t.n_elements <= 4096) {
        std::vector<uint8_t> raw(t.data, t.data + t.n_bytes);
        row.resize(static_cast<size_t>(t.n_elements));
        edgellm::kernels::dequantize_row(type, raw.data(), row.data(), t.n_elements);
      }
    }
    check(covered == size - 8 - f.header_bytes(), "tensors do not tile the data section");
  } catch (const edgellm::Error&) {
  }
}

void fuzz_config(std::string_view text) {
  using namespace edgellm::convert;
  try {
    const HfConfig c = read_hf_config(edgellm::Json::parse(text), "config.json");
    check(c.num_attention_heads > 0 && c.num_key_value_heads > 0 && c.num_attention_heads % c.num_key_value_heads == 0,
          "head counts");
    check(c.effective_head_dim() > 0 && c.effective_head_dim() % 2 == 0, "head dimension");
    const ArchitectureMapping& m = find_architecture_mapping(c.architecture);
    for (Dim d : {Dim::kVocab, Dim::kEmbd, Dim::kFfn, Dim::kQ, Dim::kKv, Dim::kHeadDim, Dim::kTokenTypes}) {
      check(resolve_dim(d, c) > 0, "a resolved dimension is not positive");
    }
    if (c.num_hidden_layers <= 64) {
      for (const std::string& name : expected_hf_names(m, c)) {
        const MappedName mn = map_tensor_name(m, name, c.num_hidden_layers);
        check(mn.kind == MappedName::Kind::kTensor && !mn.gguf.empty(), "an expected name does not map");
      }
    }
  } catch (const edgellm::Error&) {
  }
}

void fuzz_tokenizer(std::string_view text, size_t size) {
  using namespace edgellm::convert;
  try {
    const edgellm::Json tj = edgellm::Json::parse(text);
    TokenizerSources src;
    src.tokenizer_json = &tj;
    src.tokenizer_config = tokenizer_config(size % 3);
    src.vocab_size = static_cast<int64_t>(size % 64);
    const TokenizerExport e = export_hf_tokenizer(src);
    check(e.types.size() == e.tokens.size(), "one type per token");
    check(e.scores.empty() || e.scores.size() == e.tokens.size(), "one score per token");
    check(static_cast<int64_t>(e.tokens.size()) >= src.vocab_size, "padded to vocab_size");
    for (const auto& [type, id] : e.special_ids)
      check(id >= 0 && static_cast<size_t>(id) < e.tokens.size(), "special id in range");
  } catch (const edgellm::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("EDGELLM_FUZZ_SEED_DIR")) write_seeds(dir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0] % 3;
  const uint8_t* body = data + 1;
  const size_t n = size - 1;
  const std::string_view text(reinterpret_cast<const char*>(body), n);
  if (mode == 0) {
    fuzz_safetensors_file(body, n);
  } else if (mode == 1) {
    fuzz_config(text);
  } else {
    fuzz_tokenizer(text, n);
  }
  return 0;
}
