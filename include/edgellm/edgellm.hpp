// EdgeLLM C++ wrapper: RAII and exceptions over the C ABI of edgellm.h, header-only, C++17.
//
// It uses nothing but the functions of edgellm.h, so a program that includes it still links
// only against libedgellm.so (-ledgellm) and depends on no C++ ABI of the library: the classes
// here are compiled into the program, with its compiler and its standard library. Every function
// of edgellm.h has a counterpart here (docs/c-api.md, "The C++ wrapper", lists them).
//
//   auto rt = edgellm::cpp::Runtime::open("model.gguf");
//   rt.submit(edgellm::cpp::Request::from_prompt("Once upon a time").with_max_tokens(64),
//             [](const edgellm_token_event& ev) { fwrite(ev.text, 1, ev.text_len, stdout); return true; },
//             [](const edgellm_result& r) { /* exactly once per accepted request */ });
//
// Errors
//   Every failed call throws edgellm::cpp::Error, whose status() is the edgellm_status and whose
//   what() names the call, the status and edgellm_last_error(). A failed call changes nothing
//   (as in the C ABI). Where "not there" is an ordinary answer rather than a failure, the method
//   says so in its return type instead of throwing: cancel() and delete_session() return false,
//   export_session() an empty optional, save_session_file() false. The destructor never throws
//   (see ~Runtime).
//
// Threads (the rules of edgellm.h)
//   A runtime calls back on its own threads: the scheduler thread (on_token, on_finish of local
//   requests, trim / warm-up completions) and the router thread (routed answers and the cloud
//   transport). The library holds none of its locks while it calls back, so a callback may call
//   any method of its Runtime except close(), the destructor, move assignment, swap_model() and
//   reload_registry() (they would wait for the runtime's own threads, which are the caller: the
//   C ABI answers EDGELLM_ERR_WRONG_THREAD, thrown here as Error). Callbacks hold up every
//   running request: copy what you need and return. The methods of one Runtime may be called
//   from any number of threads at once, except that close(), the destructor and moving must not
//   overlap any other call on it. The free functions (registry, plan, pack, log) may be called
//   from any thread.
//
// Callbacks and exceptions
//   No exception crosses into the C library. An exception thrown by on_token is caught and
//   cancels the request (finish reason CANCELLED, as if on_token had returned false); one thrown
//   by on_finish, by a trim / warm-up callback or by the cloud transport is caught and dropped
//   (a transport that throws before it answered its call completes the call as failed: see
//   CloudCall). The exception object itself is lost: catch inside the callback to keep it.
//
// Lifetimes
//   A Request's strings are read only during submit() (the C ABI copies every input). The
//   callbacks given to submit() (and whatever they capture) live in a heap block owned by the
//   library's request: it is destroyed on the thread that delivers on_finish right after
//   on_finish returns, which the C ABI guarantees happens exactly once per accepted request (also
//   when the runtime is destroyed with the request in flight). A rejected submit destroys it
//   before it throws. Pointers inside edgellm_token_event and edgellm_result are valid only during
//   the callback. A router's transport function lives until the Runtime is closed: the library
//   may still call a replaced transport for requests submitted before set_router replaced it.
#ifndef EDGELLM_EDGELLM_HPP
#define EDGELLM_EDGELLM_HPP

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "edgellm.h"

namespace edgellm::cpp {

// A failed call: the C status and a message (the call, the status name, edgellm_last_error()).
class Error : public std::runtime_error {
 public:
  Error(edgellm_status status, const std::string& message) : std::runtime_error(message), status_(status) {}
  edgellm_status status() const noexcept { return status_; }

 private:
  edgellm_status status_;
};

// The library's version, "MAJOR.MINOR.PATCH".
inline std::string version() { return edgellm_version(); }

// True when the library loaded at run time has the signatures and struct layouts this header was
// compiled with. Runtime::open checks it, so a mismatch is an Error instead of memory corruption.
inline bool abi_compatible() noexcept { return edgellm_abi_version() == static_cast<uint32_t>(EDGELLM_ABI_VERSION); }

namespace detail {

// Throws the Error of a failed call. The message is copied at once: edgellm_last_error() is
// valid only until the next library call on this thread, and destructors that run while the
// exception propagates may make such calls.
[[noreturn]] inline void throw_status(edgellm_status status, const char* call) {
  std::string message = std::string(call) + " failed (" + edgellm_status_name(status) + ")";
  const char* last = edgellm_last_error();
  if (last != nullptr && *last != '\0') {
    message += ": ";
    message += last;
  }
  throw Error(status, message);
}

inline void check(edgellm_status status, const char* call) {
  if (status != EDGELLM_OK) throw_status(status, call);
}

// The C ABI takes NUL-terminated strings: a std::string with a NUL inside would be cut short
// silently, so it is refused instead (the same status the library gives bad text).
inline void check_no_nul(std::string_view s, const char* what) {
  if (s.find('\0') != std::string_view::npos) {
    throw Error(EDGELLM_ERR_INVALID_ARGUMENT, std::string(what) + " contains a NUL byte (the C ABI takes C strings)");
  }
}

// A C string for an optional argument: NULL when absent.
inline const char* c_str_or_null(const std::optional<std::string>& s, const char* what) {
  if (!s) return nullptr;
  check_no_nul(*s, what);
  return s->c_str();
}

// The caller-owned-buffer convention: ask the size with capacity 0, allocate, fill.
// fill(buf, capacity, &length) -> status. Output that can grow between the two calls (metrics
// change while the scheduler runs) gives BUFFER_TOO_SMALL again: ask again with headroom. The
// bound only stops a pathological endless race; in practice the second attempt fits. `nul`: the
// library writes a NUL after the output (text), so the buffer needs one byte more. Only for
// functions without side effects (each attempt calls the function again).
template <typename Fill>
std::string read_output(const char* call, bool nul, Fill fill) {
  size_t length = 0;
  edgellm_status status = fill(nullptr, 0, &length);
  if (status == EDGELLM_OK) return std::string();  // nothing to write (an empty byte output)
  if (status != EDGELLM_ERR_BUFFER_TOO_SMALL) throw_status(status, call);
  std::string out;
  const size_t extra = nul ? 1 : 0;
  for (int attempt = 0; attempt < 8; ++attempt) {
    out.resize(length + extra + (attempt == 0 ? 0 : length / 4 + 256));
    status = fill(out.data(), out.size(), &length);
    if (status == EDGELLM_OK) {
      out.resize(length);  // drop the NUL and the headroom
      return out;
    }
    if (status != EDGELLM_ERR_BUFFER_TOO_SMALL) throw_status(status, call);
  }
  throw Error(EDGELLM_ERR_INTERNAL, std::string(call) + ": the output kept growing faster than the buffer");
}

template <typename Fill>
std::string read_text(const char* call, Fill fill) {
  return read_output(call, true, fill);
}

// What submit() hands the library as user_data: the caller's two callbacks. Owned by the
// request from an accepted submit to the end of its on_finish.
struct RequestCallbacks {
  std::function<bool(const edgellm_token_event&)> on_token;
  std::function<void(const edgellm_result&)> on_finish;
};

// C function pointers with C++ linkage: every compiler EdgeLLM supports calls them like the C
// types they convert to. noexcept because nothing may unwind into the library.
inline bool token_trampoline(const edgellm_token_event* event, void* user_data) noexcept {
  try {
    return static_cast<RequestCallbacks*>(user_data)->on_token(*event);
  } catch (...) {
    return false;  // the documented way to say "cancel": the request ends CANCELLED
  }
}

inline void finish_trampoline(const edgellm_result* result, void* user_data) noexcept {
  // Owned from here: freed however on_finish ends. This is the last call for the request, so
  // nothing else can use the block afterwards.
  const std::unique_ptr<RequestCallbacks> callbacks(static_cast<RequestCallbacks*>(user_data));
  if (!callbacks->on_finish) return;
  try {
    callbacks->on_finish(*result);
  } catch (...) {
    // Nothing to report to: the request has ended either way.
  }
}

// The trim and warm-up completions run exactly once per accepted call (also on shutdown), so
// they own their block the same way.
inline void trim_trampoline(uint64_t bytes_released, void* user_data) noexcept {
  const std::unique_ptr<std::function<void(uint64_t)>> done(static_cast<std::function<void(uint64_t)>*>(user_data));
  try {
    (*done)(bytes_released);
  } catch (...) {
  }
}

inline void warmup_trampoline(bool ran, const char* reason, void* user_data) noexcept {
  using Fn = std::function<void(bool, std::string)>;
  const std::unique_ptr<Fn> done(static_cast<Fn*>(user_data));
  try {
    (*done)(ran, std::string(reason != nullptr ? reason : ""));
  } catch (...) {
  }
}

}  // namespace detail

// ============================================================================== process-wide

// Sends the library's log lines at min_level and above to fn (every runtime of the process; any
// thread, concurrently). An empty fn restores the default (warnings and errors on stderr). As
// with the C function, a call in flight may still reach the previous handler, so handlers are
// kept for the life of the process (a few bytes per replacement: install one at start-up). An
// exception thrown by fn is dropped.
inline void set_log_handler(std::function<void(edgellm_log_level, std::string_view)> fn,
                            edgellm_log_level min_level = EDGELLM_LOG_WARN) {
  using Fn = std::function<void(edgellm_log_level, std::string_view)>;
  // Kept for the life of the process (see above), reachable from here (not a leak to a leak
  // checker) and never destroyed at exit (a library thread may still log then).
  struct Kept {
    std::mutex mutex;
    std::vector<std::unique_ptr<Fn>> handlers;
  };
  static Kept* const kept_handlers = new Kept();
  if (!fn) {
    edgellm_set_log_callback(nullptr, nullptr, min_level);
    return;
  }
  Fn* kept = nullptr;
  {
    std::lock_guard<std::mutex> lock(kept_handlers->mutex);
    kept_handlers->handlers.push_back(std::make_unique<Fn>(std::move(fn)));
    kept = kept_handlers->handlers.back().get();
  }
  edgellm_set_log_callback(
      [](edgellm_log_level level, const char* message, void* user) {
        try {
          (*static_cast<Fn*>(user))(level, message != nullptr ? std::string_view(message) : std::string_view());
        } catch (...) {
        }
      },
      kept, min_level);
}

// ============================================================================== requests

// One tool call: of a result (edgellm_tool_call, copied: tool_calls(result) below), or of an
// earlier assistant turn in a follow-up request (Message::tool_calls).
struct ToolCall {
  std::string id;         // "call_" + 24 letters and digits
  std::string name;       // one of the request's tools
  std::string arguments;  // the arguments object as JSON text
};

// One turn of a chat (edgellm_message). {"user", "text"} and the (role, content) pairs of
// earlier versions convert implicitly. A tool-call follow-up (docs/c-api.md "Tool calls"): the
// assistant turn that called tools carries its calls (Message::calls(tool_calls(result),
// content(result))), and each tool turn the id of the call whose result it is
// (Message::tool_result(id, text)); submit and apply_template refuse a tool turn whose id no
// earlier call has, and arguments that are not a JSON object, with INVALID_ARGUMENT.
struct Message {
  std::string role;  // system, user, assistant, tool
  std::string content;
  std::vector<ToolCall> tool_calls;         // an assistant turn's calls; empty: none
  std::optional<std::string> tool_call_id;  // a tool turn: the call it answers

  Message() = default;
  Message(std::string role_, std::string content_) : role(std::move(role_)), content(std::move(content_)) {}
  Message(const std::pair<std::string, std::string>& m) : role(m.first), content(m.second) {}  // NOLINT: implicit
  static Message calls(std::vector<ToolCall> made, std::string text = std::string()) {
    Message m("assistant", std::move(text));
    m.tool_calls = std::move(made);
    return m;
  }
  static Message tool_result(std::string call_id, std::string result) {
    Message m("tool", std::move(result));
    m.tool_call_id = std::move(call_id);
    return m;
  }
};

namespace detail {

// Messages as C messages pointing into them (and into `calls`, one array per message that made
// calls): valid while `messages` and this object live.
struct CMessages {
  std::vector<edgellm_message> messages;
  std::vector<std::vector<edgellm_tool_call>> calls;

  explicit CMessages(const std::vector<Message>& chat) {
    messages.reserve(chat.size());
    calls.reserve(chat.size());  // no reallocation: the messages point into its elements
    for (const Message& m : chat) {
      check_no_nul(m.role, "a message role");
      check_no_nul(m.content, "a message content");
      edgellm_message c{};
      c.struct_size = sizeof(edgellm_message);
      c.role = m.role.c_str();
      c.content = m.content.c_str();
      if (!m.tool_calls.empty()) {
        std::vector<edgellm_tool_call>& made = calls.emplace_back();
        for (const ToolCall& t : m.tool_calls) {
          check_no_nul(t.id, "a tool call id");
          check_no_nul(t.name, "a tool call name");
          check_no_nul(t.arguments, "a tool call's arguments");
          edgellm_tool_call e{};
          e.struct_size = sizeof(edgellm_tool_call);
          e.id = t.id.c_str();
          e.name = t.name.c_str();
          e.arguments = t.arguments.c_str();
          made.push_back(e);
        }
        c.tool_calls = made.data();
        c.n_tool_calls = made.size();
      }
      if (m.tool_call_id) {
        check_no_nul(*m.tool_call_id, "a tool_call_id");
        c.tool_call_id = m.tool_call_id->c_str();
      }
      messages.push_back(c);
    }
  }
};

// The (role, content) pairs of earlier versions. A template, so that a braced list
// ({{"user", "hi"}}) picks the std::vector<Message> overloads without ambiguity.
using RoleContent = std::pair<std::string, std::string>;
template <typename P>
using IfRoleContent = std::enable_if_t<std::is_same_v<P, RoleContent>, int>;
template <typename P>
std::vector<Message> to_message_list(const std::vector<P>& pairs) {
  return std::vector<Message>(pairs.begin(), pairs.end());
}

}  // namespace detail

// One request, as plain values. Set exactly one input: a non-empty prompt, messages or tokens
// (none or several is INVALID_ARGUMENT from submit; an empty prompt counts as "not set").
// Defaults are the C ABI's (edgellm_request_default_params(), edgellm_sampling_default()), read
// at run time: a default the library changes changes here too. The fields are public; the with_*
// methods are shorthands that return *this for chaining.
struct Request {
  std::string prompt;                                          // raw UTF-8 text
  std::vector<Message> messages;  // a chat: {role, content} turns (Message: tool calls, tool results)
  std::vector<int32_t> tokens;                                 // token ids, used as they are
  bool add_special;         // raw prompt: add BOS / EOS as the model asks; default true
  bool parse_special;       // raw prompt: control-token text becomes the control token; default false
  // Temperature 0.8, top_k 40, top_p 0.95, min_p 0.05, seed 0 by default. Its logit_bias /
  // n_logit_bias are ignored: submit() points them at `logit_bias` below.
  edgellm_sampling sampling;
  std::vector<edgellm_logit_bias> logit_bias;  // (token, bias) added to the logits; at most 4096
  int32_t max_tokens;       // < 0: until a stop or the context is full; 0: prefill only; default 256
  std::vector<std::string> stop;  // at most 16, of 1 to 256 bytes; never part of the output
  bool ignore_eos;          // never sample end-of-generation tokens (llama.cpp's ignore_eos); default false
  int64_t deadline_ms;      // from submit, queue wait included; <= 0: none; default 15000
  edgellm_priority priority;  // default INTERACTIVE
  bool context_shift;       // endless stream: shift the window when the context is full; default false
  int32_t n_keep;           // with context_shift: positions never dropped; -1 = the prompt; default 4
  // Sessions (docs/sessions.md): continue from / keep under an id of the runtime's store, or
  // continue from / save to a file. Not session_id together with session_load_path.
  std::optional<std::string> session_id;
  std::optional<std::string> session_load_path;
  std::optional<std::string> session_save_path;
  edgellm_route route;      // the router (Runtime::set_router); default OFF
  // Constrained output (docs/structured-output.md), at most one: GBNF text, a JSON Schema as JSON
  // text, or any JSON object.
  std::optional<std::string> grammar;
  std::optional<std::string> json_schema;
  bool json_object = false;
  // Tool calling (docs/c-api.md, "Tool calls"; a chat request): `tools` is JSON text, an array of
  // OpenAI function tools; tool_choice AUTO (default), NONE, REQUIRED, or FUNCTION with
  // tool_choice_name; parallel_tool_calls (default true) allows more than one call in a reply.
  // The result's calls: tool_calls(result) and content(result) below; finish TOOL_CALLS.
  std::optional<std::string> tools;
  edgellm_tool_choice tool_choice;
  std::optional<std::string> tool_choice_name;
  bool parallel_tool_calls;

  Request() : Request(edgellm_request_default_params()) {}

  static Request from_prompt(std::string text) { return Request().with_prompt(std::move(text)); }
  static Request from_messages(std::vector<Message> chat) { return Request().with_messages(std::move(chat)); }
  template <typename P, detail::IfRoleContent<P> = 0>
  static Request from_messages(const std::vector<P>& chat) {
    return Request().with_messages(detail::to_message_list(chat));
  }
  static Request from_tokens(std::vector<int32_t> ids) { return Request().with_tokens(std::move(ids)); }

  Request& with_prompt(std::string text) {
    prompt = std::move(text);
    return *this;
  }
  Request& with_messages(std::vector<Message> chat) {
    messages = std::move(chat);
    return *this;
  }
  template <typename P, detail::IfRoleContent<P> = 0>
  Request& with_messages(const std::vector<P>& chat) {
    messages = detail::to_message_list(chat);
    return *this;
  }
  Request& with_tokens(std::vector<int32_t> ids) {
    tokens = std::move(ids);
    return *this;
  }
  Request& with_sampling(const edgellm_sampling& s) {
    sampling = s;
    return *this;
  }
  // Temperature 0: always the most likely token (deterministic for a given prompt).
  Request& greedy() {
    sampling.temperature = 0.0f;
    return *this;
  }
  Request& with_logit_bias(int32_t token, float bias) {
    logit_bias.push_back(edgellm_logit_bias{token, bias});
    return *this;
  }
  Request& with_max_tokens(int32_t n) {
    max_tokens = n;
    return *this;
  }
  Request& with_stop(std::string s) {
    stop.push_back(std::move(s));
    return *this;
  }
  Request& with_ignore_eos(bool on = true) {
    ignore_eos = on;
    return *this;
  }
  Request& with_deadline_ms(int64_t ms) {
    deadline_ms = ms;
    return *this;
  }
  Request& with_priority(edgellm_priority p) {
    priority = p;
    return *this;
  }
  // Endless stream (docs/context-shift.md): keep the first `keep` positions, slide the rest.
  Request& with_context_shift(int32_t keep = 4) {
    context_shift = true;
    n_keep = keep;
    return *this;
  }
  Request& with_session_id(std::string id) {
    session_id = std::move(id);
    return *this;
  }
  Request& with_session_load_path(std::string path) {
    session_load_path = std::move(path);
    return *this;
  }
  Request& with_session_save_path(std::string path) {
    session_save_path = std::move(path);
    return *this;
  }
  Request& with_route(edgellm_route r) {
    route = r;
    return *this;
  }
  Request& with_grammar(std::string gbnf) {
    grammar = std::move(gbnf);
    return *this;
  }
  Request& with_json_schema(std::string schema_json) {
    json_schema = std::move(schema_json);
    return *this;
  }
  Request& with_json_object(bool on = true) {
    json_object = on;
    return *this;
  }
  Request& with_tools(std::string tools_json, edgellm_tool_choice choice = EDGELLM_TOOL_CHOICE_AUTO) {
    tools = std::move(tools_json);
    tool_choice = choice;
    return *this;
  }
  // tool_choice FUNCTION: exactly one call of the tool named `name`.
  Request& with_tool_choice_function(std::string name) {
    tool_choice = EDGELLM_TOOL_CHOICE_FUNCTION;
    tool_choice_name = std::move(name);
    return *this;
  }
  Request& with_parallel_tool_calls(bool on) {
    parallel_tool_calls = on;
    return *this;
  }

 private:
  explicit Request(const edgellm_request_params& d)
      : add_special(d.add_special),
        parse_special(d.parse_special),
        sampling(edgellm_sampling_default()),
        max_tokens(d.max_tokens),
        ignore_eos(d.ignore_eos),
        deadline_ms(d.deadline_ms),
        priority(d.priority),
        context_shift(d.context_shift),
        n_keep(d.n_keep),
        route(d.route),
        tool_choice(d.tool_choice),
        parallel_tool_calls(d.parallel_tool_calls) {}
};

// The calls parsed from a reply of a request with tools, in order (empty without tools, for a
// reply with none, and from a library older than the tool fields). Call it inside on_finish:
// the result's pointers live only during the callback.
inline std::vector<ToolCall> tool_calls(const edgellm_result& result) {
  std::vector<ToolCall> calls;
  if (result.struct_size < offsetof(edgellm_result, n_tool_calls) + sizeof(size_t) || result.n_tool_calls == 0 ||
      result.tool_calls == nullptr) {
    return calls;
  }
  // Elements are tool_calls[0].struct_size apart (a newer library's element may be larger).
  const auto* base = reinterpret_cast<const unsigned char*>(result.tool_calls);
  const size_t stride = result.tool_calls[0].struct_size;
  calls.reserve(result.n_tool_calls);
  for (size_t i = 0; i < result.n_tool_calls; ++i) {
    const auto* c = reinterpret_cast<const edgellm_tool_call*>(base + i * stride);
    calls.push_back({c->id != nullptr ? c->id : "", c->name != nullptr ? c->name : "",
                     c->arguments != nullptr ? c->arguments : ""});
  }
  return calls;
}

// The reply's text outside its tool calls (= the whole text without tools, and from a library
// older than the tool fields). A view into the result: valid during on_finish.
inline std::string_view content(const edgellm_result& result) {
  if (result.struct_size < offsetof(edgellm_result, content_len) + sizeof(size_t) || result.content == nullptr) {
    return std::string_view(result.text, result.text_len);
  }
  return std::string_view(result.content, result.content_len);
}

// ============================================================================== the router

// One call of the router to the cloud (edgellm_cloud_call): the tier ("small" or "large"), the
// model name the body asks for and the body (an OpenAI chat-completions request as JSON). Answer
// it exactly once, from any thread, now or later, also after the Runtime is closed (the answer is
// then dropped): complete() with the HTTP status and body, or fail() with why there is none.
// Move-only; a CloudCall destroyed unanswered fails the call ("the transport dropped the call"),
// so the library never waits for an answer that cannot come.
class CloudCall {
 public:
  CloudCall(edgellm_cloud_call* call, std::string tier, std::string model, std::string body) noexcept
      : call_(call), tier_(std::move(tier)), model_(std::move(model)), body_(std::move(body)) {}
  CloudCall(const CloudCall&) = delete;
  CloudCall& operator=(const CloudCall&) = delete;
  CloudCall(CloudCall&& other) noexcept
      : call_(std::exchange(other.call_, nullptr)),
        tier_(std::move(other.tier_)),
        model_(std::move(other.model_)),
        body_(std::move(other.body_)) {}
  CloudCall& operator=(CloudCall&& other) noexcept {
    if (this != &other) {
      drop();
      call_ = std::exchange(other.call_, nullptr);
      tier_ = std::move(other.tier_);
      model_ = std::move(other.model_);
      body_ = std::move(other.body_);
    }
    return *this;
  }
  ~CloudCall() { drop(); }

  const std::string& tier() const noexcept { return tier_; }
  const std::string& model() const noexcept { return model_; }
  const std::string& body() const noexcept { return body_; }
  bool answered() const noexcept { return call_ == nullptr; }

  // The HTTP answer (any status; the router reads 200 as an answer, anything else as a failed
  // call). Throws Error(INVALID_ARGUMENT) when already answered.
  void complete(int32_t http_status, std::string_view body) {
    detail::check(edgellm_cloud_complete(take(), http_status, body.data(), body.size(), nullptr), "edgellm_cloud_complete");
  }
  // No answer (connection refused, a certificate rejected, ...).
  void fail(const std::string& error) {
    detail::check(edgellm_cloud_complete(take(), 0, nullptr, 0, error.c_str()), "edgellm_cloud_complete");
  }

 private:
  edgellm_cloud_call* take() {
    if (call_ == nullptr) throw Error(EDGELLM_ERR_INVALID_ARGUMENT, "this cloud call was answered already");
    return std::exchange(call_, nullptr);
  }
  void drop() noexcept {
    if (call_ != nullptr) (void)edgellm_cloud_complete(std::exchange(call_, nullptr), 0, nullptr, 0, "the transport dropped the call");
  }

  edgellm_cloud_call* call_;
  std::string tier_, model_, body_;
};

// The router's settings (edgellm_router_params), defaults from edgellm_router_default_params().
// `transport` starts the call and returns (the router thread runs it; do not block there); an
// empty transport means no cloud: routed requests are answered locally.
struct RouterConfig {
  double local_threshold;    // answer locally at a confidence >= this; default 0.85
  double cloud_threshold;    // ask the cloud below this; default 0.6
  bool privacy;              // never call the cloud; default false
  int32_t verbatim_turns;    // user turns sent verbatim, older ones as a local summary; default 3
  int32_t cloud_timeout_ms;  // a call not answered by then counts as failed; default 30000
  bool cloud_on_failure;     // a failed local run (memory, degraded, context full) goes to the cloud; default true
  std::string cloud_model;        // the "small" tier's model name
  std::string cloud_model_large;  // the "large" tier's; empty: no second tier
  int32_t summary_max_tokens;     // the local summary of older turns; default 128
  std::function<void(CloudCall)> transport;

  RouterConfig() : RouterConfig(edgellm_router_default_params()) {}

 private:
  explicit RouterConfig(const edgellm_router_params& d)
      : local_threshold(d.local_threshold),
        cloud_threshold(d.cloud_threshold),
        privacy(d.privacy),
        verbatim_turns(d.verbatim_turns),
        cloud_timeout_ms(d.cloud_timeout_ms),
        cloud_on_failure(d.cloud_on_failure),
        summary_max_tokens(d.summary_max_tokens) {}
};

namespace detail {

inline void transport_trampoline(edgellm_cloud_call* call, const char* tier, const char* model, const char* body,
                                 size_t body_len, void* user_data) noexcept {
  try {
    CloudCall c(call, tier != nullptr ? tier : "", model != nullptr ? model : "",
                std::string(body != nullptr ? body : "", body != nullptr ? body_len : 0));
    (*static_cast<std::function<void(CloudCall)>*>(user_data))(std::move(c));
  } catch (...) {
    // The CloudCall (moved into the transport, or still here) failed the call when it was
    // destroyed during unwinding. A bad_alloc before it existed leaves the call to the router's
    // timeout.
  }
}

}  // namespace detail

// ============================================================================== the runtime

// One runtime (edgellm_runtime): the model, its threads, sessions, the degradation ladder and
// the router. Move-only; an empty Runtime (default-constructed or moved from) answers every call
// with Error(INVALID_ARGUMENT).
class Runtime {
 public:
  using TokenCallback = std::function<bool(const edgellm_token_event&)>;
  using FinishCallback = std::function<void(const edgellm_result&)>;

  Runtime() noexcept = default;

  // Loads the model and starts the runtime. `model` is a GGUF path, or with params.registry_dir a
  // registry name ("NAME" or "NAME@VERSION"). Blocks while the model loads: call it once, off
  // the UI thread. Throws Error (IO, INVALID_FILE, UNSUPPORTED, OUT_OF_MEMORY, INVALID_ARGUMENT
  // for bad parameters; UNSUPPORTED also when the library's ABI version is not this header's).
  static Runtime open(const std::string& model,
                      const edgellm_runtime_params& params = edgellm_runtime_default_params()) {
    if (!abi_compatible()) {
      throw Error(EDGELLM_ERR_UNSUPPORTED, "libedgellm ABI version " + std::to_string(edgellm_abi_version()) +
                                               " does not match the header's " + std::to_string(EDGELLM_ABI_VERSION));
    }
    detail::check_no_nul(model, "model");
    edgellm_runtime* handle = nullptr;
    detail::check(edgellm_runtime_create(model.c_str(), &params, &handle), "edgellm_runtime_create");
    return Runtime(handle);
  }

  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;
  Runtime(Runtime&& other) noexcept
      : handle_(std::exchange(other.handle_, nullptr)), transports_(std::move(other.transports_)) {}
  Runtime& operator=(Runtime&& other) noexcept {
    if (this != &other) {
      destroy_quietly();
      handle_ = std::exchange(other.handle_, nullptr);
      transports_ = std::move(other.transports_);
    }
    return *this;
  }

  // edgellm_runtime_destroy: every waiting and running request gets its on_finish (CANCELLED)
  // before this returns. Never throws. Destroying a Runtime from one of its own callbacks is a
  // bug the C ABI refuses (WRONG_THREAD); a destructor cannot report it, so the runtime is then
  // left running and its memory leaks (ending a thread from itself is impossible). Call close()
  // where that can happen: it throws instead.
  ~Runtime() { destroy_quietly(); }

  // Destroys the runtime now, like the destructor, but reports a failure: Error(WRONG_THREAD)
  // from one of its own callbacks, and the Runtime then stays open. Empty: no-op.
  void close() {
    if (handle_ == nullptr) return;
    detail::check(edgellm_runtime_destroy(handle_), "edgellm_runtime_destroy");
    handle_ = nullptr;
    transports_.reset();  // the library calls no transport any more
  }

  explicit operator bool() const noexcept { return handle_ != nullptr; }
  // The C handle, to mix in C calls. Still owned by this Runtime.
  edgellm_runtime* handle() const noexcept { return handle_; }

  // ---- requests

  // Queues a request and returns its id at once. Afterwards on_token (may be empty) runs for
  // each token event and on_finish (may be empty) exactly once, both on the runtime's threads;
  // on_finish can run before submit() returns. Throws Error and calls neither on failure:
  // status() is BUSY when the waiting queue is full (try again later), INVALID_ARGUMENT for bad
  // contents, IO / INVALID_FILE for a session file that cannot be used, DEGRADED when the ladder
  // refuses new requests, SHUT_DOWN while the runtime is being destroyed. A prompt longer than
  // the context is accepted and ends in on_finish (ERROR, status CONTEXT_FULL).
  edgellm_request_id submit(const Request& request, TokenCallback on_token = {}, FinishCallback on_finish = {}) {
    // Borrowed C views of the request's strings, valid for the duration of the call (the C ABI
    // copies everything before it returns).
    edgellm_request_params p = edgellm_request_default_params();
    if (!request.prompt.empty()) {
      detail::check_no_nul(request.prompt, "prompt");
      p.prompt = request.prompt.c_str();
    }
    const detail::CMessages messages(request.messages);
    if (!messages.messages.empty()) {
      p.messages = messages.messages.data();
      p.n_messages = messages.messages.size();
    }
    if (!request.tokens.empty()) {
      p.tokens = request.tokens.data();
      p.n_tokens = request.tokens.size();
    }
    std::vector<const char*> stop;
    stop.reserve(request.stop.size());
    for (const std::string& s : request.stop) {
      detail::check_no_nul(s, "a stop string");
      stop.push_back(s.c_str());
    }
    p.stop = stop.empty() ? nullptr : stop.data();
    p.n_stop = stop.size();
    edgellm_sampling sampling = request.sampling;
    sampling.struct_size = sizeof(edgellm_sampling);
    sampling.logit_bias = request.logit_bias.empty() ? nullptr : request.logit_bias.data();
    sampling.n_logit_bias = request.logit_bias.size();
    p.sampling = &sampling;
    p.add_special = request.add_special;
    p.parse_special = request.parse_special;
    p.max_tokens = request.max_tokens;
    p.ignore_eos = request.ignore_eos;
    p.deadline_ms = request.deadline_ms;
    p.priority = request.priority;
    p.context_shift = request.context_shift;
    p.n_keep = request.n_keep;
    p.session_id = detail::c_str_or_null(request.session_id, "session_id");
    p.session_load_path = detail::c_str_or_null(request.session_load_path, "session_load_path");
    p.session_save_path = detail::c_str_or_null(request.session_save_path, "session_save_path");
    p.route = request.route;
    p.grammar = detail::c_str_or_null(request.grammar, "grammar");
    p.json_schema = detail::c_str_or_null(request.json_schema, "json_schema");
    p.json_object = request.json_object;
    p.tools = detail::c_str_or_null(request.tools, "tools");
    p.tool_choice = request.tool_choice;
    p.tool_choice_name = detail::c_str_or_null(request.tool_choice_name, "tool_choice_name");
    p.parallel_tool_calls = request.parallel_tool_calls;

    // on_finish always goes through the trampoline, even without a user callback: it is what
    // frees the block.
    const bool has_on_token = static_cast<bool>(on_token);
    auto callbacks = std::make_unique<detail::RequestCallbacks>();
    callbacks->on_token = std::move(on_token);
    callbacks->on_finish = std::move(on_finish);
    p.on_token = has_on_token ? &detail::token_trampoline : nullptr;
    p.on_finish = &detail::finish_trampoline;
    p.user_data = callbacks.get();

    edgellm_request_id id = 0;
    const edgellm_status status = edgellm_submit(handle_, &p, &id);
    if (status != EDGELLM_OK) {
      // Not accepted: no callback will ever run, the block is ours to free. The message is
      // taken before the callbacks' captures are destroyed (their destructors may call in).
      std::string message = std::string("edgellm_submit failed (") + edgellm_status_name(status) + ")";
      const char* last = edgellm_last_error();
      if (last != nullptr && *last != '\0') message += std::string(": ") + last;
      callbacks.reset();
      throw Error(status, message);
    }
    // Accepted: the request owns the block now (on_finish may already have freed it, so it is
    // released without being touched).
    (void)callbacks.release();
    return id;
  }

  // Ends a waiting or running request: its on_finish (CANCELLED, with the text so far) follows.
  // False when no waiting or running request has this id (unknown, or finished already: an
  // ordinary race with the request's own end, not an error).
  bool cancel(edgellm_request_id id) {
    const edgellm_status status = edgellm_cancel(handle_, id);
    if (status == EDGELLM_ERR_NOT_FOUND) return false;
    detail::check(status, "edgellm_cancel");
    return true;
  }

  // No forward pass runs while paused (the step in flight is abandoned and redone on resume);
  // KV memory is kept; cancellations and deadlines still end requests (deadlines keep running).
  void pause() { detail::check(edgellm_pause(handle_), "edgellm_pause"); }
  void resume() { detail::check(edgellm_resume(handle_), "edgellm_resume"); }

  // Releases scratch memory (and cached KV pages when no request holds KV) between two steps.
  // done(bytes released), if given, runs once on the scheduler thread. Returns at once.
  void trim(std::function<void(uint64_t bytes_released)> done = {}) {
    if (!done) {
      detail::check(edgellm_trim(handle_, nullptr, nullptr), "edgellm_trim");
      return;
    }
    auto block = std::make_unique<std::function<void(uint64_t)>>(std::move(done));
    const edgellm_status status = edgellm_trim(handle_, &detail::trim_trampoline, block.get());
    if (status != EDGELLM_OK) detail::throw_status(status, "edgellm_trim");  // block freed on unwind
    (void)block.release();  // the trampoline frees it
  }

  // A short forward pass in the background so the first request is fast. done(ran, reason), if
  // given, runs once on the scheduler thread: ran, or not with the reason it was skipped (low
  // memory, requests already running, shutting down). Deferred while paused. Returns at once.
  void warmup(std::function<void(bool ran, std::string reason)> done = {}) {
    if (!done) {
      detail::check(edgellm_warmup(handle_, nullptr, nullptr), "edgellm_warmup");
      return;
    }
    auto block = std::make_unique<std::function<void(bool, std::string)>>(std::move(done));
    const edgellm_status status = edgellm_warmup(handle_, &detail::warmup_trampoline, block.get());
    if (status != EDGELLM_OK) detail::throw_status(status, "edgellm_warmup");  // block freed on unwind
    (void)block.release();  // the trampoline frees it
  }

  // ---- embeddings and rerank (an embedding runtime: role() == EDGELLM_ROLE_EMBED)

  // The runtime's role, floats per vector (0 on a generation runtime) and whether it reranks.
  struct RoleInfo {
    edgellm_runtime_role role = EDGELLM_ROLE_GENERATE;
    int32_t dims = 0;
    bool can_rerank = false;
  };
  RoleInfo role() const {
    RoleInfo r;
    detail::check(edgellm_runtime_role_get(handle_, &r.role, &r.dims, &r.can_rerank), "edgellm_runtime_role_get");
    return r;
  }

  // What embed() / rerank() return: the rows (one per text in text order; one per token with
  // pooling NONE, text i's tokens[i] rows after text i-1's) or the scores (document order), and
  // what ran.
  struct Embeddings {
    std::vector<float> data;     // rows x dims floats, or one score per document
    int32_t rows = 0;
    int32_t dims = 0;            // 0 for rerank
    edgellm_pooling pooling = EDGELLM_POOLING_NONE;
    std::vector<int32_t> tokens;  // per text / document: tokens run (after truncation)
    int32_t truncated = 0;
    int64_t prompt_tokens = 0;
    double total_ms = 0;
    const float* row(size_t i) const { return data.data() + i * static_cast<size_t>(dims); }
  };

  // Blocks until the vectors are there (edgellm_embed: the queue, BUSY, TIMEOUT, the input
  // policy). Not from one of this runtime's callbacks. Throws Error.
  Embeddings embed(const std::vector<std::string>& texts,
                   const edgellm_embed_params& params = edgellm_embed_default_params()) {
    std::vector<const char*> ptrs;
    ptrs.reserve(texts.size());
    for (const std::string& t : texts) {
      detail::check_no_nul(t, "text");
      ptrs.push_back(t.c_str());
    }
    Embeddings e;
    e.tokens.assign(texts.size(), 0);
    edgellm_embed_info info = edgellm_embed_info_init();
    info.input_tokens = e.tokens.empty() ? nullptr : e.tokens.data();
    size_t n = 0;
    edgellm_status status = edgellm_embed(handle_, ptrs.data(), ptrs.size(), &params, nullptr, 0, &n, nullptr);
    if (status != EDGELLM_ERR_BUFFER_TOO_SMALL) detail::throw_status(status, "edgellm_embed");  // OK is impossible: >= 1 text
    e.data.resize(n);
    status = edgellm_embed(handle_, ptrs.data(), ptrs.size(), &params, e.data.data(), e.data.size(), &n, &info);
    detail::check(status, "edgellm_embed");
    e.data.resize(n);
    e.rows = info.n_rows;
    e.dims = info.dims;
    e.pooling = info.pooling;
    e.truncated = info.truncated;
    e.prompt_tokens = info.prompt_tokens;
    e.total_ms = info.total_ms;
    return e;
  }

  // One score per document for query, in document order (edgellm_rerank: a cross-encoder's
  // logits). Blocks; not from one of this runtime's callbacks. Throws Error.
  Embeddings rerank(const std::string& query, const std::vector<std::string>& documents,
                    const edgellm_embed_params& params = edgellm_embed_default_params()) {
    detail::check_no_nul(query, "query");
    std::vector<const char*> ptrs;
    ptrs.reserve(documents.size());
    for (const std::string& d : documents) {
      detail::check_no_nul(d, "document");
      ptrs.push_back(d.c_str());
    }
    Embeddings e;
    e.data.resize(documents.size());
    e.tokens.assign(documents.size(), 0);
    edgellm_embed_info info = edgellm_embed_info_init();
    info.input_tokens = e.tokens.empty() ? nullptr : e.tokens.data();
    size_t n = 0;
    detail::check(edgellm_rerank(handle_, query.c_str(), ptrs.data(), ptrs.size(), &params, e.data.data(),
                                 e.data.size(), &n, &info),
                  "edgellm_rerank");
    e.rows = info.n_rows;
    e.truncated = info.truncated;
    e.prompt_tokens = info.prompt_tokens;
    e.total_ms = info.total_ms;
    return e;
  }

  // ---- classify (a generation runtime): one of a list of labels for a text

  struct Classification {
    int32_t index = -1;                 // labels[index]
    std::vector<double> probabilities;  // per label, in label order, summing to 1
    std::vector<double> logprobs;       // per label: its tokens' summed log-probability
    std::vector<int32_t> label_tokens;  // per label: its tokens
    int32_t prompt_tokens = 0;
    int32_t cached_tokens = 0;  // of prompt_tokens, from the KV prefix cache (not prefilled)
    double total_ms = 0;
  };

  // edgellm_classify: blocks (one prefill, one forward over the labels); not from one of this
  // runtime's callbacks. Throws Error (INVALID_ARGUMENT for no / repeated / bad labels, ...).
  Classification classify(const std::string& text, const std::vector<std::string>& labels,
                          const edgellm_classify_params& params = edgellm_classify_default_params()) {
    detail::check_no_nul(text, "text");
    std::vector<const char*> ptrs;
    ptrs.reserve(labels.size());
    for (const std::string& l : labels) {
      detail::check_no_nul(l, "label");
      ptrs.push_back(l.c_str());
    }
    static const char* const kNoLabel[1] = {""};  // no label: the library refuses the count
    Classification c;
    c.probabilities.assign(labels.size(), 0);
    c.logprobs.assign(labels.size(), 0);
    c.label_tokens.assign(labels.size(), 0);
    double none = 0;
    edgellm_classify_result r = edgellm_classify_result_init();
    r.logprobs = labels.empty() ? nullptr : c.logprobs.data();
    r.label_tokens = labels.empty() ? nullptr : c.label_tokens.data();
    detail::check(edgellm_classify(handle_, text.c_str(), labels.empty() ? kNoLabel : ptrs.data(), ptrs.size(), &params,
                                   labels.empty() ? &none : c.probabilities.data(), &r),
                  "edgellm_classify");
    c.index = r.index;
    c.prompt_tokens = r.prompt_tokens;
    c.cached_tokens = r.cached_tokens;
    c.total_ms = r.total_ms;
    return c;
  }

  // ---- sessions (docs/sessions.md): the conversations the runtime keeps by id

  // Checks bytes against the serving model and keeps them under id (replacing one there).
  // Returns the positions the session holds. Throws INVALID_FILE (truncated, corrupted),
  // INVALID_ARGUMENT (another model, KV type or shape; a bad id; sessions off; too large).
  int32_t import_session(const std::string& id, std::string_view bytes) {
    detail::check_no_nul(id, "id");
    int32_t positions = 0;
    detail::check(edgellm_session_import(handle_, id.c_str(), bytes.data(), bytes.size(), &positions),
                  "edgellm_session_import");
    return positions;
  }
  // The bytes kept under id (the session file format); empty when none is kept.
  std::optional<std::string> export_session(const std::string& id) const {
    detail::check_no_nul(id, "id");
    try {
      return detail::read_output("edgellm_session_export", false, [&](char* buf, size_t capacity, size_t* length) {
        return edgellm_session_export(handle_, id.c_str(), buf, capacity, length);
      });
    } catch (const Error& e) {
      if (e.status() == EDGELLM_ERR_NOT_FOUND) return std::nullopt;
      throw;
    }
  }
  // False when no session is kept under id.
  bool delete_session(const std::string& id) {
    detail::check_no_nul(id, "id");
    const edgellm_status status = edgellm_session_delete(handle_, id.c_str());
    if (status == EDGELLM_ERR_NOT_FOUND) return false;
    detail::check(status, "edgellm_session_delete");
    return true;
  }
  // {"sessions": [{"id", "bytes"}, ...] (most recently used first), "bytes", "max_sessions", "max_bytes"}.
  std::string sessions_json() const {
    return detail::read_text("edgellm_session_list_json", [this](char* buf, size_t capacity, size_t* length) {
      return edgellm_session_list_json(handle_, buf, capacity, length);
    });
  }
  // import_session from a session file (IO when it cannot be read). Returns the positions.
  int32_t load_session_file(const std::string& id, const std::string& path) {
    detail::check_no_nul(id, "id");
    detail::check_no_nul(path, "path");
    int32_t positions = 0;
    detail::check(edgellm_session_load_file(handle_, id.c_str(), path.c_str(), &positions), "edgellm_session_load_file");
    return positions;
  }
  // Writes the session kept under id to a file (atomically); false when none is kept.
  bool save_session_file(const std::string& id, const std::string& path) {
    detail::check_no_nul(id, "id");
    detail::check_no_nul(path, "path");
    const edgellm_status status = edgellm_session_save_file(handle_, id.c_str(), path.c_str());
    if (status == EDGELLM_ERR_NOT_FOUND) return false;
    detail::check(status, "edgellm_session_save_file");
    return true;
  }

  // ---- model and text

  // JSON: architecture, parameters, vocabulary, context, weight types, threads, memory.
  std::string model_info_json() const {
    return detail::read_text("edgellm_model_info_json", [this](char* buf, size_t capacity, size_t* length) {
      return edgellm_model_info_json(handle_, buf, capacity, length);
    });
  }

  // Text -> token ids. Runs on the calling thread.
  std::vector<int32_t> tokenize(const std::string& text, bool add_special = true, bool parse_special = false) const {
    detail::check_no_nul(text, "text");
    size_t n = 0;
    edgellm_status status = edgellm_tokenize(handle_, text.c_str(), add_special, parse_special, nullptr, 0, &n);
    // No tokens: answered by the size query itself (a 0-element buffer cannot be passed).
    if ((status == EDGELLM_OK || status == EDGELLM_ERR_BUFFER_TOO_SMALL) && n == 0) return {};
    if (status != EDGELLM_ERR_BUFFER_TOO_SMALL) detail::throw_status(status, "edgellm_tokenize");
    std::vector<int32_t> ids(n);
    status = edgellm_tokenize(handle_, text.c_str(), add_special, parse_special, ids.data(), ids.size(), &n);
    detail::check(status, "edgellm_tokenize");  // the same tokenizer: the size asked (a swap in between: retry)
    ids.resize(n);
    return ids;
  }

  // Token ids -> text (control tokens rendered when render_special). Runs on the calling thread.
  std::string detokenize(const std::vector<int32_t>& ids, bool render_special = false) const {
    return detail::read_text("edgellm_detokenize", [&](char* buf, size_t capacity, size_t* length) {
      return edgellm_detokenize(handle_, ids.data(), ids.size(), render_special, buf, capacity, length);
    });
  }

  // Renders messages with the model's chat template: what a chat request is prefilled with (tool
  // calls and results included). Runs on the calling thread.
  std::string apply_template(const std::vector<Message>& messages, bool add_generation_prompt = true) const {
    const detail::CMessages c(messages);
    return detail::read_text("edgellm_apply_template", [&](char* buf, size_t capacity, size_t* length) {
      return edgellm_apply_template(handle_, c.messages.data(), c.messages.size(), add_generation_prompt, buf, capacity,
                                    length);
    });
  }
  template <typename P, detail::IfRoleContent<P> = 0>
  std::string apply_template(const std::vector<P>& messages, bool add_generation_prompt = true) const {
    return apply_template(detail::to_message_list(messages), add_generation_prompt);
  }

  // ---- hot swap (docs/device-fitness.md)

  // Switches new requests to another model file, labelled `version` (1-64 bytes) in results;
  // those already admitted finish on the old one. Blocks while the new model loads; on failure
  // (IO, INVALID_FILE, UNSUPPORTED, OUT_OF_MEMORY) nothing changes. Not from a callback.
  void swap_model(const std::string& model_path, const std::string& version) {
    detail::check_no_nul(model_path, "model_path");
    detail::check_no_nul(version, "version");
    detail::check(edgellm_swap_model(handle_, model_path.c_str(), version.c_str()), "edgellm_swap_model");
  }
  // For a runtime opened from a registry: switches to the registry's current version of the
  // model's name when it differs from the one serving. Returns the version serving afterwards.
  // Not from a callback.
  std::string reload_registry() {
    // The call has an effect, so it is made once: a version fits 64 bytes + the NUL.
    char version[128];
    size_t length = 0;
    detail::check(edgellm_reload_registry(handle_, version, sizeof version, &length), "edgellm_reload_registry");
    return std::string(version, length);
  }

  // ---- degradation (docs/device-fitness.md, "The ladder")

  // Feeds the platform's memory level (0 none .. 3 critical, 4 free memory now), thermal level
  // (0 .. 3) and power-save mode to the ladder. Returns at once.
  void set_pressure(int32_t memory_level, int32_t thermal_level = 0, bool power_save = false) {
    edgellm_pressure p{};
    p.struct_size = sizeof p;
    p.memory_level = memory_level;
    p.thermal_level = thermal_level;
    p.power_save = power_save;
    detail::check(edgellm_set_pressure(handle_, &p), "edgellm_set_pressure");
  }
  // The smaller model of the ladder's "smaller model" rung; clear_fallback_model() removes it.
  void set_fallback_model(const std::string& model_path, const std::string& version = "fallback") {
    detail::check_no_nul(model_path, "model_path");
    detail::check_no_nul(version, "version");
    detail::check(edgellm_set_fallback_model(handle_, model_path.c_str(), version.c_str()), "edgellm_set_fallback_model");
  }
  void clear_fallback_model() {
    detail::check(edgellm_set_fallback_model(handle_, nullptr, nullptr), "edgellm_set_fallback_model");
  }
  std::string degradation_json() const {
    return detail::read_text("edgellm_degradation_json", [this](char* buf, size_t capacity, size_t* length) {
      return edgellm_degradation_json(handle_, buf, capacity, length);
    });
  }

  // ---- the router (docs/router.md)

  // Sets the router; requests in flight keep the settings they started with. The transport, if
  // any, is kept until this Runtime is closed (a replaced one may still be called for requests
  // submitted before). Throws INVALID_ARGUMENT for thresholds out of order or values out of range.
  void set_router(RouterConfig config) {
    edgellm_router_params p = edgellm_router_default_params();
    p.local_threshold = config.local_threshold;
    p.cloud_threshold = config.cloud_threshold;
    p.privacy = config.privacy;
    p.verbatim_turns = config.verbatim_turns;
    p.cloud_timeout_ms = config.cloud_timeout_ms;
    p.cloud_on_failure = config.cloud_on_failure;
    detail::check_no_nul(config.cloud_model, "cloud_model");
    detail::check_no_nul(config.cloud_model_large, "cloud_model_large");
    p.cloud_model = config.cloud_model.c_str();
    p.cloud_model_large = config.cloud_model_large.empty() ? nullptr : config.cloud_model_large.c_str();
    p.summary_max_tokens = config.summary_max_tokens;
    std::unique_ptr<std::function<void(CloudCall)>> transport;
    if (config.transport) {
      transport = std::make_unique<std::function<void(CloudCall)>>(std::move(config.transport));
      p.transport = &detail::transport_trampoline;
      p.transport_user_data = transport.get();
    }
    if (handle_ == nullptr) detail::check(edgellm_set_router(nullptr, &p), "edgellm_set_router");
    // Kept before the call: the router may call the transport as soon as it is set.
    if (transport) {
      if (!transports_) transports_ = std::make_shared<Transports>();
      std::lock_guard<std::mutex> lock(transports_->mutex);
      transports_->kept.push_back(std::move(transport));
    }
    detail::check(edgellm_set_router(handle_, &p), "edgellm_set_router");  // a refused one is kept until close: harmless
  }

  // ---- metrics

  // Counters and gauges (a snapshot), with this header's struct_size.
  edgellm_metrics metrics() const {
    edgellm_metrics m = edgellm_metrics_init();
    detail::check(edgellm_metrics_get(handle_, &m), "edgellm_metrics_get");
    return m;
  }
  // The same and more (latency histograms, the ladder's rungs, the router, model versions), as
  // JSON / as Prometheus text exposition.
  std::string metrics_json() const {
    return detail::read_text("edgellm_metrics_json", [this](char* buf, size_t capacity, size_t* length) {
      return edgellm_metrics_json(handle_, buf, capacity, length);
    });
  }
  std::string metrics_prometheus() const {
    return detail::read_text("edgellm_metrics_prometheus", [this](char* buf, size_t capacity, size_t* length) {
      return edgellm_metrics_prometheus(handle_, buf, capacity, length);
    });
  }

 private:
  // The router transports handed to the library (user_data of edgellm_router_params), freed
  // once the runtime is destroyed. Shared so that a moved-from Runtime keeps nothing.
  struct Transports {
    std::mutex mutex;
    std::vector<std::unique_ptr<std::function<void(CloudCall)>>> kept;
  };

  explicit Runtime(edgellm_runtime* handle) noexcept : handle_(handle) {}

  void destroy_quietly() noexcept {
    if (handle_ == nullptr) return;
    // Only WRONG_THREAD can fail here (see ~Runtime). Then the runtime runs on and may still
    // call its transports: they are leaked with it rather than freed under it.
    if (edgellm_runtime_destroy(handle_) != EDGELLM_OK && transports_) {
      new std::shared_ptr<Transports>(std::move(transports_));  // deliberately leaked
    }
    handle_ = nullptr;
    transports_.reset();
  }

  edgellm_runtime* handle_ = nullptr;
  std::shared_ptr<Transports> transports_;
};

// ============================================================================== registry, planner, pack

// The model registry (docs/device-fitness.md): versioned model files, verified by SHA-256.
// Every function may be called from any thread; none needs a Runtime.
namespace registry {

// Installs file_path as name@version (copied while hashed, or with move_file renamed in place),
// checked against sha256 (64 hex digits; empty: the file's digest is recorded) and made current.
// Returns the installed manifest as JSON. On failure the registry is unchanged.
inline std::string install(const std::string& registry_dir, const std::string& file_path, const std::string& name,
                           const std::string& version, const std::string& sha256 = "", bool move_file = false) {
  for (const std::string* s : {&registry_dir, &file_path, &name, &version, &sha256}) detail::check_no_nul(*s, "an argument");
  // The install happens once: the manifest fits this buffer, and if it did not, the size is
  // asked without installing again (edgellm.h: a too-small buffer still installs).
  std::string manifest(16384, '\0');
  size_t length = 0;
  const edgellm_status status =
      edgellm_registry_install(registry_dir.c_str(), file_path.c_str(), name.c_str(), version.c_str(),
                               sha256.empty() ? nullptr : sha256.c_str(), move_file, manifest.data(), manifest.size(), &length);
  if (status == EDGELLM_ERR_BUFFER_TOO_SMALL) return std::string();  // installed; the manifest is in list_json()
  detail::check(status, "edgellm_registry_install");
  manifest.resize(length);
  return manifest;
}
// The verified path of "name" (its current version) or "name@version": for Runtime::open or
// Runtime::swap_model. Throws NOT_FOUND (not installed), INVALID_FILE (the file changed).
inline std::string resolve(const std::string& registry_dir, const std::string& name_or_key) {
  detail::check_no_nul(registry_dir, "registry_dir");
  detail::check_no_nul(name_or_key, "name_or_key");
  return detail::read_text("edgellm_registry_resolve", [&](char* buf, size_t capacity, size_t* length) {
    return edgellm_registry_resolve(registry_dir.c_str(), name_or_key.c_str(), buf, capacity, length);
  });
}
// {"models": [manifest + "current" + "path", ...], "unfit": [...]}.
inline std::string list_json(const std::string& registry_dir) {
  detail::check_no_nul(registry_dir, "registry_dir");
  return detail::read_text("edgellm_registry_list_json", [&](char* buf, size_t capacity, size_t* length) {
    return edgellm_registry_list_json(registry_dir.c_str(), buf, capacity, length);
  });
}
// Makes name@version the version new loads use (a rollback); a Runtime picks it up with
// reload_registry(). Throws NOT_FOUND.
inline void set_current(const std::string& registry_dir, const std::string& name, const std::string& version) {
  for (const std::string* s : {&registry_dir, &name, &version}) detail::check_no_nul(*s, "an argument");
  detail::check(edgellm_registry_set_current(registry_dir.c_str(), name.c_str(), version.c_str()),
                "edgellm_registry_set_current");
}
// Removes an installed version that is not the current one. Throws NOT_FOUND, INVALID_ARGUMENT
// (the current version).
inline void remove(const std::string& registry_dir, const std::string& name, const std::string& version) {
  for (const std::string* s : {&registry_dir, &name, &version}) detail::check_no_nul(*s, "an argument");
  detail::check(edgellm_registry_remove(registry_dir.c_str(), name.c_str(), version.c_str()), "edgellm_registry_remove");
}

}  // namespace registry

// Document Q&A (edgellm_docqa_*): one index over an embedding Runtime, an optional reranker and an
// optional generator, which must outlive every call (the DocQa may be destroyed after them).
// Calls take turns (the library's mutex); failures throw Error with the library's status.
class DocQa {
 public:
  struct Hit {
    uint32_t chunk = 0;
    std::string key;
    uint32_t begin = 0, end = 0;
    std::string text;
    float score = 0;
    std::optional<float> rerank_score;
  };
  struct Answer {
    std::string answer;
    edgellm_finish_reason finish_reason = EDGELLM_FINISH_STOP;
    std::string error;
    std::vector<uint32_t> citations;  // chunk ids, in order of first use
    std::vector<Hit> context;         // what the generator was given, best first
  };

  static DocQa open(Runtime& embedder, const std::string& index_path, Runtime* generator = nullptr,
                    Runtime* reranker = nullptr, edgellm_docqa_params params = edgellm_docqa_default_params()) {
    detail::check_no_nul(index_path, "index_path");
    edgellm_docqa* h = nullptr;
    detail::check(edgellm_docqa_create(embedder.handle(), reranker ? reranker->handle() : nullptr,
                                       generator ? generator->handle() : nullptr, index_path.c_str(), &params, &h),
                  "edgellm_docqa_create");
    return DocQa(h);
  }
  DocQa(DocQa&& o) noexcept : handle_(o.handle_) { o.handle_ = nullptr; }
  DocQa& operator=(DocQa&& o) noexcept {
    if (this != &o) {
      edgellm_docqa_destroy(handle_);
      handle_ = o.handle_;
      o.handle_ = nullptr;
    }
    return *this;
  }
  DocQa(const DocQa&) = delete;
  DocQa& operator=(const DocQa&) = delete;
  ~DocQa() { edgellm_docqa_destroy(handle_); }

  // Adds or replaces the document under key, then saves the index.
  edgellm_docqa_report add(const std::string& key, const std::string& text) {
    detail::check_no_nul(key, "key");
    detail::check_no_nul(text, "text");
    edgellm_docqa_report r = edgellm_docqa_report_init();
    detail::check(edgellm_docqa_add(handle_, key.c_str(), text.c_str(), &r), "edgellm_docqa_add");
    return r;
  }
  edgellm_docqa_report remove(const std::string& key) {  // throws NOT_FOUND when absent
    detail::check_no_nul(key, "key");
    edgellm_docqa_report r = edgellm_docqa_report_init();
    detail::check(edgellm_docqa_remove(handle_, key.c_str(), &r), "edgellm_docqa_remove");
    return r;
  }
  edgellm_docqa_report index_folder(const std::string& dir) {
    detail::check_no_nul(dir, "dir");
    edgellm_docqa_report r = edgellm_docqa_report_init();
    detail::check(edgellm_docqa_index_folder(handle_, dir.c_str(), &r), "edgellm_docqa_index_folder");
    return r;
  }
  std::vector<Hit> search(const std::string& query, int32_t top_k = 0) {
    detail::check_no_nul(query, "query");
    edgellm_docqa_result* r = nullptr;
    detail::check(edgellm_docqa_search(handle_, query.c_str(), top_k, &r), "edgellm_docqa_search");
    const Owned owned(r);
    return hits_of(r);
  }
  Answer ask(const std::string& question) {
    detail::check_no_nul(question, "question");
    edgellm_docqa_result* r = nullptr;
    detail::check(edgellm_docqa_ask(handle_, question.c_str(), &r), "edgellm_docqa_ask");
    const Owned owned(r);
    Answer a;
    a.answer = r->answer;
    a.finish_reason = r->finish_reason;
    a.error = r->error;
    a.citations.assign(r->citations, r->citations + r->n_citations);
    a.context = hits_of(r);
    return a;
  }
  edgellm_docqa* handle() const noexcept { return handle_; }

 private:
  explicit DocQa(edgellm_docqa* h) : handle_(h) {}
  struct Owned {
    edgellm_docqa_result* r;
    explicit Owned(edgellm_docqa_result* p) : r(p) {}
    ~Owned() { edgellm_docqa_result_free(r); }
    Owned(const Owned&) = delete;
    Owned& operator=(const Owned&) = delete;
  };
  static std::vector<Hit> hits_of(const edgellm_docqa_result* r) {
    std::vector<Hit> out;
    for (size_t i = 0; i < r->n_hits; ++i) {
      const edgellm_docqa_hit* e = edgellm_docqa_result_hit(r, i);
      Hit h;
      h.chunk = e->chunk;
      h.key = e->key;
      h.begin = e->begin;
      h.end = e->end;
      h.text = e->text;
      h.score = e->score;
      if (e->has_rerank_score) h.rerank_score = e->rerank_score;
      out.push_back(std::move(h));
    }
    return out;
  }
  edgellm_docqa* handle_ = nullptr;
};

// Which model and configuration fit a device (edgellm_plan_json's request and answer, JSON).
inline std::string plan_json(const std::string& request_json) {
  detail::check_no_nul(request_json, "request_json");
  return detail::read_text("edgellm_plan_json", [&](char* buf, size_t capacity, size_t* length) {
    return edgellm_plan_json(request_json.c_str(), buf, capacity, length);
  });
}

// Writes the model's pack file ("<pack_dir>/<model file name>.x16.pack"; no pack_dir: beside the
// model). Blocks for about as long as a repacking load: call it off the UI thread.
inline void pack_model(const std::string& model_path, const std::optional<std::string>& pack_dir = std::nullopt,
                       int32_t n_threads = 0) {
  detail::check_no_nul(model_path, "model_path");
  detail::check(edgellm_pack_model(model_path.c_str(), detail::c_str_or_null(pack_dir, "pack_dir"), n_threads),
                "edgellm_pack_model");
}

}  // namespace edgellm::cpp

#endif  // EDGELLM_EDGELLM_HPP
