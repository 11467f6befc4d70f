// fetch/http_download.h + registry install against a small HTTP/1.1 server on 127.0.0.1 started
// by the test, which misbehaves on purpose: drops the connection at random points, answers 500,
// ignores Range, serves a corrupted byte, or 404. The download must resume and verify; a bad
// SHA-256 must be refused with the old model still current; a full disk (a small tmpfs) must
// leave the registry as it was.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <functional>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/sha256.h"
#include "registry/model_registry.h"
#include "support/small_disk.h"
#include "support/test_env.h"
#include "tools/fetch/http_download.h"

namespace edgellm {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// What the server does with request number i (0-based).
struct Behaviour {
  enum Kind { kNormal, kDropAfter, kStatus500, kIgnoreRange, kCorrupt, kNotFound } kind = kNormal;
  size_t drop_after = 0;  // body bytes sent before the connection is closed (kDropAfter)
};

class FaultyServer {
 public:
  FaultyServer(std::string body, std::function<Behaviour(int)> plan) : body_(std::move(body)), plan_(std::move(plan)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(fd_, 16), 0);
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~FaultyServer() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/model.gguf"; }
  int requests() const { return requests_; }
  std::vector<uint64_t> range_starts() {
    std::lock_guard<std::mutex> lock(mutex_);
    return ranges_;
  }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      handle(c);
      ::close(c);
    }
  }
  void send_all(int c, const char* data, size_t n) {
    while (n > 0) {
      const ssize_t w = ::send(c, data, n, MSG_NOSIGNAL);
      if (w <= 0) return;
      data += w;
      n -= static_cast<size_t>(w);
    }
  }
  void handle(int c) {
    std::string req;
    char buf[4096];
    while (req.find("\r\n\r\n") == std::string::npos && req.size() < 65536) {
      const ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) return;
      req.append(buf, static_cast<size_t>(n));
    }
    const int index = requests_++;
    const Behaviour b = plan_(index);
    uint64_t start = 0;
    bool ranged = false;
    std::string lower = req;
    for (auto& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (const size_t r = lower.find("\r\nrange: bytes="); r != std::string::npos) {
      ranged = true;
      start = std::strtoull(lower.c_str() + r + 15, nullptr, 10);
      std::lock_guard<std::mutex> lock(mutex_);
      ranges_.push_back(start);
    }
    std::string head;
    if (b.kind == Behaviour::kStatus500 || b.kind == Behaviour::kNotFound) {
      const std::string msg = b.kind == Behaviour::kNotFound ? "not found" : "overloaded";
      head = std::string(b.kind == Behaviour::kNotFound ? "HTTP/1.1 404 Not Found" : "HTTP/1.1 500 Internal Server Error") +
             "\r\nContent-Length: " + std::to_string(msg.size()) + "\r\nConnection: close\r\n\r\n" + msg;
      send_all(c, head.data(), head.size());
      return;
    }
    std::string body = body_;
    if (b.kind == Behaviour::kCorrupt) body[body.size() / 3] ^= 0x20;
    if (ranged && b.kind != Behaviour::kIgnoreRange && start < body.size()) {
      head = "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes " + std::to_string(start) + "-" +
             std::to_string(body.size() - 1) + "/" + std::to_string(body.size()) +
             "\r\nContent-Length: " + std::to_string(body.size() - start) + "\r\nConnection: close\r\n\r\n";
    } else if (ranged && b.kind != Behaviour::kIgnoreRange) {
      head = "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */" + std::to_string(body.size()) +
             "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
      send_all(c, head.data(), head.size());
      return;
    } else {
      start = 0;
      head = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
    }
    send_all(c, head.data(), head.size());
    size_t n = body.size() - start;
    if (b.kind == Behaviour::kDropAfter) n = std::min(n, b.drop_after);
    send_all(c, body.data() + start, n);
    if (b.kind == Behaviour::kDropAfter) ::shutdown(c, SHUT_RDWR);  // mid-body: the client sees a short read
  }

  std::string body_;
  std::function<Behaviour(int)> plan_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> requests_{0};
  std::mutex mutex_;
  std::vector<uint64_t> ranges_;
  std::thread thread_;
};

DownloadOptions fast_retries() {
  DownloadOptions o;
  o.backoff_ms = 5;
  o.max_attempts = 10;
  o.stall_timeout_s = 5;
  return o;
}

ModelManifest named(const std::string& version) {
  ModelManifest m;
  m.name = "m";
  m.version = version;
  return m;
}

TEST(HttpDownload, ResumesAfterDropsAtRandomPointsAndInstalls) {
  const std::string body = read_all(test::shared_model("stories260K.gguf"));
  const std::string sha = Sha256::hex_of(body);
  std::mt19937 rng(20261202);
  std::vector<size_t> drops;
  for (int i = 0; i < 5; ++i) drops.push_back(1 + rng() % (body.size() / 4));  // each attempt gets a bit further
  FaultyServer server(body, [&](int i) {
    Behaviour b;
    if (i < static_cast<int>(drops.size())) {
      b.kind = Behaviour::kDropAfter;
      b.drop_after = drops[static_cast<size_t>(i)];
    }
    return b;
  });
  const std::string root = test::temp_dir() + "/reg-dl";
  ModelRegistry reg(root);
  reg.install_file(test::shared_testdata("vocab/ggml-vocab-bert-bge.gguf"), named("1"), {});
  const std::string part = reg.tmp_dir() + "/m@2.part";
  DownloadOptions o = fast_retries();
  uint64_t last = 0;
  o.progress = [&](uint64_t done, uint64_t) {
    EXPECT_GE(done, last);
    last = done;
    return true;
  };
  const DownloadResult r = download_resumable(server.url(), part, o);
  EXPECT_EQ(r.bytes, body.size());
  EXPECT_EQ(r.attempts, 6);
  EXPECT_EQ(r.resumed, 5);
  EXPECT_EQ(read_all(part), body);
  // Each resume asked for exactly the bytes it had: the sum of the drops so far.
  const auto ranges = server.range_starts();
  ASSERT_EQ(ranges.size(), 5u);
  uint64_t have = 0;
  for (size_t i = 0; i < ranges.size(); ++i) {
    have += drops[i];
    EXPECT_EQ(ranges[i], have);
  }
  ModelRegistry::InstallOptions io;
  io.expected_sha256 = sha;
  const ModelManifest m = reg.install_moved(part, named("2"), io);
  EXPECT_EQ(reg.current("m")->version, "2");
  EXPECT_EQ(m.sha256, sha);
  EXPECT_FALSE(path_exists(part));
}

TEST(HttpDownload, ServerIgnoringRangeRestartsAnd500sAreRetried) {
  const std::string body = read_all(test::shared_model("stories260K.gguf"));
  FaultyServer server(body, [&](int i) {
    Behaviour b;
    if (i == 0 || i == 1) b.kind = Behaviour::kStatus500;
    if (i == 2) {
      b.kind = Behaviour::kDropAfter;
      b.drop_after = 1000;
    }
    if (i == 3) b.kind = Behaviour::kIgnoreRange;  // 200 with the whole body to a range request
    return b;
  });
  const std::string part = test::temp_dir() + "/ignore-range.part";
  const DownloadResult r = download_resumable(server.url(), part, fast_retries());
  EXPECT_EQ(r.attempts, 4);
  EXPECT_EQ(r.restarted, 1);
  EXPECT_EQ(read_all(part), body);
}

TEST(HttpDownload, PersistentFailureKeepsThePartAndTheOldModel) {
  const std::string body = read_all(test::shared_model("stories260K.gguf"));
  std::atomic<bool> healthy{false};
  FaultyServer server(body, [&](int i) {
    Behaviour b;
    if (!healthy) {
      b.kind = i == 0 ? Behaviour::kDropAfter : Behaviour::kStatus500;
      b.drop_after = 4096;
    }
    return b;
  });
  const std::string root = test::temp_dir() + "/reg-500";
  ModelRegistry reg(root);
  reg.install_file(test::shared_testdata("vocab/ggml-vocab-bert-bge.gguf"), named("1"), {});
  const std::string part = reg.tmp_dir() + "/m@2.part";
  DownloadOptions o = fast_retries();
  o.max_attempts = 3;
  try {
    download_resumable(server.url(), part, o);
    ADD_FAILURE() << "a server answering 500 cannot complete a download";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("HTTP 500"), std::string::npos) << e.what();
  }
  EXPECT_EQ(server.requests(), 3);
  EXPECT_EQ(file_size_or_minus_one(part), 4096) << "the partial file is kept for the next run";
  EXPECT_EQ(reg.current("m")->version, "1");
  // The next run (the server is back) resumes from 4096 instead of starting over.
  healthy = true;
  const DownloadResult r = download_resumable(server.url(), part, fast_retries());
  EXPECT_EQ(r.resumed, 1);
  EXPECT_EQ(server.range_starts().back(), 4096u);
  EXPECT_EQ(read_all(part), body);
}

TEST(HttpDownload, CorruptedBodyIsRejectedAndOldModelServes) {
  const std::string body = read_all(test::shared_model("stories260K.gguf"));
  FaultyServer server(body, [](int) { return Behaviour{Behaviour::kCorrupt, 0}; });
  const std::string root = test::temp_dir() + "/reg-corrupt";
  ModelRegistry reg(root);
  reg.install_file(test::shared_testdata("vocab/ggml-vocab-bert-bge.gguf"), named("1"), {});
  const std::string part = reg.tmp_dir() + "/m@2.part";
  download_resumable(server.url(), part, fast_retries());
  ModelRegistry::InstallOptions io;
  io.expected_sha256 = Sha256::hex_of(body);
  try {
    reg.install_moved(part, named("2"), io);
    ADD_FAILURE() << "a corrupted file was installed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidFile);
    EXPECT_NE(std::string(e.what()).find("SHA-256 mismatch"), std::string::npos);
  }
  EXPECT_EQ(reg.current("m")->version, "1");
  EXPECT_FALSE(reg.get("m", "2"));
  EXPECT_FALSE(path_exists(part)) << "a file that failed verification is not resumed";
}

TEST(HttpDownload, ClientErrorsFailAtOnce) {
  FaultyServer server("x", [](int) { return Behaviour{Behaviour::kNotFound, 0}; });
  const std::string part = test::temp_dir() + "/404.part";
  try {
    download_resumable(server.url(), part, fast_retries());
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("HTTP 404"), std::string::npos);
  }
  EXPECT_EQ(server.requests(), 1);
  EXPECT_THROW(download_resumable("file:///etc/passwd", part), Error);
  EXPECT_THROW(download_resumable("ftp://127.0.0.1/x", part), Error);
  // Nothing listens: connection refused on every attempt, then a clear error.
  DownloadOptions o = fast_retries();
  o.max_attempts = 2;
  try {
    download_resumable("http://127.0.0.1:1/model.gguf", part, o);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
  }
}

TEST(HttpDownload, FullDiskLeavesTheRegistryAsItWas) {
  const std::string mnt = test::temp_dir() + "/small-disk";
  make_dirs(mnt);
  test::SmallDisk disk(mnt, "1200k");
  if (!disk.mounted()) {
    if (disk.ran_in_child()) return;  // ran in a user namespace (its output is above)
    if (test::in_ci()) FAIL() << disk.why();
    GTEST_SKIP() << "NOT CHECKED ON THIS HOST: " << disk.why();
  }
  {
    const std::string body = read_all(test::shared_model("tiny-zh-poems.gguf"));  // 13 MB
    FaultyServer server(body, [](int) { return Behaviour{}; });
    ModelRegistry reg(mnt + "/reg");
    reg.install_file(test::shared_testdata("vocab/ggml-vocab-bert-bge.gguf"), named("1"), {});
    const std::string part = reg.tmp_dir() + "/m@2.part";
    try {
      download_resumable(server.url(), part, fast_retries());
      ADD_FAILURE() << "13 MB fit on a 1200 KiB disk?";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kIo);
      EXPECT_NE(std::string(e.what()).find("No space left"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(path_exists(part));
    EXPECT_EQ(reg.current("m")->version, "1");
    EXPECT_EQ(reg.list().size(), 1u);
    EXPECT_TRUE(reg.verify(*reg.current("m")).ok);
  }
}

}  // namespace
}  // namespace edgellm
