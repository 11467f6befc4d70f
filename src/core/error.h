// Errors inside the engine are exceptions carrying a code; the C ABI (src/api/) catches every
// exception and turns it into a status code, so nothing is thrown across the library boundary.
#pragma once

#include <stdexcept>
#include <string>
#include <type_traits>

namespace edgellm {

enum class ErrorCode {
  kInvalidArgument,  // caller passed something malformed (bad option, empty prompt, ...)
  kInvalidFile,      // a file's content is malformed or hostile (GGUF parser, tokenizer data)
  kUnsupported,      // well-formed but not supported (unknown tensor type, architecture)
  kIo,               // open/read/write/mmap/rename failed
  kOutOfMemory,      // an allocation or a memory budget (KV blocks) was exhausted
  kContextFull,      // a sequence does not fit the context / KV budget
  kCancelled,        // the caller asked to stop
  kBusy,             // the service's waiting queue is full: try again later
  kDegraded,         // refused or ended by the degradation ladder under device pressure
  kNotFound,         // no request, session or registry entry has that id / name
  kInternal,         // a broken invariant: a bug in EdgeLLM
};

const char* error_code_name(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

// Throws Error(code, message). Out of line and cold, so the checks below inline to a compare
// and a branch.
[[noreturn, gnu::cold]] void throw_error(ErrorCode code, const char* message);
[[noreturn, gnu::cold]] void throw_error(ErrorCode code, std::string message);

// Throws Error(code, message) when the condition is false. Use for validating input, not for
// internal invariants (those are bugs: kInternal). These run on per-token paths (the sampler, the
// tokenizer, kernel entry points), so a passing check must not build its message:
//   require(ok, code, "literal");                 the const char* overload: no std::string
//   require(ok, code, [&] { return "n = " + std::to_string(n); });
//                                                 the callable runs only when the check fails
// A std::string argument is for messages that already exist; a message composed in the call
// (require(ok, code, "x" + s)) is built on every call, so on a hot path use a callable instead.
inline void require(bool condition, ErrorCode code, const char* message) {
  if (!condition) [[unlikely]] throw_error(code, message);
}

inline void require(bool condition, ErrorCode code, const std::string& message) {
  if (!condition) [[unlikely]] throw_error(code, message);
}

template <class MakeMessage>
  requires std::is_invocable_r_v<std::string, MakeMessage&>
inline void require(bool condition, ErrorCode code, MakeMessage&& make_message) {
  if (!condition) [[unlikely]] throw_error(code, std::string(make_message()));
}

}  // namespace edgellm
