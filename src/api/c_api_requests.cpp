// The C ABI's requests: the C request -> ServiceRequest (types only: the ranges and their words
// are the runtime's, service/request_limits.h), submit / cancel, and the result back to C.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "api/c_api_internal.h"
#include "chat/tool_calls.h"
#include "core/utf8.h"
#include "runtime/tool_request.h"

using namespace edgellm;
using capi::fail;
using capi::guard;

static_assert(static_cast<int>(FinishReason::kStop) == EDGELLM_FINISH_STOP &&
                  static_cast<int>(FinishReason::kLength) == EDGELLM_FINISH_LENGTH &&
                  static_cast<int>(FinishReason::kCancelled) == EDGELLM_FINISH_CANCELLED &&
                  static_cast<int>(FinishReason::kTimeout) == EDGELLM_FINISH_TIMEOUT &&
                  static_cast<int>(FinishReason::kError) == EDGELLM_FINISH_ERROR,
              "the C finish reasons mirror FinishReason");
static_assert(static_cast<int>(SpeculationMode::kOff) == EDGELLM_SPEC_OFF &&
                  static_cast<int>(SpeculationMode::kNgram) == EDGELLM_SPEC_NGRAM &&
                  static_cast<int>(SpeculationMode::kDraft) == EDGELLM_SPEC_DRAFT,
              "the C speculation modes mirror SpeculationMode");
static_assert(static_cast<int>(RouteMode::kOff) == EDGELLM_ROUTE_OFF &&
                  static_cast<int>(RouteMode::kAuto) == EDGELLM_ROUTE_AUTO &&
                  static_cast<int>(RouteMode::kLocal) == EDGELLM_ROUTE_LOCAL &&
                  static_cast<int>(RouteMode::kCloud) == EDGELLM_ROUTE_CLOUD,
              "the C routes mirror RouteMode");
// ABI 5 sizes (LP64: x86-64 and AArch64 alike). A new field goes after the last one, past the
// old sizeof (read_struct copies a caller's prefix): when one of these fails, the struct grew —
// keep the old size readable and update the number here and in docs/c-api.md's history.
// edgellm_request_params: 200 bytes up to json_object; the tool fields appended (232), then
// `speculation` (240). edgellm_result: 280 bytes up to content_len, `speculation` appended (328).
static_assert(sizeof(edgellm_request_params) == 240 || sizeof(void*) != 8, "edgellm_request_params changed size");
static_assert(offsetof(edgellm_request_params, speculation) == 232 || sizeof(void*) != 8, "speculation follows the tool fields");
static_assert(offsetof(edgellm_result, speculation) == 280 || sizeof(void*) != 8, "speculation follows edgellm_result's earlier fields");
static_assert(sizeof(edgellm_result) == 328 || sizeof(void*) != 8, "edgellm_result changed size");
static_assert(sizeof(edgellm_spec_params) == 12, "edgellm_spec_params changed size");
static_assert(sizeof(edgellm_spec_stats) == 48 || sizeof(void*) != 8, "edgellm_spec_stats changed size");
static_assert(offsetof(edgellm_request_params, tools) == 200 || sizeof(void*) != 8, "the tool fields follow ABI 5's 200 bytes");
static_assert(sizeof(edgellm_tool_call) == 32 || sizeof(void*) != 8, "edgellm_tool_call changed size");
static_assert(sizeof(edgellm_tool_call_delta) == 32 || sizeof(void*) != 8, "edgellm_tool_call_delta changed size");
// edgellm_token_event: 48 bytes up to index; content and the call deltas appended (80).
static_assert(sizeof(edgellm_token_event) == 80 || sizeof(void*) != 8, "edgellm_token_event changed size");
static_assert(offsetof(edgellm_token_event, content) == 48 || sizeof(void*) != 8, "content follows ABI 5's 48 bytes");
static_assert(sizeof(edgellm_sampling) == 64 || sizeof(void*) != 8, "edgellm_sampling changed size");
// edgellm_message: 24 bytes up to content; the tool fields appended (48).
static_assert(sizeof(edgellm_message) == 48 || sizeof(void*) != 8, "edgellm_message changed size");
static_assert(offsetof(edgellm_message, tool_calls) == 24 || sizeof(void*) != 8,
              "the tool fields follow ABI 5's 24 bytes");
// edgellm_runtime_params: 144 bytes up to recover_ms; role and embed_n_batch appended (152);
// draft_model appended (160).
static_assert(sizeof(edgellm_runtime_params) == 160 || sizeof(void*) != 8, "edgellm_runtime_params changed size");
static_assert(offsetof(edgellm_runtime_params, role) == 144 || sizeof(void*) != 8, "the embedding fields follow ABI 5's 144 bytes");
static_assert(offsetof(edgellm_runtime_params, draft_model) == 152 || sizeof(void*) != 8,
              "draft_model follows the embedding fields' 152 bytes");
static_assert(sizeof(edgellm_embed_params) == 32 || sizeof(void*) != 8, "edgellm_embed_params changed size");
static_assert(sizeof(edgellm_embed_info) == 56 || sizeof(void*) != 8, "edgellm_embed_info changed size");
static_assert(sizeof(edgellm_router_params) == 80 || sizeof(void*) != 8, "edgellm_router_params changed size");
static_assert(sizeof(edgellm_metrics) == 368 || sizeof(void*) != 8, "edgellm_metrics changed size");
// edgellm_classify_result: 40 bytes up to total_ms; cached_tokens appended (48).
static_assert(sizeof(edgellm_classify_result) == 48 || sizeof(void*) != 8, "edgellm_classify_result changed size");
static_assert(offsetof(edgellm_classify_result, cached_tokens) == 40 || sizeof(void*) != 8,
              "cached_tokens follows ABI 5's 40 bytes");
static_assert(sizeof(edgellm_pressure) == 16, "edgellm_pressure changed size");

namespace edgellm::capi {
namespace {

// An optional string field: NULL means none; "" is refused (not read as none: a caller that
// set the field meant something, and an empty id or path names nothing).
std::string optional_string(const char* s, const char* what) {
  if (s == nullptr) return std::string();
  if (*s == '\0') throw Error(ErrorCode::kInvalidArgument, std::string(what) + " is empty (NULL: none)");
  return s;
}

// An element of a caller's message array, read with the caller's struct size (messages[0]'s).
edgellm_message message_at(const edgellm_message* messages, size_t i, uint32_t stride) {
  edgellm_message m{};
  m.struct_size = sizeof m;
  const auto* base = reinterpret_cast<const unsigned char*>(messages) + i * stride;
  std::memcpy(static_cast<void*>(&m), base, std::min<size_t>(stride, sizeof m));
  return m;
}

// An assistant turn's calls, read with the caller's struct size (tool_calls[0]'s), as the
// server's JSON shape. Only the pointers are checked here; the values are check_tool_turns'.
Json to_tool_calls(const edgellm_tool_call* calls, size_t n_calls, const std::string& where) {
  if (calls == nullptr) throw Error(ErrorCode::kInvalidArgument, where + " is NULL but n_tool_calls > 0");
  if (n_calls == 0) throw Error(ErrorCode::kInvalidArgument, where + " is set but n_tool_calls is 0");
  if (n_calls > 4096) throw Error(ErrorCode::kInvalidArgument, where + ": more than 4096 calls");
  uint32_t stride = 0;
  std::memcpy(&stride, calls, sizeof stride);
  if (stride < offsetof(edgellm_tool_call, arguments) + sizeof(const char*)) {
    throw Error(ErrorCode::kInvalidArgument,
                where + "[0].struct_size is " + std::to_string(stride) + " (set it to sizeof(edgellm_tool_call))");
  }
  Json out = Json::array();
  for (size_t i = 0; i < n_calls; ++i) {
    edgellm_tool_call c{};
    std::memcpy(static_cast<void*>(&c), reinterpret_cast<const unsigned char*>(calls) + i * stride,
                std::min<size_t>(stride, sizeof c));
    const std::string at = where + "[" + std::to_string(i) + "]";
    Json f = Json::object();
    f.set("name", Json(required(c.name, (at + ".name").c_str())));
    const std::string arguments = required(c.arguments, (at + ".arguments").c_str());
    // JSON text is UTF-8 (the other fields' bytes are checked with the conversation's).
    if (!utf8::is_valid(arguments)) throw Error(ErrorCode::kInvalidArgument, at + ".arguments is not valid UTF-8");
    f.set("arguments", Json(arguments));
    Json call = Json::object();
    call.set("id", Json(required(c.id, (at + ".id").c_str())));
    call.set("type", Json("function"));
    call.set("function", std::move(f));
    out.push_back(std::move(call));
  }
  return out;
}

}  // namespace

Json to_messages(const edgellm_message* messages, size_t n_messages, bool strict_utf8) {
  if (messages == nullptr) throw Error(ErrorCode::kInvalidArgument, "messages is NULL but n_messages > 0");
  if (n_messages == 0) throw Error(ErrorCode::kInvalidArgument, "n_messages is 0");
  // Bounded before anything is copied: a huge count from a broken caller fails fast.
  if (n_messages > 4096) throw Error(ErrorCode::kInvalidArgument, "messages: more than 4096 messages");
  uint32_t stride = 0;
  std::memcpy(&stride, messages, sizeof stride);
  if (stride < offsetof(edgellm_message, content) + sizeof(const char*)) {
    throw Error(ErrorCode::kInvalidArgument, "messages[0].struct_size is " + std::to_string(stride) +
                                                 " (set it to sizeof(edgellm_message))");
  }
  Json conv = Json::array();
  for (size_t i = 0; i < n_messages; ++i) {
    const edgellm_message m = message_at(messages, i, stride);
    const std::string where = "messages[" + std::to_string(i) + "]";
    const std::string role = required(m.role, (where + ".role").c_str());
    const bool has_calls = m.tool_calls != nullptr || m.n_tool_calls > 0;
    // An assistant turn that only called tools may leave its content NULL (OpenAI's null).
    const std::string content =
        m.content == nullptr && has_calls ? std::string() : required(m.content, (where + ".content").c_str());
    if (strict_utf8) {
      if (!utf8::is_valid(role)) throw Error(ErrorCode::kInvalidArgument, where + ".role is not valid UTF-8");
      if (!utf8::is_valid(content)) throw Error(ErrorCode::kInvalidArgument, where + ".content is not valid UTF-8");
    }
    Json j = Json::object();
    j.set("role", Json(role));
    j.set("content", Json(content));
    // The tool fields in the server's shape (server/openai_request.cpp parse_messages: calls as
    // {id, type, function: {name, arguments text}}, the result's tool_call_id), so that the one
    // normalisation below and the runtime's check_tool_turns treat every face's turns alike.
    if (has_calls) j.set("tool_calls", to_tool_calls(m.tool_calls, m.n_tool_calls, where + ".tool_calls"));
    if (m.tool_call_id != nullptr) j.set("tool_call_id", Json(std::string(m.tool_call_id)));
    conv.push_back(std::move(j));
  }
  // Arguments text -> the object the templates print (text that is not JSON stays a string,
  // which check_tool_turns refuses).
  return normalize_chat_messages(conv);
}

ServiceRequest to_request(const edgellm_request_params& p) {
  ServiceRequest r;
  const int inputs = (p.prompt != nullptr ? 1 : 0) + (p.messages != nullptr || p.n_messages > 0 ? 1 : 0) +
                     (p.tokens != nullptr || p.n_tokens > 0 ? 1 : 0);
  // The runtime words "no input" and "more than one input"; a C caller can also get the pointer
  // and count out of step, which only this face can see.
  if (p.prompt != nullptr) r.prompt = p.prompt;
  if (inputs <= 1 && (p.messages != nullptr || p.n_messages > 0)) {
    // An empty array is the runtime's to refuse (with the words every face gets).
    r.messages = p.n_messages == 0 && p.messages != nullptr ? Json::array() : to_messages(p.messages, p.n_messages, false);
  }
  if (inputs <= 1 && (p.tokens != nullptr || p.n_tokens > 0)) {
    if (p.tokens == nullptr) throw Error(ErrorCode::kInvalidArgument, "tokens is NULL but n_tokens > 0");
    if (p.n_tokens == 0) throw Error(ErrorCode::kInvalidArgument, "n_tokens is 0");
    check_token_count(p.n_tokens);  // before reading the caller's array
    r.tokens.assign(p.tokens, p.tokens + p.n_tokens);
  }
  if (inputs > 1) {
    throw Error(ErrorCode::kInvalidArgument, "more than one input: give exactly one of prompt, messages, tokens");
  }
  r.add_special = p.add_special;
  r.parse_special = p.parse_special;
  const edgellm_sampling s = read_struct(p.sampling, edgellm_sampling_default(), "sampling");
  SamplerParams& sp = r.sampling;
  sp.temperature = s.temperature;
  sp.top_k = s.top_k;
  sp.top_p = s.top_p;
  sp.min_p = s.min_p;
  sp.repeat_penalty = s.repeat_penalty;
  sp.frequency_penalty = s.frequency_penalty;
  sp.presence_penalty = s.presence_penalty;
  sp.penalty_last_n = s.penalty_last_n;
  sp.seed = s.seed;
  if (s.n_logit_bias > 0) {
    if (s.logit_bias == nullptr) throw Error(ErrorCode::kInvalidArgument, "sampling.logit_bias is NULL but n_logit_bias > 0");
    check_logit_bias_count(s.n_logit_bias);  // before reading the caller's array
    for (size_t i = 0; i < s.n_logit_bias; ++i) sp.logit_bias.emplace_back(s.logit_bias[i].token, s.logit_bias[i].bias);
  }
  r.generation.max_tokens = p.max_tokens;
  if (p.n_stop > 0 && p.stop == nullptr) throw Error(ErrorCode::kInvalidArgument, "stop is NULL but n_stop > 0");
  check_stop_count(p.n_stop);  // before reading the caller's array
  for (size_t i = 0; i < p.n_stop; ++i)
    r.generation.stop.push_back(required(p.stop[i], ("stop[" + std::to_string(i) + "]").c_str()));
  r.generation.ignore_eog = p.ignore_eos;
  r.generation.context_shift = p.context_shift;
  r.generation.n_keep = p.n_keep;
  r.deadline_ms = p.deadline_ms;
  // Passed on as it is (the enums' values are the same): one out of range is refused by the
  // Runtime's check (request_limits.h), in the words every face shares.
  static_assert(static_cast<int>(Priority::kInteractive) == EDGELLM_PRIORITY_INTERACTIVE &&
                static_cast<int>(Priority::kBackground) == EDGELLM_PRIORITY_BACKGROUND);
  r.priority = static_cast<Priority>(enum_value(p.priority));
  const int route = enum_value(p.route);
  if (route < EDGELLM_ROUTE_OFF || route > EDGELLM_ROUTE_CLOUD) {
    throw Error(ErrorCode::kInvalidArgument, "route " + std::to_string(route) + " is unknown");
  }
  r.route = static_cast<RouteMode>(route);
  r.session_id = optional_string(p.session_id, "session_id");
  r.session_load_path = optional_string(p.session_load_path, "session_load_path");
  r.session_save_path = optional_string(p.session_save_path, "session_save_path");
  r.grammar_gbnf = optional_string(p.grammar, "grammar");
  r.json_schema = optional_string(p.json_schema, "json_schema");
  r.json_object = p.json_object;
  if (p.speculation != nullptr) {
    const edgellm_spec_params sp = read_struct(p.speculation, edgellm_spec_default_params(), "speculation");
    const int mode = enum_value(sp.mode);
    if (mode < EDGELLM_SPEC_OFF || mode > EDGELLM_SPEC_DRAFT) {
      throw Error(ErrorCode::kInvalidArgument, "speculation.mode " + std::to_string(mode) + " is unknown");
    }
    r.generation.speculation.mode = static_cast<SpeculationMode>(mode);
    r.generation.speculation.draft_max = sp.draft_max;  // checked with the mode by the service at submit
  }

  if (p.on_token != nullptr) {
    r.on_token = [fn = p.on_token, user = p.user_data](const TokenEvent& ev) {
      edgellm_token_event e{};
      e.struct_size = sizeof e;
      e.id = ev.id;
      e.token = ev.token;
      // The view points into a std::string that outlives the call, so it is NUL-terminated.
      e.text = ev.text.data() != nullptr ? ev.text.data() : "";
      e.text_len = ev.text.size();
      e.index = ev.index;
      e.content = e.text;  // no tools: all of it is content (edgellm_submit replaces this callback for tools)
      e.content_len = e.text_len;
      return fn(&e, user);
    };
  }
  return r;
}

ToolRequest to_tool_request(const edgellm_request_params& p, const ServiceRequest& r) {
  ToolRequest t;
  const std::string text = optional_string(p.tools, "tools");
  if (!text.empty()) {
    if (text.size() > limits::kMaxGrammarBytes) {
      throw Error(ErrorCode::kInvalidArgument, "tools: longer than " + std::to_string(limits::kMaxGrammarBytes) + " bytes");
    }
    try {
      t.tools = Json::parse(text);
    } catch (const Error& e) {
      throw Error(ErrorCode::kInvalidArgument, std::string("tools: not JSON (") + e.what() + ")");
    }
    check_tools(t.tools);
    require(r.messages.is_array(), ErrorCode::kInvalidArgument,
            "tools: tool calls are a chat feature: give the request as messages");
  }
  switch (enum_value(p.tool_choice)) {
    case EDGELLM_TOOL_CHOICE_AUTO: t.choice.kind = ToolChoiceKind::kAuto; break;
    case EDGELLM_TOOL_CHOICE_NONE: t.choice.kind = ToolChoiceKind::kNone; break;
    case EDGELLM_TOOL_CHOICE_REQUIRED: t.choice.kind = ToolChoiceKind::kRequired; break;
    case EDGELLM_TOOL_CHOICE_FUNCTION: t.choice.kind = ToolChoiceKind::kFunction; break;
    default:
      throw Error(ErrorCode::kInvalidArgument, "tool_choice " + std::to_string(enum_value(p.tool_choice)) + " is unknown");
  }
  if (t.choice.kind == ToolChoiceKind::kFunction) {
    require(p.tool_choice_name != nullptr && *p.tool_choice_name != '\0', ErrorCode::kInvalidArgument,
            "tool_choice_name: tool_choice FUNCTION needs the function's name");
    t.choice.function = p.tool_choice_name;
  } else {
    require(p.tool_choice_name == nullptr, ErrorCode::kInvalidArgument,
            "tool_choice_name: set, but tool_choice is not FUNCTION");
  }
  t.parallel = p.parallel_tool_calls;
  check_tool_choice(t);
  return t;
}

namespace {

// Delivers a token event whose text the call parser split (`parsed`: content and call deltas).
bool deliver_parsed(edgellm_token_callback fn, void* user, edgellm_token_event& e, const ToolCallEvents& parsed) {
  std::vector<edgellm_tool_call_delta> deltas;
  deltas.reserve(parsed.calls.size());
  for (const ToolCallDelta& d : parsed.calls) {
    deltas.push_back(edgellm_tool_call_delta{sizeof(edgellm_tool_call_delta), d.index, d.id.c_str(), d.name.c_str(),
                                             d.arguments.c_str()});
  }
  e.content = parsed.content.c_str();
  e.content_len = parsed.content.size();
  e.tool_call_deltas = deltas.empty() ? nullptr : deltas.data();
  e.n_tool_call_deltas = deltas.size();
  return fn(&e, user);
}

}  // namespace

std::function<bool(const TokenEvent&)> tool_token_callback(edgellm_token_callback fn, void* user,
                                                           std::shared_ptr<ToolStream> stream) {
  return [fn, user, stream = std::move(stream)](const TokenEvent& ev) {
    edgellm_token_event e{};
    e.struct_size = sizeof e;
    e.id = ev.id;
    e.token = ev.token;
    e.text = ev.text.data() != nullptr ? ev.text.data() : "";
    e.text_len = ev.text.size();
    e.index = ev.index;
    stream->next_index = ev.index + 1;
    return deliver_parsed(fn, user, e, stream->parser.push(ev.text));
  };
}

std::function<void(RequestResult&)> finish_callback(edgellm_finish_callback fn, void* user,
                                                    std::optional<ToolCallFormat> tools,
                                                    std::shared_ptr<ToolStream> stream,
                                                    edgellm_token_callback token_fn) {
  return [fn, user, tools, stream, token_fn](RequestResult& res) {
    // A streamed reply with tools: what the parser still holds goes out as a last token event
    // (token -1) before on_finish, and its calls are the result's (the ids the deltas gave).
    if (stream) {
      const ToolCallEvents rest = stream->parser.finish();
      if (!rest.content.empty() || !rest.calls.empty()) {
        edgellm_token_event e{};
        e.struct_size = sizeof e;
        e.id = res.id;
        e.token = -1;
        e.text = "";
        e.index = stream->next_index;  // after every event of the reply
        (void)deliver_parsed(token_fn, user, e, rest);
      }
    }
    if (fn == nullptr) return;
    // The reply's calls (a request with active tools): the stream's, or parsed as the server
    // parses a whole reply.
    std::optional<ToolCallParser> parser;
    const ToolCallParser* parsed = stream ? &stream->parser : nullptr;
    std::vector<edgellm_tool_call> calls;
    if (tools && !stream && res.finish_reason != FinishReason::kError) {
      parser.emplace(*tools);
      parser->push(res.text);
      parser->finish();
      parsed = &*parser;
    }
    if (parsed != nullptr && res.finish_reason != FinishReason::kError) {
      for (const ToolCall& c : parsed->tool_calls()) {
        calls.push_back(edgellm_tool_call{sizeof(edgellm_tool_call), c.id.c_str(), c.name.c_str(), c.arguments.c_str()});
      }
    }
    const std::string& content =
        parsed != nullptr && res.finish_reason != FinishReason::kError ? parsed->content() : res.text;
    edgellm_result out{};
    out.struct_size = sizeof out;
    out.id = res.id;
    out.finish_reason = ends_in_tool_calls(!calls.empty(), res.finish_reason)
                            ? EDGELLM_FINISH_TOOL_CALLS
                            : static_cast<edgellm_finish_reason>(static_cast<int>(res.finish_reason));
    out.status = res.finish_reason == FinishReason::kError ? status_of(res.error_code) : EDGELLM_OK;
    out.error_message = res.error.c_str();
    out.text = res.text.c_str();
    out.text_len = res.text.size();
    out.stop_string = res.stop_string.c_str();
    out.model_version = res.model_version.c_str();
    const RequestStats& st = res.stats;
    edgellm_request_stats& os = out.stats;
    os.struct_size = sizeof os;
    os.queue_ms = st.queue_ms;
    os.ttft_ms = st.ttft_ms;
    os.prefill_ms = st.prefill_ms;
    os.decode_ms = st.decode_ms;
    os.total_ms = st.total_ms;
    os.prompt_tokens = st.prompt_tokens;
    os.cached_tokens = st.cached_tokens;
    os.completion_tokens = st.completion_tokens;
    os.prefill_tokens_per_second = st.prefill_tokens_per_second;
    os.decode_tokens_per_second = st.decode_tokens_per_second;
    os.kv_blocks = st.kv_blocks;
    os.peak_rss_bytes = st.peak_rss_bytes;
    os.sanitized_chars = st.sanitized_chars;
    edgellm_route_info& ri = out.route;
    ri.struct_size = sizeof ri;
    ri.route = res.route.route.c_str();
    ri.reason = res.route.reason.c_str();
    ri.tier = res.route.tier.c_str();
    ri.score = res.route.score;
    ri.mean_p = res.route.mean_p;
    ri.min_p = res.route.min_p;
    ri.latency_ms = res.route.latency_ms;
    ri.retry_in_cloud = res.route.retry_in_cloud;
    out.session_stored = res.session_stored;
    out.session_save_status = res.session_save_failed ? status_of(res.session_save_code) : EDGELLM_OK;
    out.tool_calls = calls.empty() ? nullptr : calls.data();
    out.n_tool_calls = calls.size();
    out.content = content.c_str();
    out.content_len = content.size();
    const SpeculationStats& sp = st.speculation;
    edgellm_spec_stats& os2 = out.speculation;
    os2.struct_size = sizeof os2;
    os2.drafted = sp.drafted;
    os2.accepted = sp.accepted;
    os2.forwards = sp.forwards;
    os2.verify_forwards = sp.verify_forwards;
    os2.forward_tokens = sp.forward_tokens;
    os2.acceptance_rate = sp.acceptance_rate();
    os2.tokens_per_forward = sp.tokens_per_forward();
    os2.off_reason = st.speculation_off_reason.c_str();
    fn(&out, user);
  };
}

}  // namespace edgellm::capi

extern "C" {

edgellm_sampling edgellm_sampling_default(void) {
  edgellm_sampling s{};
  const SamplerParams d;
  s.struct_size = sizeof s;
  s.temperature = d.temperature;
  s.top_k = d.top_k;
  s.top_p = d.top_p;
  s.min_p = d.min_p;
  s.repeat_penalty = d.repeat_penalty;
  s.frequency_penalty = d.frequency_penalty;
  s.presence_penalty = d.presence_penalty;
  s.penalty_last_n = d.penalty_last_n;
  s.seed = d.seed;
  s.logit_bias = nullptr;
  s.n_logit_bias = 0;
  return s;
}

edgellm_request_params edgellm_request_default_params(void) {
  edgellm_request_params p{};
  const ServiceRequest d;
  p.struct_size = sizeof p;
  p.add_special = d.add_special;
  p.parse_special = d.parse_special;
  p.sampling = nullptr;
  p.max_tokens = d.generation.max_tokens;
  p.ignore_eos = d.generation.ignore_eog;
  p.deadline_ms = d.deadline_ms;
  p.priority = EDGELLM_PRIORITY_INTERACTIVE;
  p.context_shift = d.generation.context_shift;
  p.n_keep = d.generation.n_keep;
  p.route = EDGELLM_ROUTE_OFF;
  p.tool_choice = EDGELLM_TOOL_CHOICE_AUTO;
  p.parallel_tool_calls = true;
  p.speculation = nullptr;
  return p;
}

edgellm_spec_params edgellm_spec_default_params(void) {
  edgellm_spec_params p{};
  const SpeculationParams d;
  p.struct_size = sizeof p;
  p.mode = EDGELLM_SPEC_OFF;
  p.draft_max = d.draft_max;
  return p;
}

edgellm_status edgellm_submit(edgellm_runtime* runtime, const edgellm_request_params* params,
                              edgellm_request_id* out_id) {
  if (out_id != nullptr) *out_id = 0;
  return guard([&] {
    Runtime& rt = capi::runtime_of(runtime);
    if (params == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "params is NULL");
    if (out_id == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "out_id is NULL");
    const edgellm_request_params p = capi::read_struct(params, edgellm_request_default_params(), "params");
    ServiceRequest r = capi::to_request(p);
    const ToolRequest tools = capi::to_tool_request(p, r);
    std::optional<ToolCallFormat> format;  // set: the reply is parsed into content and calls
    if (tools.active()) {
      // The serving model's template decides how the tools are rendered and how calls are
      // written (a swap before the submit below serves it with the new model all the same, as
      // the server's requests).
      const std::shared_ptr<InferenceService> svc = rt.service();
      if (svc == nullptr) return fail(EDGELLM_ERR_SHUT_DOWN, "the runtime is shutting down");
      format = prepare_tool_request(svc->chat_template(), tools, r);
    }
    // A streamed request with tools: its token events carry the parser's content and call
    // deltas, as the server streams delta.tool_calls (one parser per request, fed on the
    // scheduler thread by the token callback, finished by the finish callback after it).
    std::shared_ptr<capi::ToolStream> stream;
    if (format && p.on_token != nullptr) {
      stream = std::make_shared<capi::ToolStream>(*format);
      r.on_token = capi::tool_token_callback(p.on_token, p.user_data, stream);
    }
    if (p.on_finish != nullptr || stream) {
      r.on_finish = capi::finish_callback(p.on_finish, p.user_data, format, stream, p.on_token);
    }
    *out_id = rt.submit(std::move(r)).id;
    return EDGELLM_OK;
  });
}

edgellm_status edgellm_cancel(edgellm_runtime* runtime, edgellm_request_id id) {
  return guard([&] {
    if (!capi::runtime_of(runtime).cancel(id)) {
      return fail(EDGELLM_ERR_NOT_FOUND, "no waiting or running request has id " + std::to_string(id));
    }
    return EDGELLM_OK;
  });
}

}  // extern "C"
