#include "tools/quant/tensor_sensitivity.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "kernels/kernels.h"
#include "model/model.h"
#include "platform/cpu_topology.h"
#include "platform/shared_thread_pool.h"
#include "platform/thread_pool.h"
#include "tools/eval/kl_divergence.h"
#include "tools/quant/weighted_quantize.h"

namespace edgellm::quant {
namespace {

// The matrices the search covers: every matrix the model binds, token_embd included (it is
// quantized in every recipe; untied it is only looked up, and its error reaches the first layer).
std::vector<WeightView> searched_matrices(const Model& model) {
  std::vector<WeightView> out = {model.token_embd()};
  for (const WeightView* w : model.matrices()) {
    if (w->name != model.token_embd().name) out.push_back(*w);
  }
  return out;
}

// One candidate: the matrix quantized to `type` (rows in the file layout), and e(t, q).
struct Candidate {
  std::vector<uint8_t> bytes;
  double rel_error = 0;
};

Candidate quantize_candidate(const WeightView& w, TensorType type, const float* imp, ThreadPool& pool) {
  Candidate c;
  const size_t row_bytes = tensor_row_bytes(type, w.n_in);
  c.bytes.resize(row_bytes * static_cast<size_t>(w.n_out));
  // Per row: weighted squared error and weighted energy, summed in row order afterwards so the
  // result does not depend on how threads split the rows.
  std::vector<double> err(static_cast<size_t>(w.n_out)), energy(static_cast<size_t>(w.n_out));
  const int64_t rows_per_task = 64;
  const int64_t n_tasks = (w.n_out + rows_per_task - 1) / rows_per_task;
  std::vector<std::vector<float>> scratch(static_cast<size_t>(pool.max_threads()));
  pool.parallel_for(n_tasks, [&](int64_t task, int thread) {
    std::vector<float>& buf = scratch[static_cast<size_t>(thread)];
    buf.resize(2 * static_cast<size_t>(w.n_in));
    float* x = buf.data();
    float* y = buf.data() + w.n_in;
    for (int64_t r = task * rows_per_task; r < std::min(w.n_out, (task + 1) * rows_per_task); ++r) {
      kernels::dequantize_row(w.type, w.row(r), x, w.n_in);
      uint8_t* q = c.bytes.data() + static_cast<size_t>(r) * row_bytes;
      quantize_row_weighted(type, x, q, w.n_in, imp);
      kernels::dequantize_row(type, q, y, w.n_in);
      double e = 0, s = 0;
      for (int64_t i = 0; i < w.n_in; ++i) {
        const double m = imp != nullptr ? imp[i] : 1.0;
        const double d = static_cast<double>(x[i]) - y[i];
        e += m * d * d;
        s += m * static_cast<double>(x[i]) * x[i];
      }
      err[static_cast<size_t>(r)] = e;
      energy[static_cast<size_t>(r)] = s;
    }
  });
  double e = 0, s = 0;
  for (size_t r = 0; r < err.size(); ++r) e += err[r], s += energy[r];
  c.rel_error = s > 0 ? e / s : 0.0;
  return c;
}

// The base model's log-probs at every scored position: [n_scored, n_vocab].
struct BaseLogProbs {
  std::vector<float> lp;
  double ppl = 0;
};

// Swaps `view` in for the duration of a scope; swaps the original back however it is left.
class ScopedSwap {
 public:
  ScopedSwap(Model& model, const WeightView& view) : model_(model), old_(model.swap_matrix(view)) {}
  ~ScopedSwap() { model_.swap_matrix(old_); }
  ScopedSwap(const ScopedSwap&) = delete;
  ScopedSwap& operator=(const ScopedSwap&) = delete;

 private:
  Model& model_;
  WeightView old_;
};

}  // namespace

std::vector<TensorType> default_candidate_types() {
  return {TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1,
          TensorType::Q8_0, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K};
}

const TypeCost* TensorSensitivity::find(TensorType type) const {
  for (const TypeCost& c : costs) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

void tensor_kind(const std::string& name, std::string* kind, int32_t* layer) {
  std::string base = name;
  if (base.size() > 7 && base.compare(base.size() - 7, 7, ".weight") == 0) base.resize(base.size() - 7);
  *layer = -1;
  if (base.rfind("blk.", 0) == 0) {
    const size_t dot = base.find('.', 4);
    if (dot != std::string::npos) {
      try {
        *layer = std::stoi(base.substr(4, dot - 4));
      } catch (...) {
        *layer = -1;
      }
      base = base.substr(dot + 1);
    }
  }
  *kind = base;
}

SensitivityTable measure_sensitivity(Model& model, const std::vector<int32_t>& tokens, bool add_bos, int32_t bos,
                                     const SensitivityParams& params) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<TensorType> types = params.types.empty() ? default_candidate_types() : params.types;
  require(!types.empty(), ErrorCode::kInvalidArgument, "sensitivity: no candidate types");
  for (TensorType t : types) {
    require(uses_importance(t) || t == TensorType::Q8_0 || t == TensorType::F16 || t == TensorType::BF16,
            ErrorCode::kInvalidArgument,
            std::string("sensitivity: ") + tensor_type_name(t) + " is not a weight type to choose");
  }
  const std::vector<TensorType> measure = params.measure.empty() ? types : params.measure;
  const std::vector<WeightView> matrices = searched_matrices(model);
  for (const WeightView& w : matrices) {
    require(
        w.type == TensorType::F32 || w.type == TensorType::F16 || w.type == TensorType::BF16, ErrorCode::kUnsupported,
        "the mixed recipe measures from a float model: '" + std::string(w.name) + "' is " + tensor_type_name(w.type));
  }
  const eval::ChunkPlan plan =
      eval::plan_chunks(tokens.size(), params.eval.n_ctx, params.eval.max_chunks, add_bos, bos);
  const int32_t n_vocab = model.hparams().n_vocab;
  const size_t base_bytes = static_cast<size_t>(plan.n_scored()) * static_cast<size_t>(n_vocab) * sizeof(float);
  require(base_bytes <= params.max_base_bytes, ErrorCode::kInvalidArgument,
          "sensitivity: the base log-probs would take " + std::to_string(base_bytes >> 20) +
              " MiB (scored positions x vocabulary); evaluate fewer chunks");

  SensitivityTable table;
  table.n_ctx = plan.n_ctx;
  table.n_chunk = plan.n_chunk;
  table.n_scored = plan.n_scored();
  table.imatrix = params.imatrix != nullptr;

  // 1. The base: the float model's log-probs at every scored position.
  BaseLogProbs base;
  base.lp.resize(static_cast<size_t>(plan.n_scored()) * static_cast<size_t>(n_vocab));
  eval::NllAccumulator base_nll;
  const auto pos_index = [&](int32_t c, int32_t k) {
    return (static_cast<size_t>(c) * static_cast<size_t>(plan.scored_per_chunk()) + static_cast<size_t>(k)) *
           static_cast<size_t>(n_vocab);
  };
  eval::evaluate_chunks(model, tokens, plan, params.eval,
                        [&](int32_t c, int32_t k, const float* logits, int32_t next) {
                          float* lp = base.lp.data() + pos_index(c, k);
                          eval::log_softmax(logits, n_vocab, lp);
                          base_nll.add(-static_cast<double>(lp[next]));
                        },
                        {});
  table.base_ppl = base_nll.ppl();
  table.n_passes = 1;

  // 2. Per matrix and type: quantize, measure the weight error, and (measured types) the KLD.
  int64_t n_evals = 0;
  for (const WeightView& w : matrices) {
    bool any = false;
    for (TensorType q : measure) {
      if (std::find(types.begin(), types.end(), q) != types.end() && w.n_in % tensor_block_size(q) == 0)
        ++n_evals, any = true;
    }
    if (!any) ++n_evals;  // the first fitting candidate is measured instead
  }
  const std::shared_ptr<ThreadPool> pool_ref =
      shared_thread_pool(params.eval.n_threads > 0 ? params.eval.n_threads : default_thread_count());
  ThreadPool& pool = *pool_ref;
  std::vector<float> model_lp(static_cast<size_t>(n_vocab));
  int64_t done = 0;
  for (const WeightView& w : matrices) {
    TensorSensitivity ts;
    ts.name = std::string(w.name);
    tensor_kind(ts.name, &ts.kind, &ts.layer);
    ts.n_in = w.n_in;
    ts.n_out = w.n_out;
    std::optional<std::vector<float>> imp;
    if (params.imatrix != nullptr) {
      imp = params.imatrix->importance(ts.name);
      if (imp && static_cast<int64_t>(imp->size()) != w.n_in)
        imp.reset();  // quantize_model ignores it too (token_embd)
    }
    std::vector<TensorType> fitting;
    for (TensorType q : types) {
      if (w.n_in % tensor_block_size(q) == 0) fitting.push_back(q);
    }
    bool measured_any = false;
    for (TensorType q : fitting) {
      measured_any = measured_any || std::find(measure.begin(), measure.end(), q) != measure.end();
    }
    for (TensorType q : fitting) {
      const bool measure_this =
          measured_any ? std::find(measure.begin(), measure.end(), q) != measure.end() : q == fitting.front();
      Candidate cand = quantize_candidate(w, q, imp && uses_importance(q) ? imp->data() : nullptr, pool);
      TypeCost cost;
      cost.type = q;
      cost.bytes = cand.bytes.size();
      cost.rel_error = cand.rel_error;
      if (measure_this) {
        WeightView v = w;
        v.type = q;
        v.data = cand.bytes.data();
        v.row_bytes = tensor_row_bytes(q, w.n_in);
        eval::KlAccumulator acc;
        {
          const ScopedSwap swap(model, v);
          eval::evaluate_chunks(model, tokens, plan, params.eval,
                                [&](int32_t c, int32_t k, const float* logits, int32_t next) {
                                  eval::log_softmax(logits, n_vocab, model_lp.data());
                                  acc.add(base.lp.data() + pos_index(c, k), model_lp.data(), n_vocab, next);
                                },
                                {});
        }
        const eval::KlStats s = acc.finish();
        cost.kld = s.kld_mean;
        cost.kld_error = s.kld_error;
        cost.ppl = s.ppl;
        cost.nll_delta = s.ln_ratio_mean;
        cost.measured = true;
        ++table.n_passes;
        ++done;
        if (params.progress) {
          params.progress(static_cast<double>(done) / static_cast<double>(std::max<int64_t>(1, n_evals)),
                          ts.name + " " + tensor_type_name(q) + ": KLD " + std::to_string(cost.kld));
        }
      }
      ts.costs.push_back(cost);
    }
    // Unmeasured types: KLD of the measured type of closest weight error, scaled by the error.
    for (TypeCost& c : ts.costs) {
      if (c.measured) continue;
      const TypeCost* ref = nullptr;
      double best = std::numeric_limits<double>::infinity();
      for (const TypeCost& m : ts.costs) {
        if (!m.measured || m.rel_error <= 0) continue;
        const double d = std::fabs(std::log(std::max(c.rel_error, 1e-30) / m.rel_error));
        if (d < best) best = d, ref = &m;
      }
      c.kld = ref != nullptr ? ref->kld * c.rel_error / ref->rel_error : 0.0;
      c.nll_delta = ref != nullptr ? ref->nll_delta * c.rel_error / ref->rel_error : 0.0;
    }
    table.tensors.push_back(std::move(ts));
  }
  table.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return table;
}

Json sensitivity_to_json(const SensitivityTable& t) {
  Json j = Json::object();
  j.set("n_ctx", t.n_ctx);
  j.set("n_chunk", t.n_chunk);
  j.set("n_scored", t.n_scored);
  j.set("base_ppl", t.base_ppl);
  j.set("imatrix", t.imatrix);
  j.set("n_passes", t.n_passes);
  j.set("seconds", t.seconds);
  Json tensors = Json::array();
  for (const TensorSensitivity& ts : t.tensors) {
    Json e = Json::object();
    e.set("name", ts.name);
    e.set("n_in", ts.n_in);
    e.set("n_out", ts.n_out);
    Json costs = Json::array();
    for (const TypeCost& c : ts.costs) {
      Json o = Json::object();
      o.set("type", tensor_type_name(c.type));
      o.set("bytes", static_cast<uint64_t>(c.bytes));
      o.set("rel_error", c.rel_error);
      o.set("kld", c.kld);
      o.set("kld_error", c.kld_error);
      o.set("ppl", c.ppl);
      o.set("nll_delta", c.nll_delta);
      o.set("measured", c.measured);
      costs.push_back(o);
    }
    e.set("costs", costs);
    tensors.push_back(e);
  }
  j.set("tensors", tensors);
  return j;
}

SensitivityTable sensitivity_from_json(const Json& j) {
  const auto field = [](const Json& o, const char* key) -> const Json& {
    const Json* v = o.find(key);
    if (v == nullptr) throw Error(ErrorCode::kInvalidFile, std::string("sensitivity file: missing '") + key + "'");
    return *v;
  };
  const auto number = [&](const Json& o, const char* key) {
    const Json& v = field(o, key);
    if (!v.is_number() || !std::isfinite(v.as_number())) {
      throw Error(ErrorCode::kInvalidFile, std::string("sensitivity file: '") + key + "' is not a finite number");
    }
    return v.as_number();
  };
  require(j.is_object(), ErrorCode::kInvalidFile, "sensitivity file: not a JSON object");
  SensitivityTable t;
  t.n_ctx = static_cast<int32_t>(number(j, "n_ctx"));
  t.n_chunk = static_cast<int32_t>(number(j, "n_chunk"));
  t.n_scored = static_cast<int64_t>(number(j, "n_scored"));
  t.base_ppl = number(j, "base_ppl");
  t.imatrix = field(j, "imatrix").is_bool() && field(j, "imatrix").as_bool();
  t.n_passes = static_cast<int64_t>(number(j, "n_passes"));
  t.seconds = number(j, "seconds");
  const Json& tensors = field(j, "tensors");
  require(tensors.is_array(), ErrorCode::kInvalidFile, "sensitivity file: 'tensors' is not an array");
  for (const Json& e : tensors.as_array()) {
    require(e.is_object() && field(e, "name").is_string(), ErrorCode::kInvalidFile,
            "sensitivity file: a tensor without a name");
    TensorSensitivity ts;
    ts.name = field(e, "name").as_string();
    tensor_kind(ts.name, &ts.kind, &ts.layer);
    ts.n_in = static_cast<int64_t>(number(e, "n_in"));
    ts.n_out = static_cast<int64_t>(number(e, "n_out"));
    const Json& costs = field(e, "costs");
    require(costs.is_array() && costs.size() > 0, ErrorCode::kInvalidFile,
            "sensitivity file: '" + ts.name + "' has no costs");
    for (const Json& o : costs.as_array()) {
      require(o.is_object() && field(o, "type").is_string(), ErrorCode::kInvalidFile,
              "sensitivity file: a cost of '" + ts.name + "' has no type");
      const auto type = tensor_type_from_name(field(o, "type").as_string());
      require(type.has_value() && tensor_type_traits(*type).is_weight_type, ErrorCode::kInvalidFile,
              "sensitivity file: '" + ts.name + "' has unknown type '" + field(o, "type").as_string() + "'");
      TypeCost c;
      c.type = *type;
      c.bytes = static_cast<size_t>(number(o, "bytes"));
      c.rel_error = number(o, "rel_error");
      c.kld = number(o, "kld");
      c.kld_error = number(o, "kld_error");
      c.ppl = number(o, "ppl");
      c.nll_delta = number(o, "nll_delta");
      c.measured = field(o, "measured").is_bool() && field(o, "measured").as_bool();
      require(c.bytes > 0 && c.kld >= 0 && c.rel_error >= 0, ErrorCode::kInvalidFile,
              "sensitivity file: '" + ts.name + "' " + tensor_type_name(c.type) + " has a negative or empty cost");
      ts.costs.push_back(c);
    }
    t.tensors.push_back(std::move(ts));
  }
  return t;
}

}  // namespace edgellm::quant
