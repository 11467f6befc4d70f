// Classification (generation/classify.h) on an InferenceService's model, beside the service:
// one prefill of the prompt and one batched forward over every label's tokens, in a Context of
// its own over the service's model, sized to this request (prompt + longest label positions,
// labels + 1 sequences, KV for exactly the blocks it writes) and freed when the call returns.
// The forwards run on the calling thread (its own CPU set and priority: no placement), so the
// service's steps and the classify take turns on the cores. The one implementation behind
// Runtime::classify (which adds its deadline, shutdown and one-at-a-time rules) and
// `edgellm eval`'s accuracy cases with labels (tools/eval/task_runner.h).
#pragma once

#include "engine/context.h"
#include "generation/classify.h"

namespace edgellm {

class InferenceService;

// Checks the request (request_limits.h's check_classify_request, with the service's input
// policy), tokenizes it with the service's tokenizer and chat template and classifies it.
// `abort`: polled between layers; when it fires the call returns finish_reason kCancelled with
// index -1 and only prompt_tokens filled in. Throws
// Error(kInvalidArgument) for a bad request or a prompt plus the longest label over the
// service's n_ctx, kOutOfMemory.
ClassifyResult classify_beside(const InferenceService& service, ClassifyRequest request, AbortCheck abort = {});

}  // namespace edgellm
