// Records the reference numbers of tests/quant/test_quant_vs_llamacpp.cpp: the per-tensor
// quantization error of a quantized GGUF (made by llama.cpp's llama-quantize from an F32 GGUF)
// against that F32 original, as one JSON object per line:
//   {"tensor": "blk.0.attn_q.weight", "type": "q4_K", "rmse": 1.23e-3, "rms": 2.1e-2}
// Tensors that stayed F32 (norms) are skipped. With a text file, a last line gives the quantized
// model's perplexity on it as EdgeLLM measures it (test::file_perplexity: context 128, F32 KV):
//   {"perplexity": 10.9}
// Run by scripts/llamacpp-quant-reference.sh, which also has it write the synthetic
// Qwen2.5-0.5B-shape layer (test::qwen05_layer_spec) that the test regenerates in memory.
//
//   edgellm_quant_rmse F32.gguf QUANTIZED.gguf [TEXT]
//   edgellm_quant_rmse --write-qwen05-layer OUT.gguf
#include <cstdio>
#include <string>

#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "support/quant_error.h"

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--write-qwen05-layer") {
    edgellm::test::write_synthetic_model(edgellm::test::qwen05_layer_spec(), argv[2]);
    return 0;
  }
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: %s F32.gguf QUANTIZED.gguf [TEXT]\n", argv[0]);
    return 2;
  }
  try {
    const auto ref = edgellm::gguf::GgufFile::open(argv[1]);
    const auto q = edgellm::gguf::GgufFile::open(argv[2]);
    for (const auto& t : q->tensors()) {
      if (t.type == edgellm::TensorType::F32) continue;
      const auto* r = ref->find_tensor(t.name);
      edgellm::require(r != nullptr && r->type == edgellm::TensorType::F32 && r->n_elements() == t.n_elements(),
                       edgellm::ErrorCode::kInvalidFile, "no F32 original of the same size for " + std::string(t.name));
      const auto e = edgellm::test::quant_error(reinterpret_cast<const float*>(r->data), t.data, t.type, t.n_rows(),
                                                t.ne[0]);
      std::printf("{\"tensor\": \"%.*s\", \"type\": \"%s\", \"rmse\": %.9g, \"rms\": %.9g}\n",
                  static_cast<int>(t.name.size()), t.name.data(), edgellm::tensor_type_name(t.type), e.rmse, e.rms);
    }
    if (argc == 4) std::printf("{\"perplexity\": %.6f}\n", edgellm::test::file_perplexity(argv[2], argv[3]));
  } catch (const edgellm::Error& e) {
    std::fprintf(stderr, "edgellm_quant_rmse: %s\n", e.what());
    return 1;
  }
  return 0;
}
