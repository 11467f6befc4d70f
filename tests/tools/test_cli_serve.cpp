// `edgellm serve` start-up, as a user meets it (issue 42 b): a port that is in use is reported at
// once, naming the port and what to do, before the model is loaded (the model given here does
// not exist: had the server loaded it first, the error would be about the file); a public
// --host without a key and a bad --allowed-hosts run are refused the same way.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "support/cli_runner.h"
#include "support/test_env.h"

namespace edgellm {
namespace {

using test::run_cli;

// A listening socket on a free loopback port: the port is in use while it lives.
class BusyPort {
 public:
  BusyPort() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    ::listen(fd_, 4);
    socklen_t len = sizeof(a);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~BusyPort() { ::close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(CliServe, BusyPortIsReportedBeforeTheModelLoads) {
  BusyPort busy;
  const std::string port = std::to_string(busy.port());
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = run_cli({"serve", "-m", test::temp_dir() + "/no-such-model.gguf", "--port", port});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("cannot listen on 127.0.0.1:" + port), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("port " + port + " is already in use"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--port"), std::string::npos) << r.err;  // what to do
  EXPECT_EQ(r.err.find("no-such-model"), std::string::npos) << "the model was looked at first: " << r.err;
  std::printf("busy port reported in %.2f s\n", seconds);

  // The same model path on a free port: now the model is the error.
  const auto free_port = run_cli({"serve", "-m", test::temp_dir() + "/no-such-model.gguf", "--port", "0"});
  EXPECT_NE(free_port.exit_code, 0);
  EXPECT_NE(free_port.err.find("no-such-model"), std::string::npos) << free_port.err;

  // A public address without a key is refused before anything is bound or loaded.
  const auto open = run_cli({"serve", "-m", test::temp_dir() + "/no-such-model.gguf", "--host", "0.0.0.0",
                             "--port", port});
  EXPECT_NE(open.exit_code, 0);
  EXPECT_NE(open.err.find("--api-key"), std::string::npos) << open.err;
}

}  // namespace
}  // namespace edgellm
