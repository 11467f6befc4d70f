#include "core/error.h"

namespace edgellm {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kInvalidFile: return "invalid file";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kIo: return "I/O error";
    case ErrorCode::kOutOfMemory: return "out of memory";
    case ErrorCode::kContextFull: return "context full";
    case ErrorCode::kCancelled: return "cancelled";
    case ErrorCode::kBusy: return "busy";
    case ErrorCode::kDegraded: return "degraded";
    case ErrorCode::kNotFound: return "not found";
    case ErrorCode::kInternal: return "internal error";
  }
  return "unknown error";
}

void throw_error(ErrorCode code, const char* message) { throw Error(code, message); }
void throw_error(ErrorCode code, std::string message) { throw Error(code, message); }

}  // namespace edgellm
