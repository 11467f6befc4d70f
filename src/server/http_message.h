// What the transport (http_transport.h, the one file that sees Boost.Beast) and the endpoints
// exchange: a request as it was parsed, a whole response, and the ResponseWriter an endpoint
// answers through on its worker thread (a whole body, or a stream written piece by piece).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace edgellm::server {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// ASCII case-insensitive equality (header names, tokens).
bool iequals(std::string_view a, std::string_view b);

// The head of a request (request line and headers), known before its body is read.
struct RequestHead {
  std::string method;   // as sent: "GET", "POST", ...
  std::string target;   // "/v1/sessions/import?id=trip"
  std::string path;     // the target before '?', not percent-decoded
  std::string query;    // after '?', may be empty
  int version = 11;     // 10 (HTTP/1.0) or 11
  HeaderList headers;   // in the order sent, names as sent
  std::string peer;     // the client's address ("127.0.0.1", "::1")
  std::optional<uint64_t> content_length;  // none: no body, or a chunked one
  bool chunked = false;

  // The first value of header `name` (any case); "" when absent.
  std::string_view header(std::string_view name) const;
  bool has_header(std::string_view name) const;
  // The percent-decoded value of query parameter `name`; "" when absent.
  std::string query_param(std::string_view name) const;
  // A body follows the head (Content-Length > 0 or chunked).
  bool has_body() const { return chunked || content_length.value_or(0) > 0; }
};

struct HttpRequest {
  RequestHead head;
  std::string body;
};

// A response sent whole, with its Content-Length.
struct HttpResponse {
  int status = 200;
  std::string content_type;
  std::string body;
  // Sent instead of `body` when set (session export: up to --sessions-max-mib, not copied).
  std::shared_ptr<const std::string> shared_body;
  HeaderList headers;  // besides Content-Type / Content-Length / Connection, which the transport writes
};

// How an endpoint answers from its worker thread. One response per request: send(), or
// begin_stream() + write()... + end_stream(). The transport writes on its I/O thread; write()
// returns once the data is queued, blocking only while more than a window (256 KiB) is still
// unsent, so a slow reader slows its own writer and nobody else (its writes time out after
// the write deadline, and the client counts as gone).
//
// Thread-safety: used by one worker thread at a time (the one running the endpoint).
class ResponseWriter {
 public:
  virtual ~ResponseWriter() = default;

  virtual void send(HttpResponse response) = 0;
  // The head now; the body follows in pieces (chunked with HTTP/1.1, until the connection
  // closes with HTTP/1.0). `probe`: bytes the body may carry any number of times without
  // changing its meaning (SSE ": \n\n", JSON " "), written while the client has closed its
  // sending side to learn whether it is still there (client_gone()); empty: never probed.
  virtual void begin_stream(int status, std::string content_type, HeaderList headers, std::string probe) = 0;
  // Queues a piece of the body. False when the client is gone (nothing more will be sent).
  virtual bool write(std::string data) = 0;
  virtual void end_stream() = 0;

  // True once the client is known to be gone: a write failed or timed out, or the connection
  // was reset. A client that only closed its sending side (EOF) may still be reading: once the
  // head is out, each call (at most every 20 ms) writes the probe, and the write after a real
  // close fails. Cheap; call it while waiting for tokens.
  virtual bool client_gone() = 0;
  // send() or begin_stream() was called.
  virtual bool started() const = 0;
};

}  // namespace edgellm::server
