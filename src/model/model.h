// A loaded model: validated hyper-parameters plus zero-copy views of every weight in the GGUF
// mapping. Read-only after load, so any number of Contexts may share one Model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf_reader.h"
#include "kernels/tensor_type.h"
#include "model/architecture.h"
#include "model/hparams.h"
#include "platform/memory_stats.h"

namespace edgellm {

// A 2-D weight matrix [n_out rows, n_in columns] (ggml ne = [n_in, n_out]) in its file type.
struct WeightView {
  std::string_view name;  // tensor name (points into the mapping)
  TensorType type = TensorType::F32;
  const uint8_t* data = nullptr;  // row 0; row r at data + r * row_bytes
  int64_t n_in = 0;
  int64_t n_out = 0;
  size_t row_bytes = 0;
  bool present() const { return data != nullptr; }
  const uint8_t* row(int64_t r) const { return data + static_cast<size_t>(r) * row_bytes; }
};

// An F32 vector (norm weights, biases, rope factors) viewed in place.
struct VectorView {
  const float* data = nullptr;
  int64_t n = 0;
  bool present() const { return data != nullptr; }
};

// A layer of either family. Decoders (llama block) use attn_norm / ffn_norm before their
// sub-blocks and ffn_gate; encoders (bert) use the biases and the LayerNorms after each residual
// sum (attn_out_norm, layer_out_norm, each with a bias) and no ffn_gate.
struct LayerWeights {
  VectorView attn_norm;            // [n_embd]
  WeightView wq;                   // [n_embd_q rows, n_embd]
  WeightView wk;                   // [n_embd_kv rows, n_embd]
  WeightView wv;                   // [n_embd_kv rows, n_embd]
  WeightView wo;                   // [n_embd rows, n_embd_q]
  VectorView bq, bk, bv;           // qwen2, bert: [n_embd_q], [n_embd_kv], [n_embd_kv]
  VectorView bo;                   // bert: [n_embd]
  VectorView q_norm, k_norm;       // qwen3: [head_dim], shared by all heads
  VectorView ffn_norm;             // [n_embd]
  WeightView ffn_gate;             // [n_ff rows, n_embd]
  WeightView ffn_up;               // [n_ff rows, n_embd]
  WeightView ffn_down;             // [n_embd rows, n_ff]
  VectorView ffn_up_b, ffn_down_b;             // bert: [n_ff], [n_embd]
  VectorView attn_out_norm, attn_out_norm_b;   // bert: [n_embd] LayerNorm after attention + residual
  VectorView layer_out_norm, layer_out_norm_b; // bert: [n_embd] LayerNorm after the FFN + residual
};

// Load-time repacking of Q4_0 / Q5_0 / Q8_0 / Q4_K / Q6_K matrices into 16-row interleaved groups
// (kernels/repack.h).
//   kAuto: repack when the active ISA has a SIMD kernel for the packed layouts (AVX-512 VNNI,
//          AVX2, ARM dotprod / i8mm: all five; plain NEON: none);
//   kOn:   always (the scalar reference runs it elsewhere: for tests);
//   kOff:  multiply the mapped file layout directly (no copy at all).
// Cost: the repacked tensors move from clean, evictable file pages into anonymous memory of the
// same size (reported by repacked_bytes()); the mapped pages they came from are released, so the
// resident total stays about the same.
enum class RepackMode { kAuto, kOn, kOff };

// Pack files (model/pack_file.h): the repacked matrices stored once beside the model and mapped
// at load instead of repacked (no copy: the load costs milliseconds, the packed weights are clean
// file pages). Only consulted when `repack` is not kOff.
//   kAuto:    map the pack file (`pack_path`, or pack_file_path(model path, pack_dir) when that
//             exists); when it is refused, log why (kWarn) and repack as `repack` says;
//   kOff:     never look for one;
//   kRequire: the pack file must be used: a refusal throws its Error (tools, tests).
enum class PackFileMode { kAuto, kOff, kRequire };

struct ModelLoadParams {
  // Touch every weight page after mapping (predictable first-token latency, costs load time).
  bool prefault = false;
  RepackMode repack = RepackMode::kAuto;
  int repack_threads = 0;  // 0 = the forward pass's default (the big cores), on the shared pool
  PackFileMode pack_file = PackFileMode::kAuto;
  std::string pack_path;   // "" = pack_file_path(model path, pack_dir) (none for in-memory models)
  // Where pack files live when pack_path is "": "" = beside the model. A folder instead keeps
  // them out of a read-only install location (an app's cache folder) and still follows the
  // model on a hot swap: the name is the model file's.
  std::string pack_dir;
};

const char* repack_mode_name(RepackMode mode);
// "auto", "on" or "off"; throws Error(kInvalidArgument) naming the value otherwise.
RepackMode parse_repack_mode(const std::string& text);

class Model {
 public:
  // Opens, maps and validates. Errors: kIo (cannot open), kInvalidFile (malformed file, missing
  // tensor, wrong shape), kUnsupported (architecture, tensor type, feature).
  static std::unique_ptr<Model> load(const std::string& path, const ModelLoadParams& params = {});
  static std::unique_ptr<Model> from_gguf(std::unique_ptr<gguf::GgufFile> file, const ModelLoadParams& params = {});

  const HParams& hparams() const { return hp_; }
  const Architecture& architecture() const { return *arch_; }
  const gguf::GgufFile& gguf() const { return *file_; }

  const WeightView& token_embd() const { return token_embd_; }  // [n_vocab rows, n_embd]
  const VectorView& output_norm() const { return output_norm_; }  // [n_embd]
  const WeightView& output() const { return output_; }            // [n_vocab rows, n_embd]; token_embd when tied
  bool output_tied() const { return output_tied_; }
  const VectorView& rope_freqs() const { return rope_freqs_; }    // [n_rot / 2] or absent
  // Encoders: the rows added to each token's embedding, and the LayerNorm after their sum.
  const WeightView& position_embd() const { return position_embd_; }  // [n_ctx_train rows, n_embd]
  const WeightView& token_types() const { return token_types_; }      // [n_token_types rows, n_embd] or absent
  const VectorView& embd_norm() const { return embd_norm_; }          // [n_embd]
  const VectorView& embd_norm_b() const { return embd_norm_b_; }      // [n_embd]
  // The classification head of rerankers (pooling rank; llama.cpp's names, all optional):
  // score = cls_out @ tanh(cls @ h + cls_b) + cls_out_b, the tanh layer only when cls is present.
  const WeightView& cls() const { return cls_; }            // [n_embd rows, n_embd]
  const VectorView& cls_b() const { return cls_b_; }        // [n_embd]
  const WeightView& cls_out() const { return cls_out_; }    // [n_cls_out rows, n_embd]
  const VectorView& cls_out_b() const { return cls_out_b_; }  // [n_cls_out]
  const LayerWeights& layer(int i) const { return layers_.at(static_cast<size_t>(i)); }
  int n_layer() const { return hp_.n_layer; }

  // The matrices the forward pass multiplies: the output head (token_embd when tied; absent for
  // encoders), each layer's seven (wq, wk, wv, wo, ffn_gate, ffn_up, ffn_down; ffn_gate absent
  // for encoders), then the classification head (cls, cls_out) when present, in that order.
  std::vector<const WeightView*> matrices() const;

  // Points the matrix named view.name at other bytes and returns the view it replaced (swap that
  // back the same way). For the quantization-sensitivity search (tools/quant/tensor_sensitivity.h),
  // which evaluates the model with one matrix quantized at a time without reloading it. `view`
  // needs the matrix's n_in and n_out and a type is_supported_matmul_type() accepts in the file
  // layout; the caller keeps its bytes alive while it is in place. A tied output head and
  // token_embd swap together. Not thread-safe: no Context may decode with this model meanwhile
  // (the views are read without a lock). kInvalidArgument: no such matrix, wrong shape or type.
  WeightView swap_matrix(const WeightView& view);

  // Bytes of every tensor the model uses (the mapped weights).
  size_t weight_bytes() const { return weight_bytes_; }
  // Anonymous memory holding repacked matrices (0 when nothing was repacked), and their count.
  size_t repacked_bytes() const { return packed_.size(); }
  int repacked_tensors() const { return repacked_tensors_; }
  // Matrices mapped from a pack file (0 when none was used), the file, and what the load did
  // with it: "" (not looked for), "mapped <path>", "none at <path>" or "refused: <why>".
  int pack_mapped_tensors() const { return pack_mapped_tensors_; }
  const gguf::GgufFile* pack_file() const { return pack_file_.get(); }
  const std::string& pack_file_status() const { return pack_status_; }

 private:
  Model() = default;
  class Binder;  // model.cpp: binds tensors by name, checks shapes and types
  void bind(const ModelLoadParams& params);
  void bind_decoder(Binder& b);
  void bind_encoder(Binder& b);
  void repack_weights(const ModelLoadParams& params);  // model_repack.cpp
  void use_pack_file(const ModelLoadParams& params);   // model_pack.cpp
  void map_pack_file(const std::string& path, bool any_isa);
  void own_vectors();
  std::vector<WeightView*> mutable_matrices();  // matrices(), for load-time rebinding

  std::unique_ptr<gguf::GgufFile> file_;
  HParams hp_;
  const Architecture* arch_ = nullptr;
  WeightView token_embd_;
  VectorView output_norm_;
  WeightView output_;
  bool output_tied_ = false;
  VectorView rope_freqs_;
  WeightView position_embd_, token_types_;
  VectorView embd_norm_, embd_norm_b_;
  WeightView cls_, cls_out_;
  VectorView cls_b_, cls_out_b_;
  std::vector<LayerWeights> layers_;
  size_t weight_bytes_ = 0;
  AlignedBuffer packed_;
  int repacked_tensors_ = 0;
  std::unique_ptr<gguf::GgufFile> pack_file_;  // mapped pack file; views point into it
  int pack_mapped_tensors_ = 0;
  std::string pack_status_;
  AlignedBuffer vectors_;  // the F32 vectors, copied out of the file (own_vectors)
};

// Matmul weight types the engine multiplies directly.
bool is_supported_matmul_type(TensorType type);

}  // namespace edgellm
