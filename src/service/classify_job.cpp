#include "service/classify_job.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "generation/label_scorer.h"

namespace edgellm {

ClassifyJob make_classify_job(ClassifyRequest request, const Tokenizer& tokenizer, const ChatTemplate& chat_template,
                              InputPolicy policy, int32_t n_ctx, int32_t block_tokens) {
  (void)check_classify_request(request, policy);
  ClassifyJob job;
  job.tokens = classify_tokens(request, tokenizer, chat_template);
  size_t longest = 0;
  for (const std::vector<int32_t>& l : job.tokens.labels) longest = std::max(longest, l.size());
  const size_t positions = job.tokens.prompt.size() + longest;
  require(positions <= static_cast<size_t>(n_ctx), ErrorCode::kInvalidArgument, [&] {
    return "classify: the prompt (" + std::to_string(job.tokens.prompt.size()) + " tokens) and the longest label (" +
           std::to_string(longest) + ") take " + std::to_string(positions) + " positions; the context holds " +
           std::to_string(n_ctx);
  });
  job.peak_blocks = label_scoring_peak_blocks(block_tokens, static_cast<int32_t>(job.tokens.prompt.size()),
                                              job.tokens.labels, kClassifyLabelSeqs);
  job.request = std::move(request);
  return job;
}

}  // namespace edgellm
