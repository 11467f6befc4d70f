// Errors inside the engine are exceptions carrying a code; the C ABI (src/api/) catches every
// exception and turns it into a status code, so nothing is thrown across the library boundary.
#pragma once

#include <stdexcept>
#include <string>

namespace edgellm {

enum class ErrorCode {
  kInvalidArgument,  // caller passed something malformed (bad option, empty prompt, ...)
  kInvalidFile,      // a file's content is malformed or hostile (GGUF parser, tokenizer data)
  kUnsupported,      // well-formed but not supported (unknown tensor type, architecture)
  kIo,               // open/read/write/mmap/rename failed
  kOutOfMemory,      // an allocation or a memory budget (KV blocks) was exhausted
  kContextFull,      // a sequence does not fit the context / KV budget
  kCancelled,        // the caller asked to stop
  kTimeout,          // a deadline passed
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

// Throws Error(code, message) when the condition is false. Use for validating input, not for
// internal invariants (those are bugs: kInternal).
inline void require(bool condition, ErrorCode code, const std::string& message) {
  if (!condition) throw Error(code, message);
}

}  // namespace edgellm
