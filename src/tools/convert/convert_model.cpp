#include "tools/convert/convert_model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <numbers>
#include <optional>
#include <thread>

#include "core/error.h"
#include "gguf/gguf_writer.h"
#include "kernels/kernels.h"
#include "platform/thread_pool.h"
#include "tools/convert/arch_mapping.h"
#include "tools/convert/hf_checkpoint.h"
#include "tools/convert/hf_config.h"
#include "tools/convert/sentence_transformers.h"
#include "tools/convert/tokenizer_export.h"
#include "tools/convert/wordpiece_vocab.h"

namespace edgellm::convert {
namespace {

namespace fs = std::filesystem;

// GGML_QNT_VERSION: the block layouts written are those of ggml's quantization version 2.
constexpr uint32_t kQuantizationVersion = 2;

// One tensor of the output file.
struct OutTensor {
  std::string name;
  std::string source_name;                      // HF name, "" for generated tensors
  std::string canonical_name;                   // HF name as the mapping knows it (arch_mapping.h)
  const HfCheckpoint::Entry* source = nullptr;  // nullptr: `generated` holds the values
  std::vector<float> generated;
  TensorType source_type = TensorType::F32;
  RowOrder order = RowOrder::kAsIs;
  int64_t rows = 1;                   // HF rows (shape[0]; 1 for a vector)
  int64_t width = 0;                  // elements per row
  std::vector<int64_t> ne;            // GGUF order
  TensorType type = TensorType::F32;  // output type
  int64_t sort_key = 0;
};

int resolve_threads(int n) {
  if (n > 0) return n;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

void check_cancel(const ConvertParams& p, const std::string& what) {
  if (p.cancel != nullptr && p.cancel->load(std::memory_order_relaxed)) {
    throw Error(ErrorCode::kCancelled, "conversion interrupted while writing " + what);
  }
}

void warn(const ConvertParams& p, const std::string& w) {
  if (p.on_warning) p.on_warning(w);
}

std::string shape_string(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// HF row of GGUF row `r` for the llama Q/K reorder (arch_mapping.h, RowOrder).
int64_t source_row(RowOrder order, int64_t r, int64_t head_dim) {
  if (order == RowOrder::kAsIs) return r;
  const int64_t half = head_dim / 2;
  const int64_t head = r / head_dim;
  const int64_t within = r % head_dim;
  return head * head_dim + (within % 2) * half + within / 2;
}

// llama.cpp's rope_freqs for rope_type "llama3" (Llama 3.1+): per frequency pair, the factor the
// rotation frequency is divided by. Frequencies are computed in float32 (torch.arange / float32
// powers in the reference converter), the wavelength test in double.
std::vector<float> llama3_rope_factors(const HfConfig& c) {
  const int64_t dim = c.effective_head_dim();
  const HfRopeScaling& r = c.rope;
  const double factor = r.factor;
  const double old_ctx =
      r.original_max_position_embeddings > 0 ? static_cast<double>(r.original_max_position_embeddings) : 8192.0;
  const double low_wavelen = old_ctx / r.low_freq_factor;
  const double high_wavelen = old_ctx / r.high_freq_factor;
  std::vector<float> out;
  for (int64_t i = 0; i < dim; i += 2) {
    const float freq =
        1.0f / std::pow(static_cast<float>(c.rope_theta), static_cast<float>(i) / static_cast<float>(dim));
    const double wavelen = 2.0 * std::numbers::pi / static_cast<double>(freq);
    double f;
    if (wavelen < high_wavelen) {
      f = 1.0;
    } else if (wavelen > low_wavelen) {
      f = factor;
    } else {
      const double smooth = (old_ctx / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
      f = 1.0 / ((1.0 - smooth) / factor + smooth);
    }
    out.push_back(static_cast<float>(f));
  }
  return out;
}

quant::FileType resolve_file_type(const std::string& name, const std::vector<OutTensor>& tensors) {
  if (name != "auto" && name != "AUTO") return quant::file_type_from_name(name);
  for (const OutTensor& t : tensors) {
    if (t.source == nullptr || t.ne.size() < 2) continue;
    if (t.source_type == TensorType::BF16) return quant::FileType::kMostlyBF16;
    return quant::FileType::kMostlyF16;
  }
  return quant::FileType::kMostlyF16;
}

// An encoder's keys, as llama.cpp's BertModel writes them: LayerNorm epsilon, bidirectional
// attention, the declared pooling; no RoPE or RMSNorm keys (BERT has learned positions).
void write_encoder_hparams(gguf::GgufWriter& w, const ArchitectureMapping& m, const HfConfig& c, quant::FileType ftype,
                           const std::optional<DeclaredPooling>& pooling) {
  const std::string p = std::string(m.gguf_arch) + ".";
  w.set_u32(p + "block_count", static_cast<uint32_t>(c.num_hidden_layers));
  w.set_u32(p + "context_length", static_cast<uint32_t>(c.max_position_embeddings));
  w.set_u32(p + "embedding_length", static_cast<uint32_t>(c.hidden_size));
  w.set_u32(p + "feed_forward_length", static_cast<uint32_t>(c.intermediate_size));
  w.set_u32(p + "attention.head_count", static_cast<uint32_t>(c.num_attention_heads));
  w.set_f32(p + "attention.layer_norm_epsilon", static_cast<float>(c.layer_norm_eps));
  w.set_u32("general.file_type", static_cast<uint32_t>(ftype));
  w.set_bool(p + "attention.causal", false);
  if (pooling) w.set_u32(p + "pooling_type", static_cast<uint32_t>(pooling->type));
}

// What the engine (and llama.cpp's BERT graph) computes, checked against config.json before
// anything is written: a checkpoint that would run differently is refused, not converted.
void check_encoder_config(const HfConfig& c, const std::string& origin) {
  require(c.max_position_embeddings > 0, ErrorCode::kInvalidFile,
          origin + ": 'max_position_embeddings' is missing (it sizes the learned position embeddings)");
  require(c.hidden_act == "gelu", ErrorCode::kUnsupported,
          origin + ": hidden_act '" + c.hidden_act.substr(0, 32) + "' is not supported for " + c.architecture +
              " (supported: gelu, the exact erf form BERT uses)");
  require(c.position_embedding_type == "absolute", ErrorCode::kUnsupported,
          origin + ": position_embedding_type '" + c.position_embedding_type.substr(0, 32) +
              "' is not supported (supported: absolute)");
  require(!c.is_decoder, ErrorCode::kUnsupported,
          origin + ": is_decoder is true: causal BERT models are not supported");
  require(c.num_key_value_heads == c.num_attention_heads, ErrorCode::kInvalidFile,
          origin + ": num_key_value_heads differs from num_attention_heads in a BERT model");
}

void write_hparams(gguf::GgufWriter& w, const ArchitectureMapping& m, const HfConfig& c, quant::FileType ftype,
                   const ConvertParams& params) {
  const std::string p = std::string(m.gguf_arch) + ".";
  w.set_u32(p + "block_count", static_cast<uint32_t>(c.num_hidden_layers));
  if (c.max_position_embeddings > 0) w.set_u32(p + "context_length", static_cast<uint32_t>(c.max_position_embeddings));
  w.set_u32(p + "embedding_length", static_cast<uint32_t>(c.hidden_size));
  w.set_u32(p + "feed_forward_length", static_cast<uint32_t>(c.intermediate_size));
  w.set_u32(p + "attention.head_count", static_cast<uint32_t>(c.num_attention_heads));
  w.set_u32(p + "attention.head_count_kv", static_cast<uint32_t>(c.num_key_value_heads));
  const HfRopeScaling& r = c.rope;
  if (r.type == "linear") {
    w.set_string(p + "rope.scaling.type", "linear");
    w.set_f32(p + "rope.scaling.factor", static_cast<float>(r.factor));
  } else if (r.type == "yarn") {
    require(r.original_max_position_embeddings > 0, ErrorCode::kInvalidFile,
            "config.json: rope_scaling type 'yarn' without original_max_position_embeddings");
    w.set_string(p + "rope.scaling.type", "yarn");
    w.set_f32(p + "rope.scaling.factor", static_cast<float>(r.factor));
    w.set_u32(p + "rope.scaling.original_context_length", static_cast<uint32_t>(r.original_max_position_embeddings));
    if (r.extrapolation_factor)
      w.set_f32(p + "rope.scaling.yarn_ext_factor", static_cast<float>(*r.extrapolation_factor));
    if (r.attention_factor) w.set_f32(p + "rope.scaling.yarn_attn_factor", static_cast<float>(*r.attention_factor));
    if (r.beta_fast) w.set_f32(p + "rope.scaling.yarn_beta_fast", static_cast<float>(*r.beta_fast));
    if (r.beta_slow) w.set_f32(p + "rope.scaling.yarn_beta_slow", static_cast<float>(*r.beta_slow));
    warn(params, "rope_scaling 'yarn' is written for llama.cpp; EdgeLLM's loader refuses YaRN models");
  } else if (r.type == "dynamic") {
    warn(params,
         "rope_scaling 'dynamic' (NTK, applied by transformers past max_position_embeddings) is not "
         "represented in GGUF and is dropped, as llama.cpp's converter drops it");
  } else if (!r.type.empty() && r.type != "llama3") {
    throw Error(ErrorCode::kUnsupported,
                "config.json: rope_scaling type '" + r.type + "' is not supported (supported: linear, llama3, yarn)");
  }
  w.set_f32(p + "rope.freq_base", static_cast<float>(c.rope_theta));
  w.set_f32(p + "attention.layer_norm_rms_epsilon", static_cast<float>(c.rms_norm_eps));
  if (c.head_dim > 0) {
    w.set_u32(p + "attention.key_length", static_cast<uint32_t>(c.head_dim));
    w.set_u32(p + "attention.value_length", static_cast<uint32_t>(c.head_dim));
  }
  w.set_u32("general.file_type", static_cast<uint32_t>(ftype));
  if (m.write_vocab_size) w.set_u32(p + "vocab_size", static_cast<uint32_t>(c.vocab_size));
  if (m.write_rope_dimension_count)
    w.set_u32(p + "rope.dimension_count", static_cast<uint32_t>(c.effective_head_dim()));
}

// The output tensors in file order, every check done: names, shapes, dtypes, completeness.
std::vector<OutTensor> plan_tensors(const HfCheckpoint& ckpt, const ArchitectureMapping& m, const HfConfig& c,
                                    const ConvertParams& params) {
  std::vector<OutTensor> out;
  for (const HfCheckpoint::Entry& e : ckpt.tensors()) {
    const SafetensorsTensor& t = *e.tensor;
    const MappedName mapped = map_tensor_name(m, t.name, c.num_hidden_layers);
    if (mapped.kind == MappedName::Kind::kIgnored) continue;
    const TensorMapping& rule = *mapped.rule;
    if (rule.need == Need::kOutputHead && c.tie_word_embeddings) {
      warn(params, "'" + t.name +
                       "' skipped: config.json ties the output head to the embeddings "
                       "(tie_word_embeddings), so the embeddings are what the model uses");
      continue;
    }
    TensorType st = TensorType::F32;  // set by dtype_tensor_type, or require() throws
    require(dtype_tensor_type(t.dtype, &st), ErrorCode::kUnsupported,
            "tensor '" + t.name + "' has dtype " + dtype_name(t.dtype) +
                "; convert reads F32, F16 and BF16 checkpoints (quantized checkpoints such as GPTQ / AWQ / FP8 "
                "are not supported)");
    std::vector<int64_t> want;
    std::string want_names;
    for (Dim d : rule.shape) {
      want.push_back(resolve_dim(d, c));
      want_names += (want_names.empty() ? "" : ", ") + std::string(dim_name(d));
    }
    require(t.shape == want, ErrorCode::kInvalidFile,
            "tensor '" + t.name + "' has shape " + t.shape_string() + " but config.json gives " + shape_string(want) +
                " ([" + want_names + "])");
    OutTensor o;
    for (const OutTensor& prev : out) {
      require(prev.name != mapped.gguf, ErrorCode::kInvalidFile,
              "tensors '" + prev.source_name + "' and '" + t.name + "' are both " + mapped.gguf +
                  " (the checkpoint holds the same weight twice, with and without a prefix)");
    }
    o.name = mapped.gguf;
    o.source_name = t.name;
    o.canonical_name = mapped.hf;
    o.source = &e;
    o.source_type = st;
    o.order = rule.order;
    o.rows = want.size() >= 2 ? want[0] : 1;
    o.width = want.size() >= 2 ? want[1] : want[0];
    o.ne.assign(want.rbegin(), want.rend());
    o.sort_key = mapped.order;
    out.push_back(std::move(o));
  }
  // Completeness: every tensor the architecture needs.
  for (const std::string& name : expected_hf_names(m, c)) {
    const bool have = std::any_of(out.begin(), out.end(), [&](const OutTensor& o) { return o.canonical_name == name; });
    const std::string variant = m.strip_prefix ? std::string(" or '") + m.strip_prefix + name + "'" : "";
    require(have, ErrorCode::kInvalidFile,
            "the checkpoint has no tensor '" + name + "'" + variant + " (required for " + c.architecture + ")");
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const OutTensor& a, const OutTensor& b) { return a.sort_key < b.sort_key; });

  // Generated tensors first, as llama.cpp writes them.
  if (c.rope.type == "llama3") {
    require(std::string(m.gguf_arch) == "llama", ErrorCode::kUnsupported,
            "config.json: rope_scaling type 'llama3' on a " + std::string(m.gguf_arch) + " model is not supported");
    OutTensor o;
    o.name = "rope_freqs.weight";
    o.generated = llama3_rope_factors(c);
    o.width = static_cast<int64_t>(o.generated.size());
    o.ne = {o.width};
    out.insert(out.begin(), std::move(o));
  }
  return out;
}

class TensorConverter {
 public:
  TensorConverter(const ConvertParams& params, ThreadPool& pool, int64_t head_dim, uint64_t total_bytes)
      : params_(params), pool_(pool), head_dim_(head_dim), total_bytes_(total_bytes) {}

  void convert(const OutTensor& t, gguf::TensorSink& sink) {
    if (t.source == nullptr) {
      std::vector<uint8_t> bytes(tensor_row_bytes(t.type, t.width));
      kernels::quantize_row(t.type, t.generated.data(), bytes.data(), t.width);
      sink.write(bytes.data(), bytes.size());
      return;
    }
    const SafetensorsTensor& src = *t.source->tensor;
    const size_t in_row = static_cast<size_t>(t.width) * tensor_row_bytes(t.source_type, 1);
    const size_t out_row = tensor_row_bytes(t.type, t.width);
    const size_t f32_row = static_cast<size_t>(t.width) * sizeof(float);
    int64_t chunk_rows = std::max<int64_t>(
        1, std::min<int64_t>(t.rows, static_cast<int64_t>(params_.chunk_bytes / std::max<size_t>(f32_row, 1))));
    // A chunk of reordered Q/K rows is whole heads, so it reads exactly the source rows of those
    // heads and they can be released with it.
    if (t.order != RowOrder::kAsIs) chunk_rows = std::max<int64_t>(1, chunk_rows / head_dim_) * head_dim_;
    const int n_threads = pool_.max_threads();
    if (raw_.size() < static_cast<size_t>(n_threads)) {
      raw_.resize(static_cast<size_t>(n_threads));
      f32_.resize(static_cast<size_t>(n_threads));
    }
    out_.resize(static_cast<size_t>(chunk_rows) * out_row);
    for (int64_t r0 = 0; r0 < t.rows; r0 += chunk_rows) {
      check_cancel(params_, t.name);
      const int64_t rows = std::min(chunk_rows, t.rows - r0);
      const int64_t rows_per_task = std::max<int64_t>(1, rows / (static_cast<int64_t>(n_threads) * 4));
      const int64_t n_tasks = (rows + rows_per_task - 1) / rows_per_task;
      pool_.parallel_for(n_tasks, [&](int64_t task, int thread) {
        std::vector<uint8_t>& raw = raw_[static_cast<size_t>(thread)];
        std::vector<float>& x = f32_[static_cast<size_t>(thread)];
        if (raw.size() < in_row) raw.resize(in_row);
        if (x.size() < static_cast<size_t>(t.width)) x.resize(static_cast<size_t>(t.width));
        const int64_t a = task * rows_per_task;
        const int64_t b = std::min(rows, a + rows_per_task);
        for (int64_t r = a; r < b; ++r) {
          const int64_t from = source_row(t.order, r0 + r, head_dim_);
          // Copied out first: safetensors data is only byte-aligned.
          std::memcpy(raw.data(), src.data + static_cast<size_t>(from) * in_row, in_row);
          kernels::dequantize_row(t.source_type, raw.data(), x.data(), t.width);
          kernels::quantize_row(t.type, x.data(), out_.data() + static_cast<size_t>(r) * out_row, t.width);
        }
      });
      sink.write(out_.data(), static_cast<size_t>(rows) * out_row);
      // The chunk's source pages are no longer needed: dropping them keeps the resident set at
      // one chunk instead of growing to the whole tensor (or, without it, the whole checkpoint).
      const SafetensorsFile& shard = *t.source->shard;
      shard.mapping().release_pages(src.offset + static_cast<size_t>(r0) * in_row, static_cast<size_t>(rows) * in_row);
      done_bytes_ += static_cast<uint64_t>(rows) * in_row;
      if (params_.on_progress) {
        params_.on_progress(
            total_bytes_ > 0 ? static_cast<double>(done_bytes_) / static_cast<double>(total_bytes_) : 1.0, t.name);
      }
    }
    t.source->shard->release(src);  // the pages straddling chunk boundaries
  }

 private:
  const ConvertParams& params_;
  ThreadPool& pool_;
  int64_t head_dim_;
  uint64_t total_bytes_;
  uint64_t done_bytes_ = 0;
  std::vector<std::vector<uint8_t>> raw_;  // per thread: one source row
  std::vector<std::vector<float>> f32_;    // per thread: one F32 row
  std::vector<uint8_t> out_;               // one chunk of output rows
};

std::string default_name(const HfConfig& c, const std::string& dir) {
  std::string n = c.name_or_path;
  if (!n.empty()) {
    const size_t slash = n.find_last_of('/');
    if (slash != std::string::npos && slash + 1 < n.size()) n = n.substr(slash + 1);
    return n;
  }
  std::string d = fs::path(dir).lexically_normal().filename().string();
  if (d.empty()) d = fs::path(dir).lexically_normal().parent_path().filename().string();
  return d;
}

}  // namespace

ConvertSummary convert_hf_model(const std::string& dir, const std::string& out_path, const ConvertParams& params) {
  const auto t0 = std::chrono::steady_clock::now();
  require(!out_path.empty(), ErrorCode::kInvalidArgument, "convert: empty output path");
  const HfCheckpoint ckpt = HfCheckpoint::open(dir);
  for (const SafetensorsFile& s : ckpt.shards()) {
    std::error_code ec;
    require(!fs::equivalent(s.path(), out_path, ec), ErrorCode::kInvalidArgument,
            "convert: the output '" + out_path + "' is an input file; choose another name");
  }
  const std::string config_origin = (fs::path(dir) / "config.json").string();
  const HfConfig config = read_hf_config(ckpt.config_json(), config_origin);
  const ArchitectureMapping& mapping = find_architecture_mapping(config.architecture);
  if (!config.model_type.empty()) {
    const bool known = std::any_of(mapping.model_types.begin(), mapping.model_types.end(),
                                   [&](const char* t) { return config.model_type == t; });
    std::string expected;
    for (const char* t : mapping.model_types) expected += (expected.empty() ? "" : ", ") + std::string(t);
    require(known, ErrorCode::kUnsupported,
            config_origin + ": model_type '" + config.model_type.substr(0, 64) + "' is not one " + config.architecture +
                " is converted as (expected: " + expected + ")");
  }
  std::optional<DeclaredPooling> pooling;
  if (mapping.encoder) {
    check_encoder_config(config, config_origin);
    pooling = read_sentence_transformers_pooling(ckpt);
  }

  std::vector<OutTensor> tensors = plan_tensors(ckpt, mapping, config, params);

  // The tokenizer files are parsed, exported and dropped before any tensor is converted.
  TokenizerExport tok;
  {
    std::unique_ptr<Json> tokenizer_json = ckpt.read_json("tokenizer.json");
    const std::unique_ptr<Json> tokenizer_config = ckpt.read_json("tokenizer_config.json");
    const fs::path vocab_txt = fs::path(dir) / "vocab.txt";
    std::error_code ec;
    if (!tokenizer_json && mapping.encoder && fs::is_regular_file(vocab_txt, ec)) {
      // A BERT saved without the fast-tokenizer file: the tokenizer.json transformers builds.
      tokenizer_json = std::make_unique<Json>(tokenizer_json_from_vocab_txt(
          read_whole_file(vocab_txt.string()), tokenizer_config.get(), vocab_txt.string()));
    }
    TokenizerSources ts;
    ts.tokenizer_json = tokenizer_json.get();
    ts.tokenizer_config = tokenizer_config.get();
    ts.config_json = &ckpt.config_json();
    ts.chat_template_file = ckpt.chat_template_file();
    ts.vocab_size = config.vocab_size;
    tok = export_hf_tokenizer(ts);
  }
  require(static_cast<int64_t>(tok.tokens.size()) == config.vocab_size, ErrorCode::kInvalidFile,
          "the tokenizer has " + std::to_string(tok.tokens.size()) + " tokens but config.json vocab_size is " +
              std::to_string(config.vocab_size));

  // Output types: the quantizer's planner over the tensors as F32 (what every source becomes).
  const quant::FileType ftype = resolve_file_type(params.type, tensors);
  std::vector<quant::TensorDesc> descs;
  for (const OutTensor& t : tensors) {
    quant::TensorDesc d;
    d.name = t.name;
    d.type = TensorType::F32;
    d.n_dims = static_cast<int>(t.ne.size());
    std::copy(t.ne.begin(), t.ne.end(), d.ne);
    descs.push_back(std::move(d));
  }
  quant::PlannerOptions popts;
  popts.ftype = ftype;
  popts.rules = params.rules;
  popts.pure = params.pure;
  quant::TypePlanner planner(popts, descs);
  for (size_t i = 0; i < tensors.size(); ++i) tensors[i].type = planner.decide(descs[i]).type;

  gguf::GgufWriter w;
  w.set_string("general.architecture", mapping.gguf_arch);
  w.set_string("general.type", "model");
  w.set_string("general.name", params.name.empty() ? default_name(config, dir) : params.name);
  if (mapping.encoder) {
    write_encoder_hparams(w, mapping, config, ftype, pooling);
  } else {
    write_hparams(w, mapping, config, ftype, params);
  }
  w.set_u32("general.quantization_version", kQuantizationVersion);
  write_tokenizer(w, tok);

  ConvertSummary summary;
  summary.hf_class = config.architecture;
  summary.arch = mapping.gguf_arch;
  summary.ftype = ftype;
  summary.tokenizer_model = tok.model;
  summary.tokenizer_pre = tok.pre;
  if (pooling) {
    summary.pooling = pooling_type_name(pooling->type);
    summary.pooling_source = pooling->source;
  }
  summary.n_vocab = static_cast<int64_t>(tok.tokens.size());
  tok = TokenizerExport{};  // the writer holds the encoded keys from here on
  summary.n_tensors = tensors.size();
  uint64_t total_in = 0;
  for (const OutTensor& t : tensors) {
    w.add_tensor_info(t.name, t.type, t.ne);
    if (t.source) total_in += t.source->tensor->n_bytes;
  }

  ThreadPool pool(resolve_threads(params.n_threads));
  TensorConverter converter(params, pool, config.effective_head_dim(), total_in);
  if (params.on_progress) params.on_progress(0.0, "header");
  w.write(out_path, [&](size_t index, const gguf::WriterTensor& wt, gguf::TensorSink& sink) {
    const OutTensor& t = tensors.at(index);
    check_cancel(params, t.name);
    converter.convert(t, sink);
    ConvertedTensor rep;
    rep.index = index;
    rep.n_tensors = tensors.size();
    rep.name = t.name;
    rep.source = t.source_name;
    rep.shape = shape_string(t.ne);
    rep.from = t.source ? dtype_name(t.source->tensor->dtype) : "generated";
    rep.to = t.type;
    rep.bytes_in = t.source ? t.source->tensor->n_bytes : t.generated.size() * sizeof(float);
    rep.bytes_out = wt.n_bytes;
    summary.bytes_in += rep.bytes_in;
    summary.bytes_out += rep.bytes_out;
    int64_t n = 1;
    for (int64_t d : t.ne) n *= d;
    summary.n_params += n;
    if (params.on_tensor) params.on_tensor(rep);
  });
  if (params.on_progress) params.on_progress(1.0, "done");
  summary.file_bytes = w.file_size();
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return summary;
}

}  // namespace edgellm::convert
