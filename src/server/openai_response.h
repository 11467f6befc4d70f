// Response bodies in OpenAI's shapes (chat.completion, chat.completion.chunk, text_completion)
// plus an "x_edgellm" object with EdgeLLM's own per-request numbers:
//   {"finish_reason": "stop"|"length"|"timeout"|"cancelled", "ttft_ms", "queue_ms",
//    "decode_tokens_per_second", "prompt_tokens", "completion_tokens"}
// Pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "core/json.h"
#include "service/request.h"

namespace edgellm::server {

enum class Endpoint { kChat, kCompletion };

// What every body of one response shares.
struct ResponseHead {
  Endpoint endpoint = Endpoint::kChat;
  std::string id;       // "chatcmpl-..." / "cmpl-..."
  int64_t created = 0;  // unix seconds
  std::string model;
};

// OpenAI knows "stop" and "length"; a deadline (timeout) is reported as "length" (the answer was
// cut short) and x_edgellm.finish_reason says "timeout".
const char* openai_finish_reason(FinishReason reason);

Json usage_json(const RequestStats& stats);
Json edgellm_json(const RequestResult& result);
// llama-server's "timings" (prompt_n, predicted_n, ..., draft_n, draft_n_accepted).
Json timings_json(const RequestStats& stats);

// The whole answer (stream = false).
Json completion_body(const ResponseHead& head, const RequestResult& result);
// One streamed chunk carrying `text` (chat: delta.content); finish_reason null;
// x_edgellm.tokens = the sampled tokens the text came with (a chunk may carry several: a
// stopped client, which never sees the usage chunk, still knows how many it got);
// x_edgellm.decode_ms = milliseconds from the first sampled token to this chunk's last one, so
// such a client also knows the decode rate (tokens - 1 over decode_ms) however the chunks were
// grouped on the way.
Json text_chunk(const ResponseHead& head, const std::string& text, int32_t tokens, double decode_ms,
                bool include_usage);
// Chat only: the first chunk, delta {"role": "assistant", "content": ""}.
Json role_chunk(const ResponseHead& head, bool include_usage);
// The last chunk with choices: empty delta / text, finish_reason set (and x_edgellm).
Json final_chunk(const ResponseHead& head, const RequestResult& result, bool include_usage);
// stream_options.include_usage: choices [] and the usage.
Json usage_chunk(const ResponseHead& head, const RequestResult& result);

// "data: <json>\n\n"
std::string sse_event(const Json& body);

}  // namespace edgellm::server
