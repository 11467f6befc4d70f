#include "tools/synth/synth_model.h"

#include <chrono>
#include <map>

#include "core/error.h"
#include "gguf/gguf_writer.h"
#include "tools/synth/synth_vocab.h"

namespace edgellm::synth {

namespace {

// The BERT block as llama.cpp's converter writes it (model/model.cpp binds the same names).
std::vector<SynthTensor> encoder_tensor_list(const ModelShape& s, int32_t n_layer) {
  std::vector<SynthTensor> out;
  const int64_t n_embd = s.n_embd, n_ff = s.n_ff;
  const int64_t n_q = static_cast<int64_t>(s.n_head) * s.head_dim;
  const int64_t n_kv = static_cast<int64_t>(s.n_head_kv) * s.head_dim;
  auto matrix = [&](std::string name, int64_t n_in, int64_t n_out) {
    out.push_back({std::move(name), TensorType::F32, {n_in, n_out}, TensorInit::kWeight});
  };
  auto vector = [&](std::string name, int64_t n, TensorInit init) {
    out.push_back({std::move(name), TensorType::F32, {n}, init});
  };
  matrix("token_embd.weight", n_embd, s.n_vocab);
  if (s.n_token_types > 0) matrix("token_types.weight", n_embd, s.n_token_types);
  matrix("position_embd.weight", n_embd, s.n_ctx_train);
  vector("token_embd_norm.weight", n_embd, TensorInit::kNorm);
  vector("token_embd_norm.bias", n_embd, TensorInit::kBias);
  for (int32_t i = 0; i < n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    matrix(p + "attn_q.weight", n_embd, n_q);
    vector(p + "attn_q.bias", n_q, TensorInit::kBias);
    matrix(p + "attn_k.weight", n_embd, n_kv);
    vector(p + "attn_k.bias", n_kv, TensorInit::kBias);
    matrix(p + "attn_v.weight", n_embd, n_kv);
    vector(p + "attn_v.bias", n_kv, TensorInit::kBias);
    matrix(p + "attn_output.weight", n_q, n_embd);
    vector(p + "attn_output.bias", n_embd, TensorInit::kBias);
    vector(p + "attn_output_norm.weight", n_embd, TensorInit::kNorm);
    vector(p + "attn_output_norm.bias", n_embd, TensorInit::kBias);
    matrix(p + "ffn_up.weight", n_embd, n_ff);
    vector(p + "ffn_up.bias", n_ff, TensorInit::kBias);
    matrix(p + "ffn_down.weight", n_ff, n_embd);
    vector(p + "ffn_down.bias", n_embd, TensorInit::kBias);
    vector(p + "layer_output_norm.weight", n_embd, TensorInit::kNorm);
    vector(p + "layer_output_norm.bias", n_embd, TensorInit::kBias);
  }
  if (s.n_cls_out > 0) {
    matrix("cls.weight", n_embd, n_embd);
    vector("cls.bias", n_embd, TensorInit::kBias);
    matrix("cls.output.weight", n_embd, s.n_cls_out);
    vector("cls.output.bias", s.n_cls_out, TensorInit::kBias);
  }
  return out;
}

}  // namespace

std::vector<SynthTensor> synth_tensor_list(const ModelShape& s, int32_t n_layer) {
  require(n_layer >= 1, ErrorCode::kInvalidArgument, "layer count must be >= 1, got " + std::to_string(n_layer));
  if (s.is_encoder()) return encoder_tensor_list(s, n_layer);
  std::vector<SynthTensor> out;
  const int64_t n_embd = s.n_embd;
  const int64_t n_q = static_cast<int64_t>(s.n_head) * s.head_dim;
  const int64_t n_kv = static_cast<int64_t>(s.n_head_kv) * s.head_dim;
  const int64_t n_ff = s.n_ff;
  const int64_t n_vocab = s.n_vocab;

  // Matrices [n_in, n_out] and vectors [n], all F32 as in the source checkpoint; the file types
  // are the caller's (assign_quantizer_types, or the test fixture's single weight type).
  auto matrix = [&](std::string name, int64_t n_in, int64_t n_out) {
    out.push_back({std::move(name), TensorType::F32, {n_in, n_out}, TensorInit::kWeight});
  };
  auto vector = [&](std::string name, int64_t n, TensorInit init) {
    out.push_back({std::move(name), TensorType::F32, {n}, init});
  };

  matrix("token_embd.weight", n_embd, n_vocab);
  if (s.has_rope_freqs()) vector("rope_freqs.weight", s.rot_dims() / 2, TensorInit::kRopeFactors);
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
  return out;
}

void assign_quantizer_types(std::vector<SynthTensor>& tensors, quant::FileType ftype) {
  // The planner sees the list as an F32 source model, in file order, exactly as it would when
  // quantizing a real F32 checkpoint of this shape (some rules count layers as they go).
  std::vector<quant::TensorDesc> descs;
  descs.reserve(tensors.size());
  for (const auto& t : tensors) {
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
  for (size_t k = 0; k < tensors.size(); ++k) {
    const quant::TypeDecision d = planner.decide(descs[k]);
    tensors[k].type = d.quantizable ? d.type : TensorType::F32;
  }
}

std::vector<SynthTensor> plan_synth_tensors(const ModelShape& shape, quant::FileType ftype, int32_t n_layer) {
  std::vector<SynthTensor> tensors = synth_tensor_list(shape, n_layer);
  assign_quantizer_types(tensors, ftype);
  return tensors;
}

void write_synth_hparams(gguf::GgufWriter& w, const ModelShape& shape, int32_t n_layer) {
  const std::string p = std::string(shape.arch) + ".";
  if (shape.is_encoder()) {  // the keys llama.cpp's BertModel converter writes
    w.set_u32(p + "vocab_size", static_cast<uint32_t>(shape.n_vocab));
    w.set_u32(p + "context_length", static_cast<uint32_t>(shape.n_ctx_train));
    w.set_u32(p + "embedding_length", static_cast<uint32_t>(shape.n_embd));
    w.set_u32(p + "block_count", static_cast<uint32_t>(n_layer));
    w.set_u32(p + "feed_forward_length", static_cast<uint32_t>(shape.n_ff));
    w.set_u32(p + "attention.head_count", static_cast<uint32_t>(shape.n_head));
    w.set_f32(p + "attention.layer_norm_epsilon", shape.rms_eps);
    w.set_bool(p + "attention.causal", false);
    if (shape.pooling >= 0) w.set_u32(p + "pooling_type", static_cast<uint32_t>(shape.pooling));
    return;
  }
  w.set_u32(p + "vocab_size", static_cast<uint32_t>(shape.n_vocab));
  w.set_u32(p + "context_length", static_cast<uint32_t>(shape.n_ctx_train));
  w.set_u32(p + "embedding_length", static_cast<uint32_t>(shape.n_embd));
  w.set_u32(p + "block_count", static_cast<uint32_t>(n_layer));
  w.set_u32(p + "feed_forward_length", static_cast<uint32_t>(shape.n_ff));
  w.set_u32(p + "attention.head_count", static_cast<uint32_t>(shape.n_head));
  w.set_u32(p + "attention.head_count_kv", static_cast<uint32_t>(shape.n_head_kv));
  w.set_u32(p + "attention.key_length", static_cast<uint32_t>(shape.head_dim));
  w.set_u32(p + "attention.value_length", static_cast<uint32_t>(shape.head_dim));
  w.set_u32(p + "rope.dimension_count", static_cast<uint32_t>(shape.rot_dims()));
  w.set_f32(p + "rope.freq_base", shape.rope_freq_base);
  w.set_f32(p + "attention.layer_norm_rms_epsilon", shape.rms_eps);
}

SynthReport write_synth_model(const SynthOptions& options, const std::string& path,
                              const std::function<void(const SynthProgress&)>& progress) {
  const auto t_start = std::chrono::steady_clock::now();
  const ModelShape& shape = find_model_shape(options.shape);
  const quant::FileType ftype = quant::file_type_from_name(options.type);
  require(options.n_layer >= 0, ErrorCode::kInvalidArgument,
          "--layers must be >= 0, got " + std::to_string(options.n_layer));
  const int32_t n_layer = options.n_layer > 0 ? options.n_layer : shape.n_layer;
  if (options.before_write) {
    // The tensor data's size from one and two blocks (every block is the same), before the
    // whole plan (over a million tensors for --layers 100000) is built: a refusal comes at once.
    const auto data_bytes = [&](int32_t layers) {
      uint64_t b = 0;
      for (const auto& t : plan_synth_tensors(shape, ftype, layers)) {
        uint64_t rows = 1;
        for (size_t d = 1; d < t.ne.size(); ++d) rows *= static_cast<uint64_t>(t.ne[d]);
        b += tensor_row_bytes(t.type, t.ne[0]) * rows;
      }
      return b;
    };
    const uint64_t one = data_bytes(1);
    options.before_write(one + (data_bytes(2) - one) * static_cast<uint64_t>(n_layer - 1));
  }

  SynthTensorWriter data(plan_synth_tensors(shape, ftype, n_layer), llama3_rope_factors(shape), options.seed,
                         options.n_threads);
  const std::vector<SynthTensor>& plan = data.tensors();

  gguf::GgufWriter w;
  w.set_string("general.architecture", shape.arch);
  w.set_string("general.type", "model");
  w.set_string("general.name", std::string(shape.display_name) + " (synthetic)");
  w.set_string("general.size_label", shape.size_label);
  w.set_u32("general.file_type", static_cast<uint32_t>(ftype));
  w.set_u32("general.quantization_version", 2);  // ggml's current quantization format version
  // Provenance: tools (and people) must be able to tell these files from real checkpoints.
  w.set_string("edgellm.synth.shape", shape.name);
  w.set_string("edgellm.synth.type", quant::file_type_name(ftype));
  w.set_u64("edgellm.synth.seed", options.seed);
  write_synth_hparams(w, shape, n_layer);
  if (options.tokenizer.empty()) {
    if (shape.is_encoder()) {
      write_placeholder_wordpiece_vocab(w, shape.n_vocab);
    } else {
      write_placeholder_vocab(w, shape.n_vocab);
    }
  } else {
    write_tokenizer_from_file(w, options.tokenizer, shape.n_vocab);
  }
  if (shape.is_encoder()) w.set_u32("tokenizer.ggml.token_type_count", static_cast<uint32_t>(shape.n_token_types));

  SynthReport report;
  std::map<uint32_t, size_t> type_counts;
  data.add_infos(w);
  for (const auto& t : plan) {
    int64_t n = 1;
    for (const int64_t d : t.ne) n *= d;
    report.n_params += static_cast<uint64_t>(n);
    ++type_counts[static_cast<uint32_t>(t.type)];
  }
  for (const auto& wt : w.tensors()) report.tensor_bytes += wt.n_bytes;
  report.n_tensors = plan.size();
  for (const auto& [id, count] : type_counts) report.type_counts.emplace_back(static_cast<TensorType>(id), count);

  SynthProgress prog;
  prog.n_tensors = plan.size();
  prog.bytes_total = report.tensor_bytes;
  w.write(path, [&](size_t index, const gguf::WriterTensor& wt, gguf::TensorSink& sink) {
    if (options.cancel != nullptr && options.cancel->load()) {
      throw Error(ErrorCode::kCancelled, "synth: interrupted; '" + path + "' was not written");
    }
    data.fill(index, sink);
    prog.tensor_index = index;
    prog.bytes_done += wt.n_bytes;
    if (progress) progress(prog);
  });
  report.file_bytes = w.file_size();
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  return report;
}

}  // namespace edgellm::synth
