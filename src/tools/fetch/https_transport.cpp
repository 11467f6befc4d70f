#include "tools/fetch/https_transport.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <utility>

#include "core/error.h"
#include "core/log.h"
#include "tools/fetch/curl_global.h"

namespace edgellm {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The host of "scheme://[user@]host[:port][/path]" ("[::1]" -> "::1").
std::string host_of(const std::string& url) {
  const size_t start = url.find("://");
  std::string rest = url.substr(start == std::string::npos ? 0 : start + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  if (const size_t at = rest.rfind('@'); at != std::string::npos) rest = rest.substr(at + 1);
  if (!rest.empty() && rest[0] == '[') return rest.substr(1, rest.find(']') - 1);
  return rest.substr(0, rest.find(':'));
}

bool loopback_host(const std::string& host) {
  const std::string h = lower(host);
  return h == "localhost" || h == "::1" || h.rfind("127.", 0) == 0;
}

// ".../v1/chat/completions" from a base with or without "/v1".
std::string completions_url(std::string base) {
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (base.size() >= 3 && base.compare(base.size() - 3, 3, "/v1") == 0) return base + "/chat/completions";
  return base + "/v1/chat/completions";
}

size_t append_body(char* data, size_t size, size_t n, void* user) {
  auto* out = static_cast<std::string*>(user);
  const size_t len = size * n;
  if (out->size() + len > (size_t{16} << 20)) return 0;  // an answer over 16 MiB is not a chat answer
  out->append(data, len);
  return len;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<std::atomic<bool>*>(user)->load() ? 1 : 0;
}

}  // namespace

void HttpsTransport::check_url(const std::string& url, bool allow_http) {
  const std::string l = lower(url);
  if (l.rfind("https://", 0) == 0) {
    require(!host_of(url).empty(), ErrorCode::kInvalidArgument, "cloud URL '" + url + "' has no host");
    return;
  }
  if (l.rfind("http://", 0) == 0) {
    const std::string host = host_of(url);
    require(!host.empty(), ErrorCode::kInvalidArgument, "cloud URL '" + url + "' has no host");
    require(allow_http || loopback_host(host), ErrorCode::kInvalidArgument,
            "cloud URL '" + url + "': plain http:// only to a loopback address (the key and the conversation "
            "would cross the network unencrypted); use https:// or allow plain HTTP explicitly");
    return;
  }
  throw Error(ErrorCode::kInvalidArgument, "cloud URL '" + url + "': expected https://HOST or http://127.0.0.1:PORT");
}

HttpsTransport::HttpsTransport(HttpsTransportOptions options) : options_(std::move(options)) {
  for (const auto& [tier, ep] : options_.tiers) check_url(ep.url, options_.allow_http);
  require(options_.workers >= 1 && options_.workers <= 64, ErrorCode::kInvalidArgument, "cloud transport: 1-64 workers");
  curl_global_init_once();
  for (int i = 0; i < options_.workers; ++i) workers_.emplace_back([this] { work(); });
}

HttpsTransport::~HttpsTransport() {
  std::deque<Job> left;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    left.swap(jobs_);
  }
  abort_.store(true);  // calls in flight end at libcurl's next progress check
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
  for (Job& j : left) {
    CloudReply r;
    r.error = "the transport was shut down";
    j.done(std::move(r));
  }
}

void HttpsTransport::send(CloudCall call, std::function<void(CloudReply)> done) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!stopping_) {
      jobs_.push_back(Job{std::move(call), std::move(done)});
      wake_.notify_one();
      return;
    }
  }
  CloudReply r;
  r.error = "the transport was shut down";
  done(std::move(r));
}

void HttpsTransport::work() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    CloudReply reply;
    const auto it = options_.tiers.find(job.call.tier);
    if (it == options_.tiers.end()) {
      reply.error = "no endpoint for the cloud tier '" + job.call.tier + "'";
    } else {
      reply = post(it->second, job.call.body);
    }
    job.done(std::move(reply));
  }
}

CloudReply HttpsTransport::post(const CloudEndpoint& endpoint, const std::string& body) const {
  CloudReply reply;
  CURL* curl = curl_easy_init();
  if (curl == nullptr) {
    reply.error = "libcurl could not start a call";
    return reply;
  }
  const std::string url = completions_url(endpoint.url);
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  if (!endpoint.key.empty()) headers = curl_slist_append(headers, ("Authorization: Bearer " + endpoint.key).c_str());
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reply.body);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, options_.timeout_ms);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, std::min<long>(options_.timeout_ms, 15000));
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, const_cast<std::atomic<bool>*>(&abort_));
  // Redirects are not followed: a cloud endpoint that moves must be reconfigured, not chased
  // (a redirect could take the key to another host).
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, options_.allow_http || loopback_host(host_of(url)) ? "http,https" : "https");
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, options_.insecure_tls ? 0L : 1L);
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, options_.insecure_tls ? 0L : 2L);
  if (!options_.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, options_.ca_file.c_str());
  const CURLcode rc = curl_easy_perform(curl);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  if (rc != CURLE_OK) {
    reply.status = 0;
    reply.body.clear();
    reply.error = errbuf[0] != '\0' ? std::string(errbuf) : std::string(curl_easy_strerror(rc));
    if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE || rc == CURLE_SSL_CONNECT_ERROR) {
      reply.error = "TLS: " + reply.error + " (the certificate is not trusted; give the CA bundle that signed it)";
    }
    return reply;
  }
  reply.status = static_cast<int>(status);
  return reply;
}

}  // namespace edgellm
