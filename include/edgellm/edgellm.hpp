// EdgeLLM C++ wrapper: RAII and exceptions over the C ABI of edgellm.h, header-only, C++17.
//
// It uses nothing but the functions of edgellm.h, so a program that includes it still links
// only against libedgellm.so (-ledgellm) and depends on no C++ ABI of the library: the classes
// here are compiled into the program, with its compiler and its standard library.
//
//   auto svc = edgellm::cpp::Service::open("model.gguf");
//   svc.submit(edgellm::cpp::Request::from_prompt("Once upon a time").with_max_tokens(64),
//              [](const edgellm_token_event& ev) { fwrite(ev.text, 1, ev.text_len, stdout); return true; },
//              [](const edgellm_result& r) { /* exactly once per accepted request */ });
//
// Errors
//   Every failed call throws edgellm::cpp::Error, whose status() is the edgellm_status and whose
//   what() names the call, the status and edgellm_last_error(). A failed call changes nothing
//   (as in the C ABI). Two exceptions to "throws on failure", both because the answer is an
//   ordinary outcome, not a failure: cancel() returns false for an id that is unknown or has
//   finished, and the destructor never throws (see ~Service).
//
// Threads (the rules of edgellm.h)
//   One scheduler thread per service runs every forward pass and calls every callback: on_token,
//   on_finish and the trim / warm-up completions. The library holds none of its locks while it
//   calls back, so a callback may call any method of its Service except close(), the destructor
//   and move assignment (they would wait for the scheduler thread, which is the caller: the C
//   ABI answers EDGELLM_ERR_WRONG_THREAD). Callbacks hold up every running request: copy what
//   you need and return. The methods of one Service may be called from any number of threads at
//   once, except that close(), the destructor and moving must not overlap any other call on it.
//
// Callbacks and exceptions
//   No exception crosses into the C library. An exception thrown by on_token is caught and
//   cancels the request (finish reason CANCELLED, as if on_token had returned false); one thrown
//   by on_finish or by a trim / warm-up callback is caught and dropped. The exception object
//   itself is lost: catch inside the callback to keep it.
//
// Lifetimes
//   A Request's strings are read only during submit() (the C ABI copies every input). The
//   callbacks given to submit() (and whatever they capture) live in a heap block owned by the
//   library's request: it is destroyed on the scheduler thread right after on_finish returns,
//   which the C ABI guarantees happens exactly once per accepted request (also when the service
//   is destroyed with the request in flight). A rejected submit destroys it before it throws.
//   Pointers inside edgellm_token_event and edgellm_result are valid only during the callback.
#ifndef EDGELLM_EDGELLM_HPP
#define EDGELLM_EDGELLM_HPP

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
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

// True when the library loaded at run time has the struct layouts this header was compiled
// with. Service::open checks it, so a mismatch is an Error instead of memory corruption.
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
inline void check_no_nul(const std::string& s, const char* what) {
  if (s.find('\0') != std::string::npos) {
    throw Error(EDGELLM_ERR_INVALID_ARGUMENT, std::string(what) + " contains a NUL byte (the C ABI takes C strings)");
  }
}

// The caller-owned-buffer convention for text: ask the size with capacity 0, allocate, fill.
// fill(buf, capacity, &length) -> status. Output that can grow between the two calls (metrics
// change while the scheduler runs) gives BUFFER_TOO_SMALL again: ask again with headroom. The
// bound only stops a pathological endless race; in practice the second attempt fits.
template <typename Fill>
std::string read_text(const char* call, Fill fill) {
  size_t length = 0;
  edgellm_status status = fill(nullptr, 0, &length);
  if (status == EDGELLM_OK) return std::string();  // nothing to write (not produced today; future-proof)
  if (status != EDGELLM_ERR_BUFFER_TOO_SMALL) throw_status(status, call);
  std::string out;
  for (int attempt = 0; attempt < 8; ++attempt) {
    out.resize(length + 1 + (attempt == 0 ? 0 : length / 4 + 256));  // +1: the NUL the library writes
    status = fill(out.data(), out.size(), &length);
    if (status == EDGELLM_OK) {
      out.resize(length);  // drop the NUL and the headroom
      return out;
    }
    if (status != EDGELLM_ERR_BUFFER_TOO_SMALL) throw_status(status, call);
  }
  throw Error(EDGELLM_ERR_INTERNAL, std::string(call) + ": the output kept growing faster than the buffer");
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

// One request, as plain values. Set exactly one input: a non-empty prompt, messages or tokens
// (none or several is INVALID_ARGUMENT from submit; an empty prompt counts as "not set").
// Defaults are the C ABI's (edgellm_request_default_params()). The fields are public; the
// with_* methods are shorthands that return *this for chaining.
struct Request {
  std::string prompt;                                          // raw UTF-8 text
  std::vector<std::pair<std::string, std::string>> messages;  // (role, content), rendered with the chat template
  std::vector<int32_t> tokens;                                 // token ids, used as they are
  bool add_special;         // raw prompt: add BOS / EOS as the model asks; default true
  bool parse_special;       // raw prompt: control-token text becomes the control token; default false
  edgellm_sampling sampling;  // default temperature 0.8, top_k 40, top_p 0.95, min_p 0.05, seed 0
  int32_t max_tokens;       // < 0: until a stop or the context is full; 0: prefill only; default 256
  std::vector<std::string> stop;  // at most 16, of 1 to 256 bytes; never part of the output
  bool ignore_eos;          // never sample end-of-generation tokens (llama.cpp's ignore_eos); default false
  int64_t deadline_ms;      // from submit, queue wait included; <= 0: none; default 15000
  edgellm_priority priority;  // default INTERACTIVE
  bool context_shift;       // endless stream: shift the window when the context is full; default false
  int32_t n_keep;           // with context_shift: positions never dropped; -1 = the prompt; default 4

  // The library's defaults, asked at run time: a default the library changes changes here too.
  Request() : Request(edgellm_request_default_params()) {}

  static Request from_prompt(std::string text) { return Request().with_prompt(std::move(text)); }
  static Request from_messages(std::vector<std::pair<std::string, std::string>> chat) {
    return Request().with_messages(std::move(chat));
  }
  static Request from_tokens(std::vector<int32_t> ids) { return Request().with_tokens(std::move(ids)); }

  Request& with_prompt(std::string text) {
    prompt = std::move(text);
    return *this;
  }
  Request& with_messages(std::vector<std::pair<std::string, std::string>> chat) {
    messages = std::move(chat);
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

 private:
  explicit Request(const edgellm_request_params& d)
      : add_special(d.add_special),
        parse_special(d.parse_special),
        sampling(d.sampling),
        max_tokens(d.max_tokens),
        ignore_eos(d.ignore_eos),
        deadline_ms(d.deadline_ms),
        priority(d.priority),
        context_shift(d.context_shift),
        n_keep(d.n_keep) {}
};

// One loaded model and its scheduler thread (an edgellm_service). Move-only; an empty Service
// (default-constructed or moved from) answers every call with Error(INVALID_ARGUMENT).
class Service {
 public:
  using TokenCallback = std::function<bool(const edgellm_token_event&)>;
  using FinishCallback = std::function<void(const edgellm_result&)>;

  Service() noexcept = default;

  // Loads the GGUF model and starts the service. Blocks while the model loads: call it once,
  // off the UI thread. Throws Error (IO, INVALID_FILE, UNSUPPORTED, OUT_OF_MEMORY,
  // INVALID_ARGUMENT for bad parameters; UNSUPPORTED also when the library's ABI version is not
  // this header's).
  static Service open(const std::string& model_path,
                      const edgellm_service_params& params = edgellm_service_default_params()) {
    if (!abi_compatible()) {
      throw Error(EDGELLM_ERR_UNSUPPORTED, "libedgellm ABI version " + std::to_string(edgellm_abi_version()) +
                                               " does not match the header's " + std::to_string(EDGELLM_ABI_VERSION));
    }
    detail::check_no_nul(model_path, "model_path");
    edgellm_service* handle = nullptr;
    detail::check(edgellm_service_create(model_path.c_str(), &params, &handle), "edgellm_service_create");
    return Service(handle);
  }

  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;
  Service(Service&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Service& operator=(Service&& other) noexcept {
    if (this != &other) {
      destroy_quietly();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }

  // edgellm_service_destroy: every waiting and running request gets its on_finish (CANCELLED)
  // before this returns. Never throws. Destroying a Service from one of its own callbacks is a
  // bug the C ABI refuses (WRONG_THREAD); a destructor cannot report it, so the service is then
  // left running and its memory leaks (ending the scheduler thread from itself is impossible).
  // Call close() where that can happen: it throws instead.
  ~Service() { destroy_quietly(); }

  // Destroys the service now, like the destructor, but reports a failure: Error(WRONG_THREAD)
  // from one of its own callbacks, and the Service then stays open. Empty: no-op.
  void close() {
    if (handle_ == nullptr) return;
    detail::check(edgellm_service_destroy(handle_), "edgellm_service_destroy");
    handle_ = nullptr;
  }

  explicit operator bool() const noexcept { return handle_ != nullptr; }
  // The C handle, to mix in C calls. Still owned by this Service.
  edgellm_service* handle() const noexcept { return handle_; }

  // Queues a request and returns its id at once. Afterwards on_token (may be empty) runs for
  // each token event and on_finish (may be empty) exactly once, both on the scheduler thread;
  // on_finish can run before submit() returns. Throws Error and calls neither on failure:
  // status() is EDGELLM_ERR_BUSY when the waiting queue is full (try again later),
  // INVALID_ARGUMENT for bad contents, SHUT_DOWN while the service is being destroyed. A prompt
  // longer than the context is accepted and ends in on_finish (ERROR, status CONTEXT_FULL).
  edgellm_request_id submit(const Request& request, TokenCallback on_token = {}, FinishCallback on_finish = {}) {
    // Borrowed C views of the request's strings, valid for the duration of the call (the C ABI
    // copies everything before it returns).
    edgellm_request_params p = edgellm_request_default_params();
    if (!request.prompt.empty()) {
      detail::check_no_nul(request.prompt, "prompt");
      p.prompt = request.prompt.c_str();
    }
    std::vector<edgellm_message> messages;
    if (!request.messages.empty()) {
      messages.reserve(request.messages.size());
      for (const auto& [role, content] : request.messages) {
        detail::check_no_nul(role, "a message role");
        detail::check_no_nul(content, "a message content");
        messages.push_back(edgellm_message{role.c_str(), content.c_str()});
      }
      p.messages = messages.data();
      p.n_messages = messages.size();
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
    p.add_special = request.add_special;
    p.parse_special = request.parse_special;
    p.sampling = request.sampling;
    p.max_tokens = request.max_tokens;
    p.ignore_eos = request.ignore_eos;
    p.deadline_ms = request.deadline_ms;
    p.priority = request.priority;
    p.context_shift = request.context_shift;
    p.n_keep = request.n_keep;

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

  // Ends a waiting or running request: its on_finish (CANCELLED, with the text so far) follows
  // on the scheduler thread. False when no waiting or running request has this id (unknown, or
  // finished already: an ordinary race with the request's own end, not an error).
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

  // Counters and gauges (a snapshot).
  edgellm_metrics metrics() const {
    edgellm_metrics m{};
    detail::check(edgellm_get_metrics(handle_, &m), "edgellm_get_metrics");
    return m;
  }
  // The same and latency histograms, as JSON / as Prometheus text exposition.
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
  // JSON: architecture, parameters, vocabulary, context, weight types, memory.
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
    detail::check(status, "edgellm_tokenize");  // the tokenizer is immutable: same size as asked
    ids.resize(n);
    return ids;
  }

  // Token ids -> text (control tokens rendered when render_special). Runs on the calling thread.
  std::string detokenize(const std::vector<int32_t>& ids, bool render_special = false) const {
    return detail::read_text("edgellm_detokenize", [&](char* buf, size_t capacity, size_t* length) {
      return edgellm_detokenize(handle_, ids.data(), ids.size(), render_special, buf, capacity, length);
    });
  }

  // Renders (role, content) messages with the model's chat template: what a chat request is
  // prefilled with. Runs on the calling thread.
  std::string apply_template(const std::vector<std::pair<std::string, std::string>>& messages,
                             bool add_generation_prompt = true) const {
    std::vector<edgellm_message> c;
    c.reserve(messages.size());
    for (const auto& [role, content] : messages) {
      detail::check_no_nul(role, "a message role");
      detail::check_no_nul(content, "a message content");
      c.push_back(edgellm_message{role.c_str(), content.c_str()});
    }
    return detail::read_text("edgellm_apply_template", [&](char* buf, size_t capacity, size_t* length) {
      return edgellm_apply_template(handle_, c.data(), c.size(), add_generation_prompt, buf, capacity, length);
    });
  }

 private:
  explicit Service(edgellm_service* handle) noexcept : handle_(handle) {}

  void destroy_quietly() noexcept {
    if (handle_ == nullptr) return;
    // Only WRONG_THREAD can fail here (see ~Service): the handle is dropped either way, since
    // this object is going away or being overwritten.
    (void)edgellm_service_destroy(handle_);
    handle_ = nullptr;
  }

  edgellm_service* handle_ = nullptr;
};

}  // namespace edgellm::cpp

#endif  // EDGELLM_EDGELLM_HPP
