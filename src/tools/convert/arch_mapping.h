// How a Hugging Face checkpoint of each supported model class becomes a GGUF model: the GGUF
// architecture, the tensor names (HF -> GGUF, as llama.cpp's convert_hf_to_gguf.py names them),
// the HF shape each tensor must have (from config.json), the Q/K row order, and which tensors may
// be absent. One table entry per family; adding a family (BERT for the embeddings work) is one
// more entry with its own tensor list.
//
// Shapes are HF's (row-major, [out, in] for a Linear); the GGUF file stores the reverse
// (ne[0] = in). Rows are never transposed, only reordered (RowOrder).
//
// Checkpoint names are first made canonical per family (canonical_hf_name): BERT checkpoints
// saved from BertForMaskedLM / BertForPreTraining carry a "bert." prefix that BertModel's lack,
// and checkpoints converted from TensorFlow name LayerNorm parameters gamma / beta; both are
// mapped as llama.cpp's BertModel.filter_tensors maps them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tools/convert/hf_config.h"

namespace edgellm::convert {

// A dimension of a tensor's shape, resolved from config.json.
enum class Dim {
  kVocab,       // vocab_size
  kEmbd,        // hidden_size
  kFfn,         // intermediate_size
  kQ,           // num_attention_heads * head_dim
  kKv,          // num_key_value_heads * head_dim
  kHeadDim,     // head_dim
  kPositions,   // max_position_embeddings (learned position rows: BERT)
  kTokenTypes,  // type_vocab_size (segment embedding rows: BERT)
};
int64_t resolve_dim(Dim dim, const HfConfig& config);
const char* dim_name(Dim dim);  // "vocab_size", "num_attention_heads * head_dim", ...

// The llama family's GGUF files pair RoPE dimensions as (2i, 2i+1) ("normal" RoPE), while HF
// rotates the two halves of each head (i, i + head_dim/2). llama.cpp's converter reorders the
// rows of Q and K (and their biases) per head so that the same weights give the same result:
// GGUF row h*hd + 2j + s = HF row h*hd + s*hd/2 + j (h: head, j < hd/2, s in {0, 1}).
enum class RowOrder { kAsIs, kRopePairsQ, kRopePairsK };

enum class Need {
  kRequired,
  kOutputHead,  // lm_head: required unless tie_word_embeddings (then skipped even when present:
                // transformers ties it to the embeddings at load, so the embeddings are what runs)
};

struct TensorMapping {
  const char* hf;          // per-layer: the part after "model.layers.N."; else the whole name
  const char* gguf;        // per-layer: the part after "blk.N."; else the whole name
  std::vector<Dim> shape;  // HF shape
  RowOrder order = RowOrder::kAsIs;
  Need need = Need::kRequired;
};

struct ArchitectureMapping {
  const char* gguf_arch;                // general.architecture
  std::vector<const char*> hf_classes;  // config.json "architectures"[0] values
  const char* layer_prefix;             // "model.layers."
  // Output order: before_blocks, then every block's per_layer tensors, then after_blocks.
  std::vector<TensorMapping> before_blocks;   // outside the blocks (token embeddings)
  std::vector<TensorMapping> per_layer;       // inside each block
  std::vector<TensorMapping> after_blocks;    // outside the blocks (final norm, output head)
  std::vector<const char*> ignored_suffixes;  // checkpoint buffers that are not weights
  bool write_vocab_size = false;              // "<arch>.vocab_size" (llama.cpp's llama converter writes it)
  bool write_rope_dimension_count = false;    // "<arch>.rope.dimension_count"
  // config.json "model_type" values this class may carry ("" in config.json is accepted: old
  // checkpoints omit it); another value is refused rather than converted under a wrong mapping.
  std::vector<const char*> model_types;
  // Encoders (BERT): LayerNorm hyper-parameters, bidirectional attention and the pooling type
  // instead of the decoder's RMSNorm and RoPE keys.
  bool encoder = false;
  const char* strip_prefix = nullptr;         // removed from checkpoint names first ("bert.")
  bool legacy_norm_names = false;             // ".gamma" -> ".weight", ".beta" -> ".bias"
  std::vector<const char*> ignored_prefixes;  // heads a conversion leaves out ("cls.predictions.")
};

// The mapping for a config.json "architectures"[0] class. Throws Error(kUnsupported) naming the
// class and listing the supported ones.
const ArchitectureMapping& find_architecture_mapping(std::string_view hf_class);
std::string supported_hf_classes();  // "LlamaForCausalLM, MistralForCausalLM, ..."

// A checkpoint tensor name resolved against a mapping.
struct MappedName {
  enum class Kind { kTensor, kIgnored } kind = Kind::kTensor;
  std::string gguf;  // "blk.3.attn_q.weight"
  std::string hf;    // the canonical HF name (canonical_hf_name)
  const TensorMapping* rule = nullptr;
  int32_t block = -1;  // -1 outside the blocks
  int64_t order = 0;   // sort key: the output order of the tensor in the file
};

// `hf_name` with the family's prefix removed and legacy names renamed ("bert.embeddings.LayerNorm.gamma"
// -> "embeddings.LayerNorm.weight"); other families' names are returned as they are.
std::string canonical_hf_name(const ArchitectureMapping& mapping, std::string_view hf_name);

// Throws Error(kUnsupported) for a name the mapping does not know (a tensor that would be
// dropped silently otherwise) and Error(kInvalidFile) for a block index >= n_layer.
MappedName map_tensor_name(const ArchitectureMapping& mapping, std::string_view hf_name, int64_t n_layer);

// The canonical HF names a complete checkpoint has, in output order (global tensors before the blocks,
// then per block; the output head last): what a converter expects and a test writes.
std::vector<std::string> expected_hf_names(const ArchitectureMapping& mapping, const HfConfig& config);

}  // namespace edgellm::convert
