// The server's listening socket, opened on its own so `edgellm serve` can bind before it spends
// seconds loading the model: a busy port is reported at once, naming the port and what to do.
//
// Thread-safety: a value type; one owner.
#pragma once

#include <string>

namespace edgellm::server {

class ListeningSocket {
 public:
  // Binds host:port (port 0: any free one) with SO_REUSEADDR and listens with the system's
  // largest backlog (SOMAXCONN: a burst of clients is queued, not dropped). Throws Error(kIo)
  // whose message names the address and the remedy: the port in use (another server on it),
  // a privileged port, an address this machine does not have, a name that does not resolve.
  static ListeningSocket open(const std::string& host, int port);

  ListeningSocket() = default;
  ListeningSocket(ListeningSocket&& other) noexcept;
  ListeningSocket& operator=(ListeningSocket&& other) noexcept;
  ~ListeningSocket();  // closes the socket unless release()d

  bool valid() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  int family() const { return family_; }  // AF_INET or AF_INET6
  int port() const { return port_; }      // the bound port (the chosen one for port 0)
  // Hands the descriptor over (the transport's acceptor adopts it); this object no longer owns it.
  int release();

 private:
  int fd_ = -1;
  int family_ = 0;
  int port_ = 0;
};

}  // namespace edgellm::server
