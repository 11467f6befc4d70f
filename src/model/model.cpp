#include "model/model.h"

#include <algorithm>
#include <sstream>

#include "core/error.h"
#include "kernels/repack.h"

namespace edgellm {

bool is_supported_matmul_type(TensorType type) {
  switch (type) {
    case TensorType::F32:
    case TensorType::F16:
    case TensorType::BF16:
    case TensorType::Q4_0:
    case TensorType::Q4_1:
    case TensorType::Q5_0:
    case TensorType::Q5_1:
    case TensorType::Q8_0:
    case TensorType::Q4_K:
    case TensorType::Q5_K:
    case TensorType::Q6_K:
      return true;
    default:
      return false;
  }
}

namespace {

std::string shape_str(int64_t a, int64_t b) { return "[" + std::to_string(a) + ", " + std::to_string(b) + "]"; }

}  // namespace

// Binds tensors by name, checks them against the expected shapes and records what was used.
class Model::Binder {
 public:
  Binder(const gguf::GgufFile& f, const HParams& hp) : f_(f), hp_(hp) {}

  std::string context() const {
    std::ostringstream s;
    s << hp_.arch << " with n_embd " << hp_.n_embd << ", n_head " << hp_.n_head << ", n_head_kv " << hp_.n_head_kv
      << ", head_dim " << hp_.head_dim << ", n_ff " << hp_.n_ff << ", n_vocab " << hp_.n_vocab;
    return s.str();
  }

  const gguf::TensorInfo* find(const std::string& name, bool required) {
    const gguf::TensorInfo* t = f_.find_tensor(name);
    require(t || !required, ErrorCode::kInvalidFile,
            "tensor '" + name + "' is missing (required by " + hp_.arch + ")");
    return t;
  }

  // ggml shape [n_in, n_out] → matrix with n_out rows of n_in.
  WeightView matrix(const std::string& name, int64_t n_in, int64_t n_out, bool required = true) {
    WeightView w;
    const gguf::TensorInfo* t = find(name, required);
    if (!t) return w;
    if (t->n_dims != 2 || t->ne[0] != n_in || t->ne[1] != n_out) {
      throw Error(ErrorCode::kInvalidFile, name + " has shape " + t->shape_string() + " but " + context() +
                                               " needs " + shape_str(n_in, n_out));
    }
    require(is_supported_matmul_type(t->type), ErrorCode::kUnsupported,
            name + " has type " + tensor_type_name(t->type) + ", which the engine cannot multiply");
    require(n_in % tensor_block_size(t->type) == 0, ErrorCode::kInvalidFile,
            name + ": row length " + std::to_string(n_in) + " is not a multiple of the " + tensor_type_name(t->type) +
                " block size " + std::to_string(tensor_block_size(t->type)));
    w.name = t->name;
    w.type = t->type;
    w.data = t->data;
    w.n_in = n_in;
    w.n_out = n_out;
    w.row_bytes = t->row_bytes();
    require(w.row_bytes * static_cast<size_t>(n_out) == t->n_bytes, ErrorCode::kInvalidFile,
            name + ": data size " + std::to_string(t->n_bytes) + " does not match its shape");
    note(t);
    return w;
  }

  VectorView vector(const std::string& name, int64_t n, bool required = true) {
    VectorView v;
    const gguf::TensorInfo* t = find(name, required);
    if (!t) return v;
    if (t->n_elements() != n || (t->n_dims != 1 && !(t->n_dims == 2 && t->ne[1] == 1))) {
      throw Error(ErrorCode::kInvalidFile,
                  name + " has shape " + t->shape_string() + " but " + context() + " needs [" + std::to_string(n) + "]");
    }
    require(t->type == TensorType::F32, ErrorCode::kUnsupported,
            name + " has type " + tensor_type_name(t->type) + "; norm weights, biases and rope factors must be f32");
    require(reinterpret_cast<uintptr_t>(t->data) % alignof(float) == 0, ErrorCode::kInvalidFile,
            name + " data is not 4-byte aligned");
    v.data = reinterpret_cast<const float*>(t->data);
    v.n = n;
    note(t);
    return v;
  }

  void note(const gguf::TensorInfo* t) {
    if (std::find(used_.begin(), used_.end(), t) == used_.end()) {
      used_.push_back(t);
      bytes_ += t->n_bytes;
    }
  }

  size_t bytes() const { return bytes_; }

 private:
  const gguf::GgufFile& f_;
  const HParams& hp_;
  std::vector<const gguf::TensorInfo*> used_;
  size_t bytes_ = 0;
};

std::unique_ptr<Model> Model::load(const std::string& path, const ModelLoadParams& params) {
  return from_gguf(gguf::GgufFile::open(path), params);
}

std::unique_ptr<Model> Model::from_gguf(std::unique_ptr<gguf::GgufFile> file, const ModelLoadParams& params) {
  require(file != nullptr, ErrorCode::kInvalidArgument, "Model::from_gguf: null GGUF file");
  std::unique_ptr<Model> m(new Model());
  m->file_ = std::move(file);
  m->bind(params);
  return m;
}

void Model::bind(const ModelLoadParams& params) {
  hp_ = read_hparams(*file_);
  arch_ = &find_architecture(hp_.arch);
  Binder b(*file_, hp_);
  if (arch_->encoder) {
    bind_encoder(b);
  } else {
    bind_decoder(b);
  }
  // Rerankers' classification head (bert cross-encoders; qwen3 rerankers carry cls.output only).
  cls_ = b.matrix("cls.weight", hp_.n_embd, hp_.n_embd, /*required=*/false);
  if (cls_.present()) cls_b_ = b.vector("cls.bias", hp_.n_embd, /*required=*/false);
  if (hp_.n_cls_out > 0) {
    cls_out_ = b.matrix("cls.output.weight", hp_.n_embd, hp_.n_cls_out);
    cls_out_b_ = b.vector("cls.output.bias", hp_.n_cls_out, /*required=*/false);
  }
  weight_bytes_ = b.bytes();
  own_vectors();
  use_pack_file(params);    // matrices it holds are mapped, already in the packed layout...
  repack_weights(params);   // ...so this repacks only the others (none with a complete pack file)

  if (params.prefault) {
    for (const auto& t : file_->tensors()) {
      file_->mapping().prefault(static_cast<size_t>(t.data - file_->mapping().data()), t.n_bytes);
    }
  }
}

void Model::bind_decoder(Binder& b) {
  const int64_t n_embd = hp_.n_embd, n_q = hp_.n_embd_q(), n_kv = hp_.n_embd_kv(), n_ff = hp_.n_ff;
  token_embd_ = b.matrix("token_embd.weight", n_embd, hp_.n_vocab);
  output_norm_ = b.vector("output_norm.weight", n_embd);
  output_ = b.matrix("output.weight", n_embd, hp_.n_vocab, /*required=*/false);
  output_tied_ = !output_.present();
  if (output_tied_) output_ = token_embd_;
  if (hp_.has_rope_freqs) rope_freqs_ = b.vector("rope_freqs.weight", hp_.n_rot / 2);

  layers_.resize(static_cast<size_t>(hp_.n_layer));
  for (int i = 0; i < hp_.n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    LayerWeights& l = layers_[static_cast<size_t>(i)];
    l.attn_norm = b.vector(p + "attn_norm.weight", n_embd);
    l.wq = b.matrix(p + "attn_q.weight", n_embd, n_q);
    l.wk = b.matrix(p + "attn_k.weight", n_embd, n_kv);
    l.wv = b.matrix(p + "attn_v.weight", n_embd, n_kv);
    l.wo = b.matrix(p + "attn_output.weight", n_q, n_embd);
    if (arch_->qkv_bias) {
      l.bq = b.vector(p + "attn_q.bias", n_q);
      l.bk = b.vector(p + "attn_k.bias", n_kv);
      l.bv = b.vector(p + "attn_v.bias", n_kv);
    }
    if (arch_->qk_norm) {
      l.q_norm = b.vector(p + "attn_q_norm.weight", hp_.head_dim);
      l.k_norm = b.vector(p + "attn_k_norm.weight", hp_.head_dim);
    }
    l.ffn_norm = b.vector(p + "ffn_norm.weight", n_embd);
    l.ffn_gate = b.matrix(p + "ffn_gate.weight", n_embd, n_ff);
    l.ffn_up = b.matrix(p + "ffn_up.weight", n_embd, n_ff);
    l.ffn_down = b.matrix(p + "ffn_down.weight", n_ff, n_embd);
  }
}

// The BERT block as llama.cpp's converter writes it (conversion/bert.py, src/models/bert.cpp):
// token_embd, token_types (optional), position_embd ([n_embd, context_length]), token_embd_norm
// (+ bias); per layer attn_q/k/v (+ bias), attn_output (+ bias), attn_output_norm (+ bias),
// ffn_up / ffn_down (+ bias), layer_output_norm (+ bias). No output head.
void Model::bind_encoder(Binder& b) {
  const int64_t n_embd = hp_.n_embd, n_q = hp_.n_embd_q(), n_kv = hp_.n_embd_kv(), n_ff = hp_.n_ff;
  token_embd_ = b.matrix("token_embd.weight", n_embd, hp_.n_vocab);
  position_embd_ = b.matrix("position_embd.weight", n_embd, hp_.n_ctx_train);
  if (hp_.n_token_types > 0) token_types_ = b.matrix("token_types.weight", n_embd, hp_.n_token_types);
  embd_norm_ = b.vector("token_embd_norm.weight", n_embd);
  embd_norm_b_ = b.vector("token_embd_norm.bias", n_embd);
  layers_.resize(static_cast<size_t>(hp_.n_layer));
  for (int i = 0; i < hp_.n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    LayerWeights& l = layers_[static_cast<size_t>(i)];
    l.wq = b.matrix(p + "attn_q.weight", n_embd, n_q);
    l.wk = b.matrix(p + "attn_k.weight", n_embd, n_kv);
    l.wv = b.matrix(p + "attn_v.weight", n_embd, n_kv);
    l.bq = b.vector(p + "attn_q.bias", n_q, /*required=*/false);
    l.bk = b.vector(p + "attn_k.bias", n_kv, /*required=*/false);
    l.bv = b.vector(p + "attn_v.bias", n_kv, /*required=*/false);
    l.wo = b.matrix(p + "attn_output.weight", n_q, n_embd);
    l.bo = b.vector(p + "attn_output.bias", n_embd, /*required=*/false);
    l.attn_out_norm = b.vector(p + "attn_output_norm.weight", n_embd);
    l.attn_out_norm_b = b.vector(p + "attn_output_norm.bias", n_embd);
    l.ffn_up = b.matrix(p + "ffn_up.weight", n_embd, n_ff);
    l.ffn_up_b = b.vector(p + "ffn_up.bias", n_ff, /*required=*/false);
    l.ffn_down = b.matrix(p + "ffn_down.weight", n_ff, n_embd);
    l.ffn_down_b = b.vector(p + "ffn_down.bias", n_embd, /*required=*/false);
    l.layer_out_norm = b.vector(p + "layer_output_norm.weight", n_embd);
    l.layer_out_norm_b = b.vector(p + "layer_output_norm.bias", n_embd);
  }
}

namespace {

// Model::matrices() for a const or a mutable model (W = const WeightView or WeightView).
// Absent matrices (an encoder's output and ffn_gate, a missing head) are left out.
template <class W, class Layers>
std::vector<W*> list_matrices(W& output, Layers& layers, W& cls, W& cls_out) {
  std::vector<W*> out;
  const auto add = [&](W* w) {
    if (w->present()) out.push_back(w);
  };
  add(&output);
  for (auto& l : layers) {
    for (W* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.ffn_gate, &l.ffn_up, &l.ffn_down}) add(w);
  }
  add(&cls);
  add(&cls_out);
  return out;
}

}  // namespace

std::vector<const WeightView*> Model::matrices() const { return list_matrices(output_, layers_, cls_, cls_out_); }
std::vector<WeightView*> Model::mutable_matrices() { return list_matrices(output_, layers_, cls_, cls_out_); }

WeightView Model::swap_matrix(const WeightView& view) {
  std::vector<WeightView*> targets;
  if (token_embd_.name == view.name) targets.push_back(&token_embd_);
  for (WeightView* w : mutable_matrices()) {
    if (w->name == view.name && std::find(targets.begin(), targets.end(), w) == targets.end()) targets.push_back(w);
  }
  require(!targets.empty(), ErrorCode::kInvalidArgument,
          "swap_matrix: the model has no matrix '" + std::string(view.name) + "'");
  const WeightView old = *targets.front();
  // A file-layout type with its row size, or a repacked view handed back (what the load made).
  const bool file_layout = is_supported_matmul_type(view.type) && view.n_in % tensor_block_size(view.type) == 0 &&
                           view.row_bytes == tensor_row_bytes(view.type, view.n_in);
  require(view.n_in == old.n_in && view.n_out == old.n_out && view.data != nullptr &&
              (file_layout || kernels::is_packed_type(view.type)),
          ErrorCode::kInvalidArgument,
          "swap_matrix: '" + std::string(view.name) + "' needs " + std::to_string(old.n_out) + " rows of " +
              std::to_string(old.n_in) + " in a matmul type (got " + std::to_string(view.n_out) + " x " +
              std::to_string(view.n_in) + " " + tensor_type_name(view.type) + ")");
  for (WeightView* w : targets) {
    w->type = view.type;
    w->data = view.data;
    w->row_bytes = view.row_bytes;
  }
  return old;
}

// Norm weights, biases and rope factors (a few KB per layer, read every token) are copied into
// one owned buffer with MappedFile::copy_out, never read through the mapping. Why: the page cache
// can hold the file in large folios (2 MiB here), and one read of a 6 KB bias through the mapping
// maps its whole folio, neighbouring matrix bytes included. With every matrix repacked, those
// small reads alone kept ~140 MB of file pages resident (Qwen2.5-1.5B Q4_0, pp512: peak RSS
// 1108 MiB; 975 MiB with the copy).
void Model::own_vectors() {
  std::vector<VectorView*> views = {&output_norm_, &rope_freqs_, &embd_norm_, &embd_norm_b_, &cls_b_, &cls_out_b_};
  for (LayerWeights& l : layers_) {
    for (VectorView* v : {&l.attn_norm, &l.bq, &l.bk, &l.bv, &l.bo, &l.q_norm, &l.k_norm, &l.ffn_norm, &l.ffn_up_b,
                          &l.ffn_down_b, &l.attn_out_norm, &l.attn_out_norm_b, &l.layer_out_norm, &l.layer_out_norm_b}) {
      views.push_back(v);
    }
  }
  const auto padded = [](const VectorView& v) { return (static_cast<size_t>(v.n) * sizeof(float) + 63) / 64 * 64; };
  size_t total = 0;
  for (const VectorView* v : views) {
    if (v->present()) total += padded(*v);
  }
  if (total == 0) return;
  vectors_ = AlignedBuffer(total, "norm weights, biases and rope factors");
  const MappedFile& map = file_->mapping();
  size_t at = 0;
  for (VectorView* v : views) {
    if (!v->present()) continue;
    uint8_t* dst = vectors_.data() + at;
    const auto offset = static_cast<size_t>(reinterpret_cast<const uint8_t*>(v->data) - map.data());
    map.copy_out(offset, dst, static_cast<size_t>(v->n) * sizeof(float));
    v->data = reinterpret_cast<const float*>(dst);
    at += padded(*v);
  }
}

}  // namespace edgellm
