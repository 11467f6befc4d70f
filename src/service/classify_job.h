// A classify request (generation/classify.h) as the InferenceService serves it: queued with the
// generation requests (the same queue, BUSY rule, deadline, cancel by id and shutdown) and run
// by the scheduler thread on the service's own Context (inference_classify.cpp), the prompt's
// prefix taken from the service's KV prefix cache and the labels forking the prompt's blocks.
//
//   submit_classify   check_classify_request + tokenize (classify_tokens) on the caller's thread
//   admission         in queue order; waits (FIFO: later requests wait behind it) while the KV
//                     pool has fewer free or cached blocks than its peak (prompt + one chunk of
//                     label forks); kOutOfMemory when the whole pool is smaller
//   run               prefix lookup (at most prompt - 1 positions), the rest prefilled, labels
//                     scored kClassifyLabelSeqs at a time in scratch sequences (one batched
//                     forward per chunk); the forks are cleared, the prompt's full blocks stay
//                     in the prefix cache for the next classify or chat with the same start
//
// The whole job runs between two steps, so its blocks are back in the pool (or the prefix
// cache) before the running requests take their next ones: their reservations hold.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "core/error.h"
#include "generation/classify.h"
#include "service/request.h"
#include "service/request_limits.h"

namespace edgellm {

class ChatTemplate;
class Tokenizer;

// Sequences the service's Context keeps beside its n_seq_max for classify: one for the prompt
// and kClassifyLabelSeqs for label forks (more labels are scored in several forwards). Each
// costs a block table and one reserved logit row (n_vocab floats of address space).
inline constexpr int32_t kClassifyLabelSeqs = 8;
inline constexpr int32_t kClassifyScratchSeqs = kClassifyLabelSeqs + 1;

// What a classify job's on_finish gets.
struct ClassifyOutcome {
  RequestId id = 0;
  // result.finish_reason: kStop (a label chosen), kTimeout (the deadline passed first), kCancelled
  // (cancel() or shutdown), kError (error_code, error); index -1 unless kStop.
  ClassifyResult result;
  ErrorCode error_code = ErrorCode::kInternal;
  std::string error;
  double queue_ms = 0;  // submit -> the job started running
};

// The service's record of one classify request (InferenceService::Live::classify).
struct ClassifyJob {
  ClassifyRequest request;
  ClassifyTokens tokens;
  int32_t peak_blocks = 0;  // label_scoring_peak_blocks for the service's block size
  ClassifyResult result;    // filled in when the labels are scored
  std::function<void(ClassifyOutcome&)> on_finish;
};

// Checks and tokenizes a request for a service with these limits (the caller's thread). Throws
// Error(kInvalidArgument): check_classify_request's errors, a prompt plus the longest label
// over n_ctx (naming both lengths), what classify_tokens throws.
ClassifyJob make_classify_job(ClassifyRequest request, const Tokenizer& tokenizer, const ChatTemplate& chat_template,
                              InputPolicy policy, int32_t n_ctx, int32_t block_tokens);

}  // namespace edgellm
