#include "service/service_classify.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "engine/memory_plan.h"
#include "generation/label_scorer.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "service/inference_service.h"
#include "service/request_limits.h"

namespace edgellm {

ClassifyResult classify_beside(const InferenceService& service, ClassifyRequest request, AbortCheck abort) {
  (void)check_classify_request(request, service.params().input_policy);
  const ClassifyTokens tokens = classify_tokens(request, service.tokenizer(), service.chat_template());

  size_t longest = 0;
  for (const std::vector<int32_t>& l : tokens.labels) longest = std::max(longest, l.size());
  const int32_t n_ctx = service.context_params().n_ctx;
  const size_t positions = tokens.prompt.size() + longest;
  require(positions <= static_cast<size_t>(n_ctx), ErrorCode::kInvalidArgument, [&] {
    return "classify: the prompt (" + std::to_string(tokens.prompt.size()) + " tokens) and the longest label (" +
           std::to_string(longest) + ") take " + std::to_string(positions) + " positions; the context holds " +
           std::to_string(n_ctx);
  });

  ContextParams cp = service.context_params();
  cp.n_ctx = static_cast<int32_t>(positions);
  cp.n_seq_max = static_cast<int32_t>(tokens.labels.size()) + 1;
  cp.embeddings = false;
  // The caller's thread runs the forwards: it keeps its own CPU set and priority (a placement
  // would move it; the pool's workers keep what the service gave them).
  cp.placement = {};
  cp.placement_batch = {};
  cp.kv_budget_fraction = 0;
  const int32_t blocks =
      label_scoring_blocks(cp.kv_block_tokens, static_cast<int32_t>(tokens.prompt.size()), tokens.labels);
  cp.kv_budget_bytes = static_cast<size_t>(blocks) * KvCache::block_bytes(kv_cache_params(service.model().hparams(), cp));

  Context ctx(service.model(), cp);
  ctx.set_abort_check(abort);
  try {
    return classify(ctx, tokens, request);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kCancelled) throw;
    ClassifyResult stopped;  // nothing chosen
    stopped.finish_reason = FinishReason::kCancelled;
    stopped.prompt_tokens = static_cast<int32_t>(tokens.prompt.size());
    return stopped;
  }
}

}  // namespace edgellm
