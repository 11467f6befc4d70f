// The HTTP/1.1 transport of `edgellm serve`: connections, parsing, limits, deadlines. Boost.Beast's
// request parser on Boost.Asio sockets (docs/server.md, "HTTP library": why not cpp-httplib 0.11),
// all in http_transport.cpp, the one file that includes them. One I/O thread (the caller of
// run()) owns every socket and never blocks; endpoints run on a bounded WorkerPool.
//
// A connection serves one request at a time:
//   head     read within head_timeout (from when the server starts waiting: a connection that
//            trickles its head, or idles between requests, is closed then; 408 when it had sent
//            part of one); at most header_bytes (request line + headers) and max_headers fields
//            (431). Refused with 400 and the connection closed, since the next request's start
//            can no longer be trusted: a malformed or conflicting Content-Length (Beast), any
//            Transfer-Encoding but one "chunked", chunked in HTTP/1.0, HTTP/1.1 without exactly
//            one Host, a target that is not a path.
//   plan     the application decides from the head (RequestPlan, on the I/O thread): answer now
//            without reading the body, or read a body of at most body_limit (413 from
//            Content-Length before reading; after it for chunked bodies) and run a handler
//            inline (cheap) or on a worker (pool full: 503 + Retry-After at once).
//   body     read within body_timeout + body_timeout_per_mib for each MiB declared (408).
//            "Expect: 100-continue" is answered before reading it.
//   answer   through ResponseWriter; meanwhile the socket is watched (not read): a reset marks
//            the client gone, an EOF (closed sending side) makes the writer probe.
//   next     read only after the response is out, from the bytes already buffered first:
//            pipelined requests are answered in order and a body is never parsed as a request.
// Limits at accept: max_connections in all, max_client_connections per client address; the
// excess is answered 503 and closed. A connection closes after max_requests_per_connection,
// on HTTP/1.0, "Connection: close", an error the parser cannot recover from, or a write that
// makes no progress for write_timeout.
//
// Thread-safety: construct, then run() on one thread; stop() from any other thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "server/http_message.h"
#include "server/listening_socket.h"

namespace edgellm::server {

struct TransportLimits {
  size_t header_bytes = 8192;  // request line + headers (431 above)
  size_t max_headers = 64;     // header fields (431 above)
  std::chrono::milliseconds head_timeout{10000};
  std::chrono::milliseconds body_timeout{10000};
  std::chrono::milliseconds body_timeout_per_mib{1000};  // a 256 MiB session import: 266 s
  std::chrono::milliseconds write_timeout{10000};        // one write making no progress
  size_t max_connections = 512;
  size_t max_client_connections = 64;
  size_t max_requests_per_connection = 1000;
  size_t worker_threads = 8;
  size_t max_waiting_tasks = 8;  // requests waiting for a worker; one more gets 503
  int retry_after_s = 1;         // Retry-After of the transport's 503s
  int keep_alive_hint_s = 5;     // "Keep-Alive: timeout=N": clients drop idle connections before we do
};

// What to do with a request, decided from its head.
struct RequestPlan {
  // Answered now; the body is not read (the connection then closes if one was announced).
  std::optional<HttpResponse> respond;
  // Run on the I/O thread with the whole request: must be quick and must not block.
  std::function<HttpResponse(HttpRequest&)> run_inline;
  // Run on a worker with the whole request.
  std::function<void(HttpRequest&, ResponseWriter&)> run;
  uint64_t body_limit = 0;  // bytes (413 above)
  // Added to the head of the response, however it is sent (CORS headers).
  HeaderList headers;
  // Held until the response is out (then released by destruction): the request's share of a
  // limit (admission.h).
  std::shared_ptr<void> admission;
};

enum class TransportEvent {
  kConnectionAccepted,
  kConnectionRefused,  // over max_connections / max_client_connections
  kTimeout,            // head, body or write deadline
  kWorkersBusy,        // 503: no worker free and the waiting line full
};

// What the transport asks of the server.
class HttpApplication {
 public:
  virtual ~HttpApplication() = default;
  // I/O thread, must not block. May throw: 500.
  virtual RequestPlan plan(const RequestHead& head) = 0;
  // The body of a response the transport makes itself (400, 408, 413, 431, 503, ...). Any thread.
  virtual HttpResponse error_response(int status, const std::string& code, const std::string& message) = 0;
  // A response's head is being sent with `status`. Any thread.
  virtual void on_response(int status) = 0;
  virtual void on_event(TransportEvent event) = 0;
};

class HttpTransport {
 public:
  // Takes over `socket` (bound and listening). The worker threads start now.
  HttpTransport(HttpApplication& app, TransportLimits limits, ListeningSocket socket);
  ~HttpTransport();  // stop()
  HttpTransport(const HttpTransport&) = delete;
  HttpTransport& operator=(const HttpTransport&) = delete;

  int port() const;
  // Serves until stop(): the calling thread becomes the I/O thread.
  void run();
  // Stops accepting, closes idle connections, lets the handlers finish their responses (up to
  // 2 s to send them), joins the workers, ends run(). Idempotent; never from a worker.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace edgellm::server
