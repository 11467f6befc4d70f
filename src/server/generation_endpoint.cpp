#include "server/generation_endpoint.h"

#include <chrono>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "core/error.h"
#include "core/log.h"
#include "server/api_error.h"
#include "server/api_response.h"
#include "server/completion_channel.h"
#include "server/openai_request.h"
#include "server/routed_chat.h"
#include "server/session_endpoints.h"
#include "server/structured_request.h"
#include "server/tool_call_response.h"
#include "service/inference_service.h"

namespace edgellm::server {
namespace {

using Clock = std::chrono::steady_clock;

// How often a waiting worker looks at its client when no token arrives (prefill of a long
// prompt, a paused service): the bound on noticing a disconnect between tokens.
constexpr std::chrono::milliseconds kPollInterval{20};

// body.x_edgellm.session = info.
void set_session_info(Json& body, Json info) {
  Json x = body.find("x_edgellm") != nullptr ? *body.find("x_edgellm") : Json::object();
  x.set("session", std::move(info));
  body.set("x_edgellm", std::move(x));
}

// One answer in the making, handed between generate()'s stages on its worker: the client it
// writes to, the channel the service's callbacks fill, the request's id and serving version.
struct GenerationAnswer {
  GenerationAnswer(ServerContext& c, ResponseWriter& w) : ctx(c), out(w) {}

  ServerContext& ctx;
  ResponseWriter& out;
  ResponseHead head;
  bool routing = false;  // the router is on for this request's endpoint
  bool stream = false;
  bool include_usage = false;
  std::string session_id;  // x_edgellm_session: the request's KV is stored under it when it ends
  std::shared_ptr<CompletionChannel> channel = std::make_shared<CompletionChannel>();
  std::optional<ToolCallParser> tool_parser;  // tools: the reply parsed into content and calls
  RequestId id = 0;
  std::string version;  // the model version serving it, start to end (a swap does not move it)
  // Tokens of batches that had no text yet (held back: incomplete UTF-8, a possible stop-string
  // start): counted into the next chunk written, so the chunks' x_edgellm.tokens add up.
  int32_t untold_tokens = 0;

  // The client went away: counted first (whoever sees the cancellation in the metrics also sees
  // the disconnect), then the next token callback returns false and a request without tokens
  // yet is cancelled too.
  void client_left() {
    ctx.counters.client_disconnects.fetch_add(1);
    channel->abandon();
    ctx.service.cancel(id);
  }
  // One SSE event or, not streaming, the JSON body. False: the client is gone.
  bool write(const Json& event) { return out.write(stream ? "data: " + wire_json(event) + "\n\n" : wire_json(event)); }
};

// The ServiceRequest's server-side fields: the deadline, speculation (the request's choice, else
// the server's --spec / --draft-max; the service checks the values in the Runtime's words), the
// route, the session id, the tools' grammar and rendering, the callbacks into the channel.
void configure_request(GenerationAnswer& x, ParsedRequest& p, Endpoint endpoint, int64_t deadline_ms) {
  ServerContext& ctx = x.ctx;
  ServiceRequest& sr = p.request;
  sr.deadline_ms = deadline_ms;
  sr.generation.speculation.mode =
      speculation_mode_from_name(p.speculation.empty() ? ctx.options.speculation : p.speculation);
  sr.generation.speculation.draft_max = p.spec_n_max > 0 ? p.spec_n_max : ctx.options.draft_max;
  if (p.spec_n_max == 0) sr.generation.speculation.mode = SpeculationMode::kOff;
  if (p.spec_n_min >= 0) sr.generation.speculation.draft_min = p.spec_n_min;
  // Streamed chat (and a session's) with the router on: through the router as route local, so
  // tokens stream as they come and a local run that fails for the device's sake (out of memory,
  // degraded, context full) may still be answered by the cloud. Tools stay off the router: the
  // cloud call carries the chat only, not the tools.
  if (x.routing && !p.tools.active()) sr.route = RouteMode::kLocal;
  if (!p.session_id.empty()) {
    if (ctx.service.max_sessions() == 0) {
      throw ApiError::bad_field("x_edgellm_session", "sessions are off on this server (--sessions 0)");
    }
    // The Runtime continues from the session kept under this id (unknown: a new one) and keeps
    // the request's KV under it when it ends (RequestResult::session_stored).
    sr.session_id = p.session_id;
    x.session_id = p.session_id;
  }
  // Tools: the call grammar and the tools' rendering for the serving model's template; its reply
  // is parsed into content and calls (streamed as deltas). A model swap between here and submit
  // serves the request with the new model and this template's call format (the grammar is
  // compiled for the new vocabulary all the same).
  if (endpoint == Endpoint::kChat && p.tools.active()) {
    const std::shared_ptr<InferenceService> svc = ctx.service.serving();
    x.tool_parser.emplace(prepare_tool_request_400(svc->chat_template(), p.tools, sr));
  }
  sr.on_token = [channel = x.channel](const TokenEvent& ev) { return channel->on_token(ev); };
  sr.on_finish = [channel = x.channel](const RequestResult& r) { channel->on_finish(r); };
}

// Submits to the Runtime; its refusals become the API's (a constraint that did not compile: 400
// on the body field that held it; kBusy 429, kDegraded 503, ...).
void submit_request(GenerationAnswer& x, ParsedRequest& p) {
  ServerContext& ctx = x.ctx;
  ServiceRequest& sr = p.request;
  const std::string prompt_for_log =
      ctx.options.log_prompts ? (sr.messages.is_null() ? sr.prompt : sr.messages.dump()) : std::string();
  try {
    ServiceCalls::Submitted s = ctx.service.submit(std::move(sr));
    x.id = s.id;
    x.version = std::move(s.version);
  } catch (const Error& e) {
    const std::string what = e.what();
    if (e.code() == ErrorCode::kInvalidArgument && !p.constraint_field.empty() &&
        (what.rfind("grammar:", 0) == 0 || what.rfind("json_schema:", 0) == 0 || what.rfind("json_object:", 0) == 0)) {
      // The constraint did not compile (a GBNF syntax error, an unsupported schema keyword): a
      // 400 on the body field that held it.
      throw ApiError(400, "invalid_request_error", "invalid_value", what, p.constraint_field);
    }
    throw api_error_from(e);  // kBusy: 429, kDegraded: 503 (Retry-After added with the response)
  }
  if (ctx.options.log_prompts) {
    log_message(LogLevel::kInfo, x.head.id + " request " + std::to_string(x.id) + " prompt: " + prompt_for_log);
  }
}

// Until the first token the request may still fail with its own status (context full, a
// template error); the wait is bounded by the deadline, stop() and the client. Returns the first
// batch, or nothing when the client left.
std::optional<CompletionChannel::Batch> first_batch(GenerationAnswer& x) {
  ServerContext& ctx = x.ctx;
  const Clock::time_point give_up = Clock::now() + std::chrono::milliseconds(ctx.options.deadline_ms + 5000);
  while (!x.channel->wait_started(kPollInterval)) {
    if (x.out.client_gone()) {
      x.client_left();
      return std::nullopt;
    }
    if (ctx.stopping.load() || Clock::now() > give_up) ctx.service.cancel(x.id);
  }
  CompletionChannel::Batch b = x.channel->take(std::chrono::milliseconds(0));
  if (b.finished && b.text.empty() && b.result.finish_reason == FinishReason::kError) {
    throw api_error_from(Error(b.result.error_code, b.result.error));
  }
  if (b.finished && b.result.finish_reason == FinishReason::kCancelled && b.text.empty()) {
    throw ApiError(503, "server_error", "cancelled", "the request was cancelled (server stopping or deadline)");
  }
  return b;
}

// The head (status 200) and the body up to the result: streamed, every batch's text as a chunk
// (with tools, the parser's content and call deltas); not streamed, nothing until the end. `b`
// is the first batch and ends as the last (finished). False when the client left.
bool write_until_finished(GenerationAnswer& x, CompletionChannel::Batch& b) {
  ServerContext& ctx = x.ctx;
  if (x.stream) ctx.counters.streams.fetch_add(1);
  // With the router on: local unless the local run already failed over to the cloud (then its
  // answer is all there is, labelled "cloud:<model>").
  const bool cloud_answered = x.routing && b.finished && b.result.route.route == "cloud";
  HeaderList headers = {{"Cache-Control", "no-cache"},
                        {"X-Accel-Buffering", "no"},
                        {"x-edgellm-model-version", cloud_answered ? b.result.model_version : x.version}};
  if (x.routing) headers.emplace_back("x-edgellm-route", cloud_answered ? "cloud" : "local");
  // The head goes out now, with status 200; what follows is the body. A probe (written only to
  // a client that closed its sending side) is an SSE comment or JSON whitespace: ignored.
  x.out.begin_stream(200, x.stream ? "text/event-stream" : "application/json", std::move(headers),
                     x.stream ? ": \n\n" : " ");
  if (x.stream && x.head.endpoint == Endpoint::kChat && !x.write(role_chunk(x.head, x.include_usage))) return false;
  // Tools, streamed: the parser's content as text chunks, its call deltas as tool_calls chunks.
  auto write_tool_events = [&](const ToolCallEvents& ev) {
    if (!ev.content.empty() &&
        !x.write(text_chunk(x.head, ev.content, std::exchange(x.untold_tokens, 0), b.decode_ms, x.include_usage))) {
      return false;
    }
    return ev.calls.empty() ||
           x.write(tool_calls_chunk(x.head, ev.calls, std::exchange(x.untold_tokens, 0), b.decode_ms, x.include_usage));
  };
  for (;;) {
    if (x.out.client_gone()) return false;
    if (ctx.stopping.load() && !b.finished) ctx.service.cancel(x.id);
    x.untold_tokens += b.tokens;
    if (x.stream && x.tool_parser) {
      ToolCallEvents ev = x.tool_parser->push(b.text);
      if (b.finished) {
        ToolCallEvents rest = x.tool_parser->finish();
        ev.content += rest.content;
        ev.calls.insert(ev.calls.end(), rest.calls.begin(), rest.calls.end());
      }
      if (!write_tool_events(ev)) return false;
      b.text.clear();
    }
    // Not streaming: the answer is the result's text, written whole at the end.
    if (x.stream && !b.text.empty()) {
      const int32_t tokens = std::exchange(x.untold_tokens, 0);
      if (!x.write(text_chunk(x.head, b.text, tokens, b.decode_ms, x.include_usage))) return false;
    }
    if (b.finished) return true;
    b = x.channel->take(kPollInterval);
  }
}

// The end of the body: streamed, the final chunk (finish reason, session), usage and [DONE];
// not streamed, the whole completion (tool calls parsed, session). An error after the head is
// the body (the status line is out already: 200).
void write_result(GenerationAnswer& x, const RequestResult& r) {
  Json session;  // null unless the request named a session
  if (!x.session_id.empty() && r.finish_reason != FinishReason::kError) session = session_info(x.ctx, x.session_id, r);
  if (r.finish_reason == FinishReason::kError) {
    x.write(api_error_from(Error(r.error_code, r.error)).to_json());
  } else if (x.stream) {
    Json fin = final_chunk(x.head, r, x.include_usage);
    if (x.tool_parser) {
      set_finish_reason(fin, tool_finish_reason(!x.tool_parser->tool_calls().empty(), r.finish_reason));
    }
    if (!session.is_null()) set_session_info(fin, std::move(session));
    x.write(fin);
    if (x.include_usage) x.write(usage_chunk(x.head, r));
  } else {
    Json body_out = completion_body(x.head, r);
    if (x.tool_parser) {
      x.tool_parser->push(r.text);
      x.tool_parser->finish();
      body_out =
          with_tool_calls(std::move(body_out), x.tool_parser->content(), x.tool_parser->tool_calls(), r.finish_reason);
    }
    if (!session.is_null()) set_session_info(body_out, std::move(session));
    x.write(body_out);
  }
  if (x.stream) x.out.write("data: [DONE]\n\n");
}

}  // namespace

void generate(ServerContext& ctx, HttpRequest& request, ResponseWriter& out, Endpoint endpoint) {
  const Json body = parse_json_request(request, ctx.options.max_json_depth);
  std::string().swap(request.body);
  ParsedRequest p = endpoint == Endpoint::kChat ? parse_chat_request(body) : parse_completion_request(body);
  // The server's --timeout bounds every request (a worker waits for it); a client may ask for less.
  const int64_t deadline_ms = request_deadline_ms(body, ctx.options.deadline_ms);

  GenerationAnswer x(ctx, out);
  x.head.endpoint = endpoint;
  x.head.id = ctx.next_id(endpoint == Endpoint::kChat ? "chatcmpl-" : "cmpl-");
  x.head.created = static_cast<int64_t>(std::time(nullptr));
  x.head.model = p.model.empty() ? ctx.options.model_name : p.model;

  // With the router on, a non-streamed chat is the router's to answer (routed_chat.h). A request
  // that continues a session is answered here (the cloud holds no KV of it), and so is one with
  // an output constraint or tools (ParsedRequest::local_only).
  x.routing = endpoint == Endpoint::kChat && ctx.service.routing();
  if (x.routing && !p.stream && p.session_id.empty() && !p.local_only()) {
    out.send(answer_routed(ctx, std::move(p), x.head));
    return;
  }
  x.stream = p.stream;
  x.include_usage = p.stream && p.include_usage;
  configure_request(x, p, endpoint, deadline_ms);
  submit_request(x, p);
  std::optional<CompletionChannel::Batch> b = first_batch(x);
  if (!b) return;
  if (!write_until_finished(x, *b)) {
    x.client_left();
    return;
  }
  write_result(x, b->result);
  out.end_stream();
}

}  // namespace edgellm::server
