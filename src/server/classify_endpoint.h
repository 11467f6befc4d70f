// POST /v1/classify, /classify (docs/server.md, "Classify"): intent recognition over the serving
// model through Runtime::classify, the call edgellm_classify and NAPI classify make, so it takes
// their checks (request_limits.h: the same 400 wording) and their scoring (generation/classify.h):
// each label scored as the answer by its log-probability after the prompt, the most probable
// wins, the answer is always one of the labels.
//
//   {"text": string | "messages": [{"role": "system", "content"}?, {"role": "user", "content"}],
//    "labels": string[1..64], "instruction"?: string, "raw"?: bool, "length_normalize"?: bool,
//    "model"?: ignored}
//   -> {"object": "classification", "model", "label", "index",
//       "labels": [{"index", "label", "probability", "logprob", "tokens"}] in request order,
//       "usage": {"prompt_tokens", "label_tokens", "total_tokens"}, "timings": {"total_ms"}}
//
// "messages" is the chat shape of the same request: an optional system message (the
// instruction) and one user message (the text); nothing else fits a classify prompt, so any
// other turn is a 400, as is "messages" with "text", "instruction" or "raw". The deadline is the
// server's (--deadline-ms): past it, 503 "timeout". The forward blocks the worker (a prefill and
// one short batched forward); classify calls take turns (Runtime's one-at-a-time rule).
//
// Thread-safety: any worker thread.
#pragma once

#include "server/http_message.h"
#include "server/server_context.h"

namespace edgellm::server {

HttpResponse classify(ServerContext& ctx, HttpRequest& request);

}  // namespace edgellm::server
