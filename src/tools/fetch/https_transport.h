// The CLI's and the server's cloud transport (runtime/cloud_transport.h) over libcurl: one
// OpenAI chat-completions POST per call to the tier's endpoint, certificates verified. Tool builds
// only — on a phone the app passes a transport built on the platform's own HTTP stack.
//
//   https://HOST[:PORT][/base]   certificate and host name verified against the system's CA
//                                bundle, or `ca_file` (a private CA); a self-signed certificate
//                                is refused unless `insecure_tls` (named as what it is)
//   http://HOST[:PORT]           only to loopback (127.0.0.0/8, ::1, localhost), or with
//                                `allow_http` (the key and the conversation cross the network
//                                in the clear)
// The base may hold a path prefix ("https://api.example.com/v1" or without /v1: both end in
// .../v1/chat/completions).
//
// Calls run on a small pool of worker threads (never on the router thread), each bounded by
// the router's timeout plus a margin; the destructor aborts the calls in flight and joins.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/cloud_transport.h"

namespace edgellm {

struct CloudEndpoint {
  std::string url;  // base URL as above
  std::string key;  // bearer key; empty: none
};

struct HttpsTransportOptions {
  std::map<std::string, CloudEndpoint> tiers;  // "small", "large"
  std::string ca_file;       // PEM bundle to trust instead of the system's
  bool insecure_tls = false; // do not verify certificates (testing only)
  bool allow_http = false;   // plain http:// to a non-loopback host
  long timeout_ms = 60000;   // whole call; the router gives up earlier by its own timeout
  int workers = 4;
};

class HttpsTransport final : public CloudTransport {
 public:
  // Throws Error(kInvalidArgument) for a URL that is neither https:// nor an allowed http://.
  explicit HttpsTransport(HttpsTransportOptions options);
  ~HttpsTransport() override;
  HttpsTransport(const HttpsTransport&) = delete;
  HttpsTransport& operator=(const HttpsTransport&) = delete;

  void send(CloudCall call, std::function<void(CloudReply)> done) override;

  // The same check as the constructor's, for one URL (the CLI validates flags before loading).
  static void check_url(const std::string& url, bool allow_http);
  // Synchronous, for tests: one POST of body to url + "/v1/chat/completions".
  CloudReply post(const CloudEndpoint& endpoint, const std::string& body) const;

 private:
  struct Job {
    CloudCall call;
    std::function<void(CloudReply)> done;
  };
  void work();

  HttpsTransportOptions options_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job> jobs_;
  bool stopping_ = false;
  std::atomic<bool> abort_{false};  // read by libcurl's progress callback
  std::vector<std::thread> workers_;
};

}  // namespace edgellm
