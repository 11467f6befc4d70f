#include "server/openai_response.h"

namespace edgellm::server {
namespace {

const char* object_name(const ResponseHead& h, bool chunk) {
  if (h.endpoint == Endpoint::kChat) return chunk ? "chat.completion.chunk" : "chat.completion";
  return "text_completion";
}

Json envelope(const ResponseHead& h, bool chunk) {
  Json j = Json::object();
  j.set("id", h.id);
  j.set("object", object_name(h, chunk));
  j.set("created", h.created);
  j.set("model", h.model);
  j.set("system_fingerprint", "edgellm");
  return j;
}

// One choice of a chunk: chat carries a delta, completions carry text.
Json chunk_choice(const ResponseHead& h, Json delta_or_text, Json finish_reason) {
  Json c = Json::object();
  c.set("index", 0);
  if (h.endpoint == Endpoint::kChat) {
    c.set("delta", std::move(delta_or_text));
  } else {
    c.set("text", std::move(delta_or_text));
  }
  c.set("logprobs", Json());
  c.set("finish_reason", std::move(finish_reason));
  return c;
}

Json with_choice(Json j, Json choice, bool include_usage) {
  Json choices = Json::array();
  choices.push_back(std::move(choice));
  j.set("choices", std::move(choices));
  if (include_usage) j.set("usage", Json());  // OpenAI: null on every chunk but the usage one
  return j;
}

}  // namespace

const char* openai_finish_reason(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kCancelled: return "stop";
    default: return "length";
  }
}

Json usage_json(const RequestStats& s) {
  Json u = Json::object();
  u.set("prompt_tokens", s.prompt_tokens);
  u.set("completion_tokens", s.completion_tokens);
  u.set("total_tokens", s.prompt_tokens + s.completion_tokens);
  // OpenAI's field for prompt tokens not computed again (prefix cache or a restored session).
  Json details = Json::object();
  details.set("cached_tokens", s.cached_tokens);
  u.set("prompt_tokens_details", std::move(details));
  return u;
}

Json edgellm_json(const RequestResult& r) {
  Json x = Json::object();
  x.set("finish_reason", finish_reason_name(r.finish_reason));
  x.set("ttft_ms", r.stats.ttft_ms);
  x.set("queue_ms", r.stats.queue_ms);
  x.set("total_ms", r.stats.total_ms);
  x.set("decode_ms", r.stats.decode_ms);
  x.set("decode_tokens_per_second", r.stats.decode_tokens_per_second);
  x.set("prompt_tokens", r.stats.prompt_tokens);
  x.set("completion_tokens", r.stats.completion_tokens);
  x.set("model_version", r.model_version);  // the Runtime's model version that served it (hot swap)
  const SpeculationStats& sp = r.stats.speculation;
  Json spec = Json::object();
  spec.set("drafted", sp.drafted);
  spec.set("accepted", sp.accepted);
  spec.set("acceptance_rate", sp.acceptance_rate());
  spec.set("forwards", sp.forwards);
  spec.set("tokens_per_forward", sp.tokens_per_forward());
  spec.set("off_reason", r.stats.speculation_off_reason);
  x.set("speculation", std::move(spec));
  return x;
}

// llama-server's "timings" object (its names), with its speculative decoding counters draft_n
// (tokens drafted) and draft_n_accepted.
Json timings_json(const RequestStats& s) {
  Json t = Json::object();
  t.set("prompt_n", s.prompt_tokens - s.cached_tokens);
  t.set("prompt_ms", s.prefill_ms);
  t.set("prompt_per_second", s.prefill_tokens_per_second);
  t.set("predicted_n", s.completion_tokens);
  t.set("predicted_ms", s.decode_ms);
  t.set("predicted_per_second", s.decode_tokens_per_second);
  t.set("draft_n", s.speculation.drafted);
  t.set("draft_n_accepted", s.speculation.accepted);
  return t;
}

Json completion_body(const ResponseHead& h, const RequestResult& r) {
  Json j = envelope(h, false);
  Json c = Json::object();
  c.set("index", 0);
  if (h.endpoint == Endpoint::kChat) {
    Json m = Json::object();
    m.set("role", "assistant");
    m.set("content", r.text);
    c.set("message", std::move(m));
  } else {
    c.set("text", r.text);
  }
  c.set("logprobs", Json());
  c.set("finish_reason", openai_finish_reason(r.finish_reason));
  Json choices = Json::array();
  choices.push_back(std::move(c));
  j.set("choices", std::move(choices));
  j.set("usage", usage_json(r.stats));
  j.set("timings", timings_json(r.stats));
  j.set("x_edgellm", edgellm_json(r));
  return j;
}

Json text_chunk(const ResponseHead& h, const std::string& text, int32_t tokens, double decode_ms, bool include_usage) {
  Json payload;
  if (h.endpoint == Endpoint::kChat) {
    payload = Json::object();
    payload.set("content", text);
  } else {
    payload = Json(text);
  }
  Json j = with_choice(envelope(h, true), chunk_choice(h, std::move(payload), Json()), include_usage);
  Json x = Json::object();
  x.set("tokens", tokens);
  x.set("decode_ms", decode_ms);
  j.set("x_edgellm", std::move(x));
  return j;
}

Json role_chunk(const ResponseHead& h, bool include_usage) {
  Json delta = Json::object();
  delta.set("role", "assistant");
  delta.set("content", "");
  return with_choice(envelope(h, true), chunk_choice(h, std::move(delta), Json()), include_usage);
}

Json final_chunk(const ResponseHead& h, const RequestResult& r, bool include_usage) {
  Json payload = h.endpoint == Endpoint::kChat ? Json::object() : Json("");
  Json j = with_choice(envelope(h, true), chunk_choice(h, std::move(payload), openai_finish_reason(r.finish_reason)),
                       include_usage);
  j.set("timings", timings_json(r.stats));
  j.set("x_edgellm", edgellm_json(r));
  return j;
}

Json usage_chunk(const ResponseHead& h, const RequestResult& r) {
  Json j = envelope(h, true);
  j.set("choices", Json::array());
  j.set("usage", usage_json(r.stats));
  return j;
}

std::string sse_event(const Json& body) { return "data: " + body.dump() + "\n\n"; }

}  // namespace edgellm::server
