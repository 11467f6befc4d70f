// A server to test, and a raw HTTP/1.1 client that sends exactly the bytes a test writes (what
// an attacker would send; no library client tidies it up) — for tests/server/test_http_hardening.cpp
// and test_hostile_mix.cpp.
//
// The server runs in the test process (HttpServer on its own Runtime), or, when
// $EDGELLM_TEST_SERVE_BIN names an `edgellm serve` binary, as that binary in a child process:
// the same cases then run against any build of the server (an older one, to show what a test
// catches) and its memory is that process's own. Cases that need knobs the CLI has no flag for
// skip in that mode, saying so.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "model/model.h"
#include "runtime/runtime.h"
#include "server/http_message.h"
#include "server/http_server.h"
#include "server/server_options.h"
#include "service/inference_service.h"
#include "support/test_env.h"

namespace edgellm::server::test {

using Clock = std::chrono::steady_clock;

struct ServeConfig {
  std::string model = "stories260K.gguf";
  int32_t parallel = 2;
  int32_t queued = 2;
  int32_t n_ctx = 512;
  ServerOptions options;      // port and host are set by the harness
  bool needs_in_process = false;  // uses ServerOptions fields with no `edgellm serve` flag
};

// kB of a /proc/<pid>/status line ("VmRSS", "VmHWM"); -1 when unreadable.
inline long proc_status_kib(pid_t pid, const char* key) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  const std::string want = std::string(key) + ":";
  while (std::getline(f, line)) {
    if (line.rfind(want, 0) == 0) return std::atol(line.c_str() + want.size());
  }
  return -1;
}

// The `edgellm serve` binary to test instead of an in-process server; "" for in-process.
inline std::string serve_binary() {
  const char* b = std::getenv("EDGELLM_TEST_SERVE_BIN");
  return b != nullptr ? b : "";
}

class TestServer {
 public:
  explicit TestServer(ServeConfig c) : config_(std::move(c)) {
    if (!serve_binary().empty()) {
      if (config_.needs_in_process) throw std::runtime_error("needs an in-process server");
      spawn();
    } else {
      RuntimeParams rp;
      rp.model_path = edgellm::test::shared_model(config_.model);
      ServiceParams& sp = rp.service;
      sp.context.n_ctx = config_.n_ctx;
      sp.context.n_seq_max = config_.parallel;
      sp.context.kv_type = TensorType::F32;
      sp.max_queued = config_.queued;
      runtime_ = std::make_unique<Runtime>(std::move(rp));
      service_ = runtime_->service();  // no swap here: the one service throughout
      ServerOptions so = config_.options;
      so.port = 0;
      so.host = "127.0.0.1";
      http_ = std::make_unique<HttpServer>(*runtime_, so);
      port_ = http_->bind();
      thread_ = std::thread([this] { http_->serve(); });
    }
  }
  ~TestServer() {
    if (http_) {
      http_->stop();
      thread_.join();
      runtime_->shutdown();
    }
    if (child_ > 0) {
      ::kill(child_, SIGTERM);
      int status = 0;
      ::waitpid(child_, &status, 0);
      if (log_thread_.joinable()) log_thread_.join();
    }
  }
  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;

  int port() const { return port_; }
  bool external() const { return child_ > 0; }
  // The process whose memory is the server's.
  pid_t pid() const { return child_ > 0 ? child_ : ::getpid(); }
  InferenceService* service() { return service_.get(); }
  HttpServer* http() { return http_.get(); }
  std::string log() {
    std::lock_guard<std::mutex> lock(log_mutex_);
    return log_;
  }

 private:
  void spawn() {
    const ServerOptions& o = config_.options;
    std::vector<std::string> args = {serve_binary(), "serve", "-m", edgellm::test::shared_model(config_.model),
                                     "--host", "127.0.0.1", "--port", "0", "--no-warmup",
                                     "-np", std::to_string(config_.parallel), "--max-queued",
                                     std::to_string(config_.queued), "-c", std::to_string(config_.n_ctx),
                                     "--kv-type", "f32"};
    if (!o.api_key.empty()) args.insert(args.end(), {"--api-key", o.api_key});
    if (!o.cors_origin.empty()) args.insert(args.end(), {"--cors-origin", o.cors_origin});
    if (!o.allowed_hosts.empty()) {
      std::string hosts;
      for (const std::string& h : o.allowed_hosts) hosts += (hosts.empty() ? "" : ",") + h;
      args.insert(args.end(), {"--allowed-hosts", hosts});
    }
    const ServerOptions defaults;
    if (o.max_client_connections != defaults.max_client_connections) {
      args.insert(args.end(), {"--max-client-connections", std::to_string(o.max_client_connections)});
    }
    if (o.max_body_bytes != defaults.max_body_bytes) {
      args.insert(args.end(), {"--max-body-kib", std::to_string(o.max_body_bytes >> 10)});
    }
    int err[2];
    if (::pipe2(err, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
    child_ = ::fork();
    if (child_ == 0) {
      ::dup2(err[1], 2);
      const int devnull = ::open("/dev/null", O_RDWR);
      ::dup2(devnull, 0);
      ::dup2(devnull, 1);
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(err[1]);
    // Its stderr is read to the end (a full pipe would block the server); the start line names the port.
    log_thread_ = std::thread([this, fd = err[0]] {
      char buf[4096];
      for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) > 0;) {
        std::lock_guard<std::mutex> lock(log_mutex_);
        log_.append(buf, static_cast<size_t>(n));
        log_cv_.notify_all();
      }
      ::close(fd);
      std::lock_guard<std::mutex> lock(log_mutex_);
      eof_ = true;
      log_cv_.notify_all();
    });
    const std::string marker = "on http://127.0.0.1:";
    bool ok = false;
    {
      std::unique_lock<std::mutex> lock(log_mutex_);
      ok = log_cv_.wait_for(lock, std::chrono::seconds(60), [&] {
        const size_t at = log_.find(marker);
        if (at != std::string::npos && log_.find(' ', at + marker.size()) != std::string::npos) {
          port_ = std::atoi(log_.c_str() + at + marker.size());
          return true;
        }
        return eof_;
      });
    }
    if (!ok || port_ <= 0) {
      ::kill(child_, SIGKILL);
      ::waitpid(child_, nullptr, 0);
      child_ = -1;
      log_thread_.join();
      throw std::runtime_error("edgellm serve did not start: " + log());
    }
  }

  ServeConfig config_;
  std::unique_ptr<Runtime> runtime_;
  std::shared_ptr<InferenceService> service_;
  std::unique_ptr<HttpServer> http_;
  std::thread thread_;
  int port_ = -1;
  pid_t child_ = -1;
  std::thread log_thread_;
  std::mutex log_mutex_;
  std::condition_variable log_cv_;  // more of the child's stderr arrived
  std::string log_;
  bool eof_ = false;
};

// One parsed response.
struct RawResponse {
  int status = -1;  // -1: the connection closed (or timed out) before a whole response
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  bool chunked = false;
  std::string failure;  // with status -1: what ended it ("connect: ...", "closed by the server", "timed out")

  std::string header(const std::string& name) const {
    for (const auto& [n, v] : headers) {
      if (iequals(n, name)) return v;
    }
    return {};
  }
  bool has_header(const std::string& name) const {
    for (const auto& h : headers) {
      if (iequals(h.first, name)) return true;
    }
    return false;
  }
};

// A raw TCP connection to the server.
class Conn {
 public:
  // source: the local address to connect from ("127.0.0.2": another client on loopback).
  // rcvbuf > 0: a small receive buffer, so a client that does not read stalls the server's writes.
  explicit Conn(int port, const char* source = nullptr, int timeout_ms = 10000, int rcvbuf = 0)
      : timeout_ms_(timeout_ms) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (rcvbuf > 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    if (source != nullptr) {
      sockaddr_in s{};
      s.sin_family = AF_INET;
      ::inet_pton(AF_INET, source, &s.sin_addr);
      ::bind(fd_, reinterpret_cast<sockaddr*>(&s), sizeof(s));
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ok_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    if (!ok_) error_ = std::string("connect: ") + std::strerror(errno);
  }
  ~Conn() { close(); }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  bool ok() const { return ok_; }
  bool send(std::string_view s) {
    while (!s.empty()) {
      const ssize_t n = ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL);
      if (n <= 0) {
        error_ = std::string("send: ") + std::strerror(errno);
        return false;
      }
      s.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  void shutdown_write() { ::shutdown(fd_, SHUT_WR); }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  // The status of the next head on this connection, read alone (an interim "100 Continue"); -1
  // when none came.
  int read_interim_status() {
    size_t head_end;
    while ((head_end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (!fill()) return -1;
    }
    const int status = buf_.rfind("HTTP/1.", 0) == 0 && head_end >= 12 ? std::atoi(buf_.c_str() + 9) : -1;
    buf_.erase(0, head_end + 4);
    return status;
  }

  // The next response on this connection (Content-Length, chunked, or until close); with status -1
  // and its failure when none came whole.
  RawResponse read_response() {
    RawResponse r = read_whole_response();
    if (r.status == -1) {
      sockaddr_in local{};
      socklen_t len = sizeof(local);
      ::getsockname(fd_, reinterpret_cast<sockaddr*>(&local), &len);
      r.failure = error_ + " after " + std::to_string(received_) + " bytes received (client port " +
                  std::to_string(ntohs(local.sin_port)) + ")";
    }
    return r;
  }

  // Why the connection failed: connect, send, or the last read ("" while none did).
  const std::string& error() const { return error_; }

 private:
  RawResponse read_whole_response() {
    RawResponse r;
    size_t head_end;
    while ((head_end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (!fill()) return r;
    }
    const std::string head = buf_.substr(0, head_end);
    buf_.erase(0, head_end + 4);
    if (head.rfind("HTTP/1.", 0) != 0 || head.size() < 12) {
      error_ = "not a response head: \"" + head.substr(0, 120) + "\"";
      return r;
    }
    const int status = std::atoi(head.c_str() + 9);
    size_t pos = head.find("\r\n");
    while (pos != std::string::npos && pos + 2 < head.size()) {
      const size_t end = head.find("\r\n", pos + 2);
      const std::string line = head.substr(pos + 2, end == std::string::npos ? std::string::npos : end - pos - 2);
      const size_t colon = line.find(':');
      if (colon != std::string::npos) {
        size_t v = colon + 1;
        while (v < line.size() && line[v] == ' ') ++v;
        r.headers.emplace_back(line.substr(0, colon), line.substr(v));
      }
      pos = end;
    }
    if (status == 100) return read_whole_response();  // "100 Continue": the answer follows
    r.chunked = iequals(r.header("Transfer-Encoding"), "chunked");
    if (status == 204 || status == 304) {
      r.status = status;
      return r;
    }
    if (r.has_header("Content-Length")) {
      const size_t n = std::strtoull(r.header("Content-Length").c_str(), nullptr, 10);
      while (buf_.size() < n) {
        if (!fill()) return r;
      }
      r.body = buf_.substr(0, n);
      buf_.erase(0, n);
    } else if (r.chunked) {
      for (;;) {
        size_t line_end;
        while ((line_end = buf_.find("\r\n")) == std::string::npos) {
          if (!fill()) return r;
        }
        const size_t n = std::strtoull(buf_.c_str(), nullptr, 16);
        while (buf_.size() < line_end + 2 + n + 2) {
          if (!fill()) return r;
        }
        r.body.append(buf_, line_end + 2, n);
        buf_.erase(0, line_end + 2 + n + 2);
        if (n == 0) break;
      }
    } else {
      while (fill()) {
      }
      if (!peer_closed_) return r;  // timed out: not the whole body
      r.body = std::move(buf_);
      buf_.clear();
    }
    r.status = status;
    return r;
  }

 public:
  // True when the server closed this connection within wait_ms (reads and drops anything sent).
  bool closed_by_peer(int wait_ms) {
    const Clock::time_point end = Clock::now() + std::chrono::milliseconds(wait_ms);
    while (!peer_closed_ && Clock::now() < end) {
      pollfd p{fd_, POLLIN, 0};
      const int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count());
      if (::poll(&p, 1, std::max(left, 1)) <= 0) continue;
      char tmp[4096];
      const ssize_t n = ::recv(fd_, tmp, sizeof(tmp), 0);
      if (n <= 0) peer_closed_ = true;
    }
    return peer_closed_;
  }

  // Bytes buffered after the last response (a pipelined answer's start, or nothing).
  const std::string& leftover() const { return buf_; }

 private:
  bool fill() {
    if (peer_closed_ || fd_ < 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms_) <= 0) {
      error_ = "timed out after " + std::to_string(timeout_ms_) + " ms";
      return false;
    }
    char tmp[65536];
    const ssize_t n = ::recv(fd_, tmp, sizeof(tmp), 0);
    if (n <= 0) {
      error_ = n == 0 ? std::string("closed by the server") : std::string("recv: ") + std::strerror(errno);
      peer_closed_ = true;
      return false;
    }
    received_ += static_cast<size_t>(n);
    buf_.append(tmp, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
  bool ok_ = false;
  bool peer_closed_ = false;
  int timeout_ms_;
  std::string buf_;
  size_t received_ = 0;  // bytes read on this connection
  std::string error_;
};

// "POST <path> HTTP/1.1" with Host, Content-Length and the extra header lines ("Name: value\r\n"...).
inline std::string post_request(const std::string& path, const std::string& body, const std::string& extra = "",
                                const std::string& host = "127.0.0.1") {
  return "POST " + path + " HTTP/1.1\r\nHost: " + host + "\r\n" + extra +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

inline std::string get_request(const std::string& path, const std::string& extra = "",
                               const std::string& host = "127.0.0.1") {
  return "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\n" + extra + "\r\n";
}

// One request on a fresh connection.
inline RawResponse round_trip(int port, const std::string& request, int timeout_ms = 20000) {
  Conn c(port, nullptr, timeout_ms);
  if (!c.ok() || !c.send(request)) {
    RawResponse failed;
    failed.failure = c.error();
    return failed;
  }
  return c.read_response();
}

}  // namespace edgellm::server::test
