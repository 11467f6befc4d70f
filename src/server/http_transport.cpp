// The transport (http_transport.h). The only translation unit that includes Boost.Asio and
// Boost.Beast, so the rest of the server compiles without them.
//
// Objects and threads:
//   Server      the acceptor, the connection table, the worker pool. I/O thread only, except
//               `pool` and `io` (posting), which are thread-safe.
//   Connection  one socket; reads heads and bodies, writes what its Exchange queued. I/O thread
//               only; owned by the Server's table from accept to close() (every path ends there:
//               each wait has a deadline, and a worker always ends its response).
//   Exchange    one request's response, the ResponseWriter a handler writes to: a queue of
//               pieces under a mutex, shared by the worker (producer) and the I/O thread
//               (consumer). It refers to its Connection weakly, so a Connection is only ever
//               destroyed on the I/O thread.
#include "server/http_transport.h"

#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <limits>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/log.h"
#include "server/worker_pool.h"

namespace edgellm::server {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

// How often a writer whose client closed its sending side writes a probe (client_gone()).
constexpr std::chrono::milliseconds kProbeInterval{20};
// Closing after a response: our side is shut down, then what the client still sends is read
// and dropped (at most this much, this long), so the close does not turn into a reset that
// destroys the response before the client has read it.
constexpr size_t kLingerBytes = size_t{1} << 20;
constexpr std::chrono::milliseconds kLingerTime{1000};
// Connections being refused (503 and closed) at once; more are closed without a word. The same
// when this many closing (lingering) connections are open besides max_connections.
constexpr size_t kMaxRefusing = 64;
constexpr size_t kMaxClosing = 256;
// What a writer may queue before write() blocks.
constexpr size_t kWriteWindow = size_t{256} << 10;
// After stop(): how long responses still being written may take before run() returns anyway.
constexpr std::chrono::milliseconds kDrainTime{2000};

std::string status_line(int status) {
  const beast::string_view reason = http::obsolete_reason(static_cast<http::status>(status));
  return "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason.empty() ? "Unknown" : reason) + "\r\n";
}

// Header values the application passes are its own, but a CR or LF would split the head.
void append_header(std::string& out, const std::string& name, const std::string& value) {
  out += name;
  out += ": ";
  for (char c : value) {
    if (c != '\r' && c != '\n') out += c;
  }
  out += "\r\n";
}

// The head of a response. `length`: Content-Length (none: chunked, or until close for HTTP/1.0).
std::string response_head(int status, const std::string& content_type, const HeaderList& headers,
                          std::optional<size_t> length, bool chunked, bool close, int keep_alive_s) {
  std::string h = status_line(status);
  if (!content_type.empty()) append_header(h, "Content-Type", content_type);
  const bool no_body = status == 204 || status == 304 || status < 200;
  if (length && !no_body) append_header(h, "Content-Length", std::to_string(*length));
  if (chunked) append_header(h, "Transfer-Encoding", "chunked");
  if (close) {
    append_header(h, "Connection", "close");
  } else {
    append_header(h, "Keep-Alive", "timeout=" + std::to_string(keep_alive_s));
  }
  for (const auto& [name, value] : headers) append_header(h, name, value);
  h += "\r\n";
  return h;
}

std::string chunk_size_line(size_t n) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%zx\r\n", n);
  return buf;
}

std::string_view sv(beast::string_view s) { return {s.data(), s.size()}; }

std::string trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

class Server;
class Connection;

// One piece of a response body on its way out: owned bytes, or shared ones (session export).
struct Piece {
  std::string own;
  std::shared_ptr<const std::string> shared;

  net::const_buffer buffer() const { return shared ? net::buffer(*shared) : net::buffer(own); }
  size_t size() const { return shared ? shared->size() : own.size(); }
};

class Exchange final : public ResponseWriter, public std::enable_shared_from_this<Exchange> {
 public:
  // head_only: a HEAD request (the head, never a body). http11: chunked streams are possible.
  // close: the connection closes after this response.
  // extra: headers added to whatever response is sent (RequestPlan::headers).
  Exchange(Server& server, std::weak_ptr<Connection> connection, bool head_only, bool http11, bool close,
           HeaderList extra)
      : server_(server),
        connection_(std::move(connection)),
        head_only_(head_only),
        http11_(http11),
        extra_(std::move(extra)),
        close_(close) {}

  // ---- ResponseWriter (the handler's thread; the I/O thread for inline answers)
  void send(HttpResponse r) override;
  void begin_stream(int status, std::string content_type, HeaderList headers, std::string probe) override;
  bool write(std::string data) override;
  void end_stream() override;
  bool client_gone() override;
  bool started() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return started_;
  }

  // ---- the I/O thread
  // The pieces queued since the last call (none once the client is gone), and in *ended whether
  // the handler had ended the response by then: read under one lock with the pieces, so "nothing
  // taken and ended" means nothing more will come (a separate ended() after an empty take() could
  // see an end whose last pieces were queued in between, and finish the exchange without them).
  // Re-arms the handler's flush posts (flush_posted_), so every Connection::flush that returns
  // without a write still pending must call it.
  std::vector<Piece> take(bool* ended) {
    std::lock_guard<std::mutex> lock(mutex_);
    flush_posted_ = false;
    if (gone_) pending_.clear();
    *ended = ended_;
    return std::exchange(pending_, {});
  }
  void sent(size_t bytes, bool ok) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      unsent_ -= std::min(unsent_, bytes);
      if (!ok) gone_locked();
    }
    space_.notify_all();
  }
  void peer_closed() {
    std::lock_guard<std::mutex> lock(mutex_);
    peer_eof_ = true;
  }
  void peer_reset() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      gone_locked();
    }
    space_.notify_all();
  }
  bool gone() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return gone_;
  }
  // The connection must close after this response (HTTP/1.0 stream, an error the transport
  // made, "Connection: close").
  bool closes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return close_ || (started_ && stream_ && !chunked_);
  }

 private:
  void gone_locked() {
    gone_ = true;
    pending_.clear();
    unsent_ = 0;
  }
  // Queues p; true when the I/O thread must be told (no flush is on its way yet).
  bool queue_locked(Piece p) {
    unsent_ += p.size();
    pending_.push_back(std::move(p));
    return !std::exchange(flush_posted_, true);
  }
  void post_flush();
  std::string frame(std::string data) const {
    if (!chunked_) return data;
    return chunk_size_line(data.size()) + data + "\r\n";
  }

  Server& server_;
  const std::weak_ptr<Connection> connection_;
  const bool head_only_;
  const bool http11_;
  const HeaderList extra_;

  mutable std::mutex mutex_;
  std::condition_variable space_;  // unsent_ fell, or the client is gone
  std::vector<Piece> pending_;
  size_t unsent_ = 0;
  // A flush is posted and not yet taken: the handler does not post another. Only take() clears
  // it, so a flush that returned without take() while no write is pending would leave the
  // connection deaf to the handler's end (the helper-slot leak of issue 43).
  bool flush_posted_ = false;
  bool close_;
  bool started_ = false;
  bool stream_ = false;
  bool chunked_ = false;
  bool ended_ = false;
  bool gone_ = false;
  bool peer_eof_ = false;
  std::string probe_;
  Clock::time_point last_probe_{};
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Server& server, tcp::socket socket, std::string peer, bool refused);
  void start();
  // Sends what `ex` queued (posted by Exchange). Ignored when ex is no longer the current one.
  void flush(const std::shared_ptr<Exchange>& ex);
  // The server stops: between requests the connection closes now, otherwise after its answer.
  void on_stop();
  const std::string& peer() const { return peer_; }
  bool refused() const { return refused_; }

 private:
  using Parser = http::request_parser<http::string_body>;

  void read_head();
  void on_head(beast::error_code ec);
  void read_body();
  void on_body(beast::error_code ec);
  void dispatch(HttpRequest request);
  // Answers from the I/O thread (errors, refusals, inline endpoints). close: then closes.
  void respond(HttpResponse response, bool close);
  void respond_error(int status, const std::string& code, const std::string& message);
  void watch_peer();
  void finish_exchange();
  void linger_close();
  void linger_read();
  void close();
  void arm_read_timer(std::chrono::milliseconds d);
  void disarm_read_timer() {
    ++read_timer_id_;
    read_timer_.cancel();
  }

  Server& server_;
  tcp::socket socket_;
  const std::string peer_;
  const bool refused_;
  beast::flat_buffer buffer_;
  std::optional<Parser> parser_;
  net::steady_timer read_timer_;
  net::steady_timer write_timer_;
  uint64_t read_timer_id_ = 0;
  uint64_t write_timer_id_ = 0;
  bool timed_out_ = false;
  RequestHead head_;
  RequestPlan plan_;
  bool close_after_ = false;
  std::shared_ptr<Exchange> exchange_;
  std::vector<Piece> writing_;
  bool write_active_ = false;
  bool lingering_ = false;
  size_t lingered_bytes_ = 0;
  bool closed_ = false;
  size_t served_ = 0;
};

class Server {
 public:
  Server(HttpApplication& a, TransportLimits l, ListeningSocket socket)
      : app(a),
        limits(l),
        pool(std::max<size_t>(1, l.worker_threads), l.max_waiting_tasks),
        acceptor_(io),
        work_(net::make_work_guard(io)),
        accept_retry_(io),
        drain_timer_(io) {
    port = socket.port();
    const tcp protocol = socket.family() == AF_INET6 ? tcp::v6() : tcp::v4();
    acceptor_.assign(protocol, socket.release());
  }

  void run() {
    net::post(io, [this] { accept(); });
    for (;;) {
      try {
        io.run();
        return;
      } catch (const std::exception& e) {
        // A handler threw (never expected): keep serving the other connections.
        log_message(LogLevel::kError, std::string("server: I/O handler failed: ") + e.what());
      }
    }
  }

  void stop() {
    if (stop_requested_.exchange(true)) {
      std::lock_guard<std::mutex> lock(stop_mutex_);  // a second caller returns when the first did
      return;
    }
    std::lock_guard<std::mutex> lock(stop_mutex_);
    net::post(io, [this] {
      stopping = true;
      beast::error_code ignored;
      acceptor_.close(ignored);
      accept_retry_.cancel();
      std::vector<std::shared_ptr<Connection>> open;
      for (auto& [raw, c] : connections_) open.push_back(c);
      for (auto& c : open) c->on_stop();
    });
    pool.shutdown();  // handlers finish (the application cancels its generations itself)
    net::post(io, [this] {
      drain_timer_.expires_after(kDrainTime);
      drain_timer_.async_wait([this](beast::error_code ec) {
        if (!ec) io.stop();
      });
      check_drained();
    });
    work_.reset();
  }

  // A connection stops counting against its client's limit: it is closing (lingering, at most
  // kLingerTime) and will serve nothing more. Once per connection (I/O thread).
  void release_client_slot(Connection& c) {
    if (c.refused()) {
      --refusing_;
      return;
    }
    --active_;
    if (auto it = per_client_.find(c.peer()); it != per_client_.end() && --it->second == 0) per_client_.erase(it);
  }

  // A connection closed (I/O thread): forgotten, and destroyed once the current handler returns.
  void closed(Connection& c) {
    auto it = connections_.find(&c);
    if (it != connections_.end()) {
      net::post(io, [keep = std::move(it->second)] {});
      connections_.erase(it);
    }
    check_drained();
  }

  HttpApplication& app;
  const TransportLimits limits;
  net::io_context io;  // before the pool: the workers post to it until they are joined
  WorkerPool pool;
  bool stopping = false;  // I/O thread
  int port = 0;
  std::array<char, 65536> scratch{};  // where lingering closes drop what they read (I/O thread)

 private:
  void accept() {
    acceptor_.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (stopping) return;
      if (ec) {
        // Out of descriptors (EMFILE) or a connection reset before it was accepted: try again
        // shortly rather than spinning.
        accept_retry_.expires_after(std::chrono::milliseconds(ec == net::error::connection_aborted ? 0 : 50));
        accept_retry_.async_wait([this](beast::error_code e) {
          if (!e && !stopping) accept();
        });
        return;
      }
      admit(std::move(socket));
      accept();
    });
  }

  void admit(tcp::socket socket) {
    beast::error_code ec;
    tcp::endpoint remote = socket.remote_endpoint(ec);
    if (ec) return;  // already gone
    net::ip::address a = remote.address();
    if (a.is_v6() && a.to_v6().is_v4_mapped()) a = net::ip::make_address_v4(net::ip::v4_mapped, a.to_v6());
    std::string peer = a.to_string();
    const auto it = per_client_.find(peer);
    const size_t from_peer = it == per_client_.end() ? 0 : it->second;
    const bool over = active_ >= limits.max_connections || from_peer >= limits.max_client_connections;
    if (over) {
      app.on_event(TransportEvent::kConnectionRefused);
      // Beyond this many at once, refused without a word (the socket closes as it goes out of
      // scope); so are all when closing connections pile up (a flood faster than kLingerTime).
      if (refusing_ >= kMaxRefusing || connections_.size() >= limits.max_connections + kMaxClosing) return;
      ++refusing_;
    } else {
      ++per_client_[peer];
      ++active_;
      app.on_event(TransportEvent::kConnectionAccepted);
    }
    auto c = std::make_shared<Connection>(*this, std::move(socket), std::move(peer), over);
    connections_.emplace(c.get(), c);
    c->start();
  }

  void check_drained() {
    if (stopping && connections_.empty() && stop_requested_.load()) io.stop();
  }

  tcp::acceptor acceptor_;
  net::executor_work_guard<net::io_context::executor_type> work_;
  net::steady_timer accept_retry_;
  net::steady_timer drain_timer_;
  // Every open connection, owned here until it closes (its pending operations may also hold it).
  std::unordered_map<Connection*, std::shared_ptr<Connection>> connections_;  // I/O thread
  std::unordered_map<std::string, size_t> per_client_;                      // open, by address
  size_t active_ = 0;    // accepted, not yet closing: what max_connections bounds
  size_t refusing_ = 0;  // being answered 503
  std::atomic<bool> stop_requested_{false};
  std::mutex stop_mutex_;
};

// ---------------------------------------------------------------- Exchange

void Exchange::post_flush() {
  net::post(server_.io, [weak = connection_, self = shared_from_this()] {
    if (auto c = weak.lock()) c->flush(self);
  });
}

void Exchange::send(HttpResponse r) {
  const size_t length = r.shared_body ? r.shared_body->size() : r.body.size();
  bool post = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (started_) return;  // one response per request
    started_ = true;
    ended_ = true;
    if (!gone_) {
      r.headers.insert(r.headers.end(), extra_.begin(), extra_.end());
      post = queue_locked(Piece{response_head(r.status, r.content_type, r.headers, length, false, close_,
                                              server_.limits.keep_alive_hint_s),
                                nullptr});
      if (!head_only_ && length > 0) {
        queue_locked(r.shared_body ? Piece{{}, std::move(r.shared_body)} : Piece{std::move(r.body), nullptr});
      }
    } else {
      post = !std::exchange(flush_posted_, true);  // the connection still learns that it ended
    }
  }
  server_.app.on_response(r.status);
  if (post) post_flush();
}

void Exchange::begin_stream(int status, std::string content_type, HeaderList headers, std::string probe) {
  bool post = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (started_) return;
    started_ = true;
    stream_ = true;
    // HTTP/1.0 has no chunked encoding: the body ends when the connection closes.
    chunked_ = http11_;
    probe_ = std::move(probe);
    headers.insert(headers.end(), extra_.begin(), extra_.end());
    if (!gone_) {
      post = queue_locked(Piece{response_head(status, content_type, headers, std::nullopt, chunked_, !chunked_,
                                              server_.limits.keep_alive_hint_s),
                                nullptr});
    }
  }
  server_.app.on_response(status);
  if (post) post_flush();
}

bool Exchange::write(std::string data) {
  if (data.empty()) return !gone();
  bool post = false;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    space_.wait(lock, [&] { return gone_ || unsent_ <= kWriteWindow; });
    if (gone_ || ended_ || !started_) return !gone_;
    if (head_only_) return true;
    post = queue_locked(Piece{frame(std::move(data)), nullptr});
  }
  if (post) post_flush();
  return true;
}

void Exchange::end_stream() {
  bool post = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (ended_) return;
    ended_ = true;
    if (!gone_ && chunked_ && !head_only_) {
      post = queue_locked(Piece{"0\r\n\r\n", nullptr});
    } else {
      post = !std::exchange(flush_posted_, true);
    }
  }
  if (post) post_flush();
}

bool Exchange::client_gone() {
  bool post = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (gone_) return true;
    // After the peer's EOF, data we send to a socket it closed is answered with a reset, which
    // fails the next write: the probe after that tells.
    if (!peer_eof_ || !started_ || ended_ || probe_.empty() || head_only_) return false;
    const Clock::time_point now = Clock::now();
    if (now - last_probe_ < kProbeInterval) return false;
    last_probe_ = now;
    post = queue_locked(Piece{frame(probe_), nullptr});
  }
  if (post) post_flush();
  return false;
}

// ---------------------------------------------------------------- Connection

Connection::Connection(Server& server, tcp::socket socket, std::string peer, bool refused)
    : server_(server),
      socket_(std::move(socket)),
      peer_(std::move(peer)),
      refused_(refused),
      read_timer_(server.io),
      write_timer_(server.io) {}

void Connection::start() {
  beast::error_code ignored;
  socket_.set_option(tcp::no_delay(true), ignored);  // stream chunks leave at once
  if (refused_) {
    respond_error(503, "too_many_connections",
                  "too many connections (" + std::to_string(server_.limits.max_client_connections) +
                      " per client address, " + std::to_string(server_.limits.max_connections) +
                      " in all): close idle ones and retry");
    return;
  }
  read_head();
}

void Connection::arm_read_timer(std::chrono::milliseconds d) {
  read_timer_.expires_after(d);
  read_timer_.async_wait([self = shared_from_this(), id = ++read_timer_id_](beast::error_code ec) {
    if (ec || id != self->read_timer_id_) return;
    self->timed_out_ = true;
    if (self->lingering_) {
      self->close();
      return;
    }
    beast::error_code ignored;
    self->socket_.cancel(ignored);  // the pending read ends with operation_aborted
  });
}

void Connection::read_head() {
  if (closed_) return;
  if (server_.stopping) {
    linger_close();
    return;
  }
  parser_.emplace();
  parser_->header_limit(static_cast<uint32_t>(server_.limits.header_bytes));
  // Set from the plan once the head is known. (Not boost::none: Beast 1.74 compares a
  // Content-Length with the optional and finds any length above "none".)
  parser_->body_limit(std::numeric_limits<uint64_t>::max());
  head_ = RequestHead();
  plan_ = RequestPlan();
  timed_out_ = false;
  arm_read_timer(server_.limits.head_timeout);
  http::async_read_header(socket_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
    self->on_head(ec);
  });
}

void Connection::on_head(beast::error_code ec) {
  disarm_read_timer();
  if (closed_) return;
  if (ec) {
    if (timed_out_) {
      server_.app.on_event(TransportEvent::kTimeout);
      if (parser_->got_some()) {
        respond_error(408, "request_timeout",
                      "the request head did not arrive within " +
                          std::to_string(server_.limits.head_timeout.count() / 1000) + " s");
      } else {
        close();  // an idle keep-alive connection: nothing to answer
      }
    } else if (ec == http::error::end_of_stream) {
      close();  // the client closed between requests
    } else if (ec == http::error::header_limit) {
      respond_error(431, "headers_too_large",
                    "request line and headers over " + std::to_string(server_.limits.header_bytes) + " bytes");
    } else if (ec == http::error::partial_message) {
      respond_error(400, "bad_request", "the connection closed inside the request head");
    } else if (ec.category() == http::make_error_code(http::error::bad_method).category()) {
      respond_error(400, "bad_request", "malformed request: " + ec.message());
    } else {
      close();  // reset, or the server stopping
    }
    return;
  }
  const auto& msg = parser_->get();
  head_.method = std::string(sv(msg.method_string()));
  head_.target = std::string(sv(msg.target()));
  head_.version = static_cast<int>(msg.version());
  head_.peer = peer_;
  size_t hosts = 0, transfer_encodings = 0;
  for (const auto& field : msg) {
    head_.headers.emplace_back(std::string(sv(field.name_string())), std::string(sv(field.value())));
    if (iequals(sv(field.name_string()), "Host")) ++hosts;
    if (iequals(sv(field.name_string()), "Transfer-Encoding")) ++transfer_encodings;
  }
  if (head_.headers.size() > server_.limits.max_headers) {
    respond_error(431, "headers_too_large", "more than " + std::to_string(server_.limits.max_headers) + " header fields");
    return;
  }
  if (head_.version != 10 && head_.version != 11) {
    respond_error(505, "http_version_not_supported", "HTTP/1.0 and HTTP/1.1 only");
    return;
  }
  // What Beast accepts but a request boundary must not depend on (RFC 9112 6.1, 6.3): a
  // transfer coding other than exactly one "chunked" (Beast would read such a body as empty,
  // and its bytes as the next request), chunked in HTTP/1.0.
  if (transfer_encodings > 1 ||
      (transfer_encodings == 1 && (!iequals(trimmed(head_.header("Transfer-Encoding")), "chunked") ||
                                   head_.version == 10))) {
    respond_error(400, "bad_request", "Transfer-Encoding: only one 'chunked' in HTTP/1.1 is accepted");
    return;
  }
  if ((head_.version == 11 && hosts != 1) || hosts > 1) {
    respond_error(400, "bad_request", "an HTTP/1.1 request needs exactly one Host header");
    return;
  }
  if (head_.target.empty() || head_.target[0] != '/') {
    respond_error(400, "bad_request", "the request target must be a path starting with '/'");
    return;
  }
  const size_t q = head_.target.find('?');
  head_.path = head_.target.substr(0, q);
  if (q != std::string::npos) head_.query = head_.target.substr(q + 1);
  head_.chunked = parser_->chunked();
  if (const auto n = parser_->content_length(); n) head_.content_length = *n;
  close_after_ = !parser_->keep_alive() || head_.version == 10 || served_ + 1 >= server_.limits.max_requests_per_connection ||
                 server_.stopping;

  try {
    plan_ = server_.app.plan(head_);
  } catch (const std::exception& e) {
    log_message(LogLevel::kError, std::string("server: routing failed: ") + e.what());
    respond(server_.app.error_response(500, "internal", "internal error"), true);
    return;
  }
  if (plan_.respond) {
    // The body, if any, is not read: after the answer the connection closes.
    respond(std::move(*plan_.respond), head_.has_body());
    return;
  }
  if (head_.content_length && *head_.content_length > plan_.body_limit) {
    respond_error(413, "request_too_large",
                  "request body of " + std::to_string(*head_.content_length) + " bytes; the limit here is " +
                      std::to_string(plan_.body_limit));
    return;
  }
  if (!head_.has_body()) {
    dispatch(HttpRequest{std::move(head_), std::string()});
    return;
  }
  parser_->body_limit(plan_.body_limit);
  if (head_.version == 11 && iequals(trimmed(head_.header("Expect")), "100-continue")) {
    // The client waits for this before it sends the body (curl does for large bodies).
    static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    write_timer_.expires_after(server_.limits.write_timeout);
    write_timer_.async_wait([self = shared_from_this(), id = ++write_timer_id_](beast::error_code e) {
      if (!e && id == self->write_timer_id_) self->close();
    });
    net::async_write(socket_, net::buffer(kContinue), [self = shared_from_this()](beast::error_code e, size_t) {
      ++self->write_timer_id_;
      self->write_timer_.cancel();
      if (e) {
        self->close();
      } else {
        self->read_body();
      }
    });
    return;
  }
  read_body();
}

void Connection::read_body() {
  if (closed_) return;
  const uint64_t declared = head_.content_length.value_or(plan_.body_limit);
  arm_read_timer(server_.limits.body_timeout +
                 server_.limits.body_timeout_per_mib * static_cast<int64_t>((declared + (1 << 20) - 1) >> 20));
  http::async_read(socket_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
    self->on_body(ec);
  });
}

void Connection::on_body(beast::error_code ec) {
  disarm_read_timer();
  if (closed_) return;
  if (ec) {
    if (timed_out_) {
      server_.app.on_event(TransportEvent::kTimeout);
      respond_error(408, "request_timeout", "the request body did not arrive in time");
    } else if (ec == http::error::body_limit) {
      respond_error(413, "request_too_large",
                    "request body over the limit here (" + std::to_string(plan_.body_limit) + " bytes)");
    } else if (ec == http::error::bad_chunk || ec == http::error::bad_chunk_extension ||
               ec == http::error::bad_field || ec == http::error::bad_value) {
      respond_error(400, "bad_request", "malformed chunked body: " + ec.message());
    } else if (ec == http::error::partial_message) {
      respond_error(400, "bad_request", "the connection closed inside the request body");
    } else {
      close();
    }
    return;
  }
  dispatch(HttpRequest{std::move(head_), std::move(parser_->get().body())});
}

void Connection::dispatch(HttpRequest request) {
  exchange_ = std::make_shared<Exchange>(server_, weak_from_this(), request.head.method == "HEAD",
                                         request.head.version == 11, close_after_, plan_.headers);
  if (plan_.run_inline) {
    HttpResponse r;
    try {
      r = plan_.run_inline(request);
    } catch (const std::exception& e) {
      log_message(LogLevel::kError, std::string("server: handler failed: ") + e.what());
      r = server_.app.error_response(500, "internal", "internal error");
    }
    exchange_->send(std::move(r));
  } else if (plan_.run) {
    auto shared = std::make_shared<HttpRequest>(std::move(request));
    const bool queued = server_.pool.try_submit([ex = exchange_, run = plan_.run, shared, &app = server_.app] {
      try {
        run(*shared, *ex);
      } catch (const std::exception& e) {
        log_message(LogLevel::kError, std::string("server: handler failed: ") + e.what());
        if (!ex->started()) ex->send(app.error_response(500, "internal", "internal error"));
      }
      if (!ex->started()) ex->send(app.error_response(500, "internal", "the handler gave no response"));
      ex->end_stream();  // no-op after send()
    });
    if (!queued) {
      server_.app.on_event(TransportEvent::kWorkersBusy);
      exchange_->send(server_.app.error_response(503, "server_busy", "every worker is busy; retry shortly"));
    }
  } else {
    exchange_->send(server_.app.error_response(500, "internal", "no handler"));
  }
  watch_peer();
}

void Connection::respond(HttpResponse response, bool close) {
  close_after_ = close_after_ || close;
  exchange_ = std::make_shared<Exchange>(server_, weak_from_this(), head_.method == "HEAD", head_.version != 10,
                                         close_after_, plan_.headers);
  exchange_->send(std::move(response));
}

void Connection::respond_error(int status, const std::string& code, const std::string& message) {
  // After a transport error the request boundary is lost (or the client is too slow): close.
  respond(server_.app.error_response(status, code, message), true);
}

void Connection::watch_peer() {
  // Not a read: the bytes (a pipelined request) stay in the socket until this response is out.
  socket_.async_wait(tcp::socket::wait_read, [self = shared_from_this(), ex = exchange_](beast::error_code ec) {
    if (ec || self->exchange_ != ex || self->closed_) return;
    char byte;
    const ssize_t n = ::recv(self->socket_.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0) {
      ex->peer_closed();  // EOF: a half-closed client or a closed one; the writer probes
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      self->watch_peer();
    } else if (n < 0) {
      ex->peer_reset();  // reset: gone for sure
      self->flush(ex);
    }
    // n > 0: the next request is arriving, so the client is there; stop watching.
  });
}

void Connection::flush(const std::shared_ptr<Exchange>& ex) {
  if (ex != exchange_ || write_active_ || closed_) return;
  if (ex->gone()) {
    // Nothing more reaches this client; close now so it sees the end, and forget the exchange
    // once its handler has finished with it. take() first: it drops what was queued and lets
    // the handler's end_stream() / send() post the flush that closes (it posts only when no
    // flush is outstanding, and one posted while the failed write was pending was never taken:
    // without this the connection, and the request's admission with its helper slot, stayed
    // until the server stopped).
    bool ended = false;
    ex->take(&ended);
    beast::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    if (ended) close();
    return;
  }
  bool ended = false;
  writing_ = ex->take(&ended);
  if (writing_.empty()) {
    if (ended) finish_exchange();
    return;
  }
  std::vector<net::const_buffer> buffers;
  buffers.reserve(writing_.size());
  for (const Piece& p : writing_) buffers.push_back(p.buffer());
  write_active_ = true;
  write_timer_.expires_after(server_.limits.write_timeout);
  write_timer_.async_wait([self = shared_from_this(), id = ++write_timer_id_](beast::error_code e) {
    if (e || id != self->write_timer_id_) return;
    self->server_.app.on_event(TransportEvent::kTimeout);
    beast::error_code ignored;
    self->socket_.cancel(ignored);  // the write ends with an error: the client counts as gone
  });
  net::async_write(socket_, buffers, [self = shared_from_this(), ex](beast::error_code e, size_t n) {
    ++self->write_timer_id_;
    self->write_timer_.cancel();
    self->write_active_ = false;
    self->writing_.clear();
    ex->sent(n, !e);
    self->flush(ex);
  });
}

void Connection::finish_exchange() {
  const bool close_now = exchange_->closes() || close_after_ || server_.stopping;
  exchange_.reset();
  plan_ = RequestPlan();  // releases the request's admission
  beast::error_code ignored;
  socket_.cancel(ignored);  // ends the peer watch
  ++served_;
  if (close_now) {
    linger_close();
  } else {
    read_head();
  }
}

void Connection::on_stop() {
  // Waiting for (the rest of) a head, or refusing: nothing is owed to this client.
  if (!exchange_ && !lingering_) close();
}

void Connection::linger_close() {
  if (closed_ || lingering_) return;
  lingering_ = true;
  server_.release_client_slot(*this);
  beast::error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_send, ignored);
  arm_read_timer(kLingerTime);
  linger_read();
}

void Connection::linger_read() {
  socket_.async_read_some(net::buffer(server_.scratch), [self = shared_from_this()](beast::error_code ec, size_t n) {
    if (self->closed_) return;
    self->lingered_bytes_ += n;
    if (ec || self->lingered_bytes_ > kLingerBytes) {
      self->close();
    } else {
      self->linger_read();
    }
  });
}

void Connection::close() {
  if (closed_) return;
  closed_ = true;
  disarm_read_timer();
  ++write_timer_id_;
  write_timer_.cancel();
  beast::error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  plan_ = RequestPlan();
  if (!lingering_) server_.release_client_slot(*this);
  server_.closed(*this);
}

}  // namespace

// ---------------------------------------------------------------- HttpTransport

struct HttpTransport::Impl : Server {
  using Server::Server;
};

HttpTransport::HttpTransport(HttpApplication& app, TransportLimits limits, ListeningSocket socket)
    : impl_(std::make_unique<Impl>(app, limits, std::move(socket))) {}

HttpTransport::~HttpTransport() { stop(); }

int HttpTransport::port() const { return impl_->port; }

void HttpTransport::run() { impl_->run(); }

void HttpTransport::stop() { impl_->stop(); }

}  // namespace edgellm::server
