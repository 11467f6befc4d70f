#include "tools/quant/imatrix_collector.h"

#include <chrono>
#include <cmath>

#include "core/error.h"
#include "engine/batch.h"
#include "engine/context.h"
#include "model/model.h"
#include "tools/eval/perplexity.h"

namespace edgellm::quant {

void ImatrixCollector::on_matmul_input(std::string_view weight, const float* x, int64_t n_tokens, int64_t n_in) {
  const bool is_output = !output_name_.empty() && weight == output_name_ && weight.substr(0, 4) != "blk.";
  if (is_output ? !process_output_ : weight.substr(0, 4) != "blk.") return;
  auto it = acc_.find(weight);
  if (it == acc_.end()) {
    it = acc_.emplace(std::string(weight), Acc{}).first;
    it->second.sums.assign(static_cast<size_t>(n_in), 0.0);
  }
  Acc& a = it->second;
  require(a.sums.size() == static_cast<size_t>(n_in), ErrorCode::kInvalidArgument,
          "imatrix: '" + std::string(weight) + "' seen with " + std::to_string(n_in) + " and " +
              std::to_string(a.sums.size()) + " columns");
  for (int64_t t = 0; t < n_tokens; ++t) {
    const float* row = x + t * n_in;
    for (int64_t c = 0; c < n_in; ++c) a.sums[static_cast<size_t>(c)] += static_cast<double>(row[c]) * row[c];
  }
  a.count += n_tokens;
  // One check per call rather than per element: a NaN or infinity stays in the sum.
  double total = 0;
  for (double s : a.sums) total += s;
  require(std::isfinite(total), ErrorCode::kInvalidArgument,
          "imatrix: non-finite activations in the input of '" + std::string(weight) + "'");
}

Imatrix ImatrixCollector::result() const {
  Imatrix m;
  for (const auto& [name, a] : acc_) {
    ImatrixEntry e;
    e.sums.assign(a.sums.begin(), a.sums.end());
    e.counts = {a.count};
    m.entries.emplace(name, std::move(e));
  }
  return m;
}

ImatrixRun compute_imatrix(const Model& model, const std::vector<int32_t>& tokens, bool add_bos, int32_t bos,
                           const ImatrixParams& params) {
  const auto t0 = std::chrono::steady_clock::now();
  const eval::ChunkPlan plan = eval::plan_chunks(tokens.size(), params.n_ctx, params.max_chunks, add_bos, bos);
  const int32_t n_vocab = model.hparams().n_vocab;
  for (int32_t t : tokens) {
    require(t >= 0 && t < n_vocab, ErrorCode::kInvalidArgument,
            "token id " + std::to_string(t) + " is outside the model's vocabulary of " + std::to_string(n_vocab));
  }
  ImatrixCollector collector(params.process_output);
  collector.set_output_name(std::string(model.output().name));

  ContextParams cp;
  cp.n_ctx = plan.n_ctx;
  cp.n_batch = std::max<int32_t>(1, std::min(params.n_batch, plan.n_ctx));
  cp.n_seq_max = 1;
  cp.n_threads = params.n_threads;
  cp.kv_type = TensorType::F32;  // statistics of the model itself, not of a rounded cache
  Context ctx(model, cp);
  ctx.set_matmul_observer(&collector);

  eval::NllAccumulator nll;
  Batch batch;
  for (int32_t c = 0; c < plan.n_chunk; ++c) {
    if (params.cancel != nullptr && params.cancel->load(std::memory_order_relaxed)) {
      throw Error(ErrorCode::kCancelled,
                  "imatrix interrupted at chunk " + std::to_string(c + 1) + " of " + std::to_string(plan.n_chunk));
    }
    ctx.clear();
    batch.clear();
    const size_t start = static_cast<size_t>(c) * static_cast<size_t>(plan.n_ctx);
    for (int32_t i = 0; i < plan.n_ctx; ++i) {
      const int32_t tok = (i == 0 && plan.replace_bos) ? plan.bos : tokens[start + static_cast<size_t>(i)];
      // The output head sees every row when it is collected (llama-imatrix asks for all logits);
      // otherwise only the scored positions need logits.
      const bool scored = params.compute_ppl && i >= plan.first && i < plan.n_ctx - 1;
      batch.add(0, tok, i, params.process_output || scored);
    }
    ctx.decode(batch);
    if (params.compute_ppl) {
      for (int32_t k = 0; k < plan.scored_per_chunk(); ++k) {
        const int32_t row = params.process_output ? plan.first + k : k;
        const int32_t next = tokens[start + static_cast<size_t>(plan.first + k + 1)];
        nll.add(-eval::log_prob_of(ctx.logits(row), n_vocab, next));
      }
    }
    if (params.progress) {
      params.progress(static_cast<double>(c + 1) / plan.n_chunk,
                      "chunk " + std::to_string(c + 1) + "/" + std::to_string(plan.n_chunk) +
                          (params.compute_ppl ? ", ppl " + std::to_string(nll.ppl()) : std::string()));
    }
  }
  ctx.set_matmul_observer(nullptr);

  ImatrixRun run;
  run.imatrix = collector.result();
  run.imatrix.chunk_count = plan.n_chunk;
  run.imatrix.chunk_size = plan.n_ctx;
  if (!params.dataset.empty()) run.imatrix.datasets.push_back(params.dataset);
  run.n_tokens = static_cast<int64_t>(tokens.size());
  run.n_chunk = plan.n_chunk;
  if (params.compute_ppl) {
    run.ppl = nll.ppl();
    run.ppl_error = nll.ppl_error();
  }
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return run;
}

}  // namespace edgellm::quant
