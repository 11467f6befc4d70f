#include "server/listening_socket.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/error.h"

namespace edgellm::server {
namespace {

std::string address_text(const std::string& host, int port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

// What went wrong binding host:port, and what the user can do about it.
std::string bind_error(const std::string& host, int port, int err) {
  const std::string where = address_text(host, port);
  switch (err) {
    case EADDRINUSE:
      return "cannot listen on " + where + ": port " + std::to_string(port) +
             " is already in use (another edgellm serve or another server is listening on it): stop that "
             "process, or choose another port with --port N (--port 0 picks a free one)";
    case EACCES:
      return "cannot listen on " + where + ": permission denied (ports below 1024 need privileges): use --port " +
             "8080 or another port above 1023";
    case EADDRNOTAVAIL:
      return "cannot listen on " + where + ": this machine has no address " + host +
             " (use 127.0.0.1 for this machine only, or 0.0.0.0 for every network it is on)";
    default:
      return "cannot listen on " + where + ": " + std::strerror(err);
  }
}

}  // namespace

ListeningSocket ListeningSocket::open(const std::string& host, int port) {
  if (port < 0 || port > 65535) throw Error(ErrorCode::kInvalidArgument, "--port must be in [0, 65535]");
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    throw Error(ErrorCode::kIo, "cannot listen on " + address_text(host, port) + ": cannot resolve '" + host +
                                    "' (" + ::gai_strerror(rc) + ")");
  }
  // The first address that binds ("localhost" may resolve to 127.0.0.1 and ::1); the error of the
  // first that did not, when none does.
  int first_error = 0;
  ListeningSocket s;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      if (first_error == 0) first_error = errno;
      continue;
    }
    // SO_REUSEADDR: a restarted server binds while its old connections sit in TIME_WAIT; a
    // port another socket listens on still fails with EADDRINUSE.
    const int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0) {
      if (first_error == 0) first_error = errno;
      ::close(fd);
      continue;
    }
    sockaddr_storage bound{};
    socklen_t len = sizeof(bound);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
    s.fd_ = fd;
    s.family_ = a->ai_family;
    s.port_ = ntohs(a->ai_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                             : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    break;
  }
  ::freeaddrinfo(found);
  if (!s.valid()) throw Error(ErrorCode::kIo, bind_error(host, port, first_error != 0 ? first_error : EADDRNOTAVAIL));
  return s;
}

ListeningSocket::ListeningSocket(ListeningSocket&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)), family_(o.family_), port_(o.port_) {}

ListeningSocket& ListeningSocket::operator=(ListeningSocket&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
    family_ = o.family_;
    port_ = o.port_;
  }
  return *this;
}

ListeningSocket::~ListeningSocket() {
  if (fd_ >= 0) ::close(fd_);
}

int ListeningSocket::release() { return std::exchange(fd_, -1); }

}  // namespace edgellm::server
