#include "tools/fetch/http_download.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "core/log.h"
#include "tools/fetch/curl_global.h"

namespace edgellm {
namespace {

// State of one attempt, shared with libcurl's callbacks.
struct Attempt {
  int fd = -1;
  uint64_t offset = 0;  // bytes in the file when the attempt started
  uint64_t written = 0;
  uint64_t expected_size = 0;
  long status = 0;
  bool status_checked = false;
  bool restart = false;  // 200 to a range request: truncate and write from 0
  bool bad_range = false;
  int write_errno = 0;
  bool too_large = false;
  bool cancelled = false;
  uint64_t content_range_start = UINT64_MAX;
  uint64_t total = 0;  // from Content-Range / Content-Length
  const DownloadOptions* options = nullptr;
};

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* a = static_cast<Attempt*>(user);
  const size_t len = size * n;
  std::string line(data, len);
  for (auto& c : line) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (line.rfind("http/", 0) == 0) {
    // A status line (a redirect's, then the final one's): the body callback checks it before
    // the first byte is written. Reset what the previous response said.
    const size_t sp = line.find(' ');
    a->status = sp == std::string::npos ? 0 : std::strtol(line.c_str() + sp + 1, nullptr, 10);
    a->status_checked = false;
    a->content_range_start = UINT64_MAX;
    a->total = 0;
  } else if (line.rfind("content-range:", 0) == 0) {
    unsigned long long start = 0, end = 0, total = 0;
    if (std::sscanf(line.c_str(), "content-range: bytes %llu-%llu/%llu", &start, &end, &total) >= 2) {
      a->content_range_start = start;
      a->total = total;
    }
  } else if (line.rfind("content-length:", 0) == 0 && a->total == 0) {
    a->total = std::strtoull(line.c_str() + 15, nullptr, 10);
  }
  return len;
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* a = static_cast<Attempt*>(user);
  const size_t len = size * n;
  if (!a->status_checked) {
    a->status_checked = true;
    if (a->status == 200 && a->offset > 0) {
      a->restart = true;  // the server sent the whole file: start over
      if (::ftruncate(a->fd, 0) != 0 || ::lseek(a->fd, 0, SEEK_SET) != 0) {
        a->write_errno = errno;
        return 0;
      }
      a->offset = 0;
    } else if (a->status == 206 && a->content_range_start != a->offset) {
      a->bad_range = true;
      return 0;
    } else if (a->status != 200 && a->status != 206) {
      return len;  // an error page: ignored, the status decides
    }
  }
  if (a->status != 200 && a->status != 206) return len;
  if (a->expected_size && a->offset + a->written + len > a->expected_size) {
    a->too_large = true;
    return 0;
  }
  for (size_t off = 0; off < len;) {
    const ssize_t w = ::write(a->fd, data + off, len - off);
    if (w < 0) {
      if (errno == EINTR) continue;
      a->write_errno = errno;
      return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
    }
    off += static_cast<size_t>(w);
  }
  a->written += len;
  if (a->options->progress) {
    const uint64_t total = a->status == 206 ? a->total : (a->total ? a->total : a->options->expected_size);
    if (!a->options->progress(a->offset + a->written, total)) {
      a->cancelled = true;
      return 0;
    }
  }
  return len;
}

int64_t file_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
}

}  // namespace

DownloadResult download_resumable(const std::string& url, const std::string& part_path, const DownloadOptions& o) {
  require(url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0, ErrorCode::kInvalidArgument,
          "only http:// and https:// URLs can be downloaded");
  curl_global_init_once();
  DownloadResult result;
  int delay_ms = std::max(1, o.backoff_ms);
  std::string last_error = "no attempt was made";
  for (int attempt = 1; attempt <= std::max(1, o.max_attempts); ++attempt) {
    const int fd = ::open(part_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) throw Error(ErrorCode::kIo, "cannot open '" + part_path + "': " + std::strerror(errno));
    Attempt a;
    a.fd = fd;
    a.offset = static_cast<uint64_t>(file_size(part_path));
    a.expected_size = o.expected_size;
    a.options = &o;
    if (o.expected_size && a.offset == o.expected_size) {
      ::close(fd);
      result.bytes = a.offset;
      return result;  // complete already (an earlier call finished the body)
    }
    CURL* curl = curl_easy_init();
    if (!curl) {
      ::close(fd);
      throw Error(ErrorCode::kOutOfMemory, "curl_easy_init failed");
    }
    char errbuf[CURL_ERROR_SIZE] = {};
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, o.connect_timeout_s);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, o.stall_timeout_s);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &a);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &a);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "edgellm-registry/1");
    const std::string range = std::to_string(a.offset) + "-";
    if (a.offset > 0) curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());
    ++result.attempts;
    if (a.offset > 0) ++result.resumed;
    const CURLcode rc = curl_easy_perform(curl);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(curl);
    const bool fsync_failed = ::fsync(fd) != 0 && a.write_errno == 0;
    const int fsync_errno = errno;
    ::close(fd);
    if (a.restart) {
      ++result.restarted;
      if (a.offset == 0 && result.resumed > 0) --result.resumed;
    }
    if (a.cancelled) throw Error(ErrorCode::kCancelled, "download cancelled");
    if (a.write_errno != 0 || fsync_failed) {
      const int err = a.write_errno ? a.write_errno : fsync_errno;
      ::unlink(part_path.c_str());
      throw Error(ErrorCode::kIo, "cannot write '" + part_path + "': " + std::strerror(err) +
                                      " (the partial download was removed)");
    }
    if (a.too_large) {
      ::unlink(part_path.c_str());
      throw Error(ErrorCode::kIo, "the server sent more than the expected " + std::to_string(o.expected_size) +
                                      " bytes (the partial download was removed)");
    }
    if (rc == CURLE_OK && (status == 200 || status == 206)) {
      result.bytes = static_cast<uint64_t>(file_size(part_path));
      if (o.expected_size == 0 || result.bytes == o.expected_size) return result;
      last_error = "the body ended at " + std::to_string(result.bytes) + " of " + std::to_string(o.expected_size) + " bytes";
    } else if (rc == CURLE_OK && status == 416 && o.expected_size && a.offset == o.expected_size) {
      result.bytes = a.offset;
      return result;
    } else if (rc == CURLE_OK && status == 416) {
      // Our partial file is not a prefix of what the server has now: start over.
      if (::truncate(part_path.c_str(), 0) != 0) throw Error(ErrorCode::kIo, "cannot truncate '" + part_path + "'");
      last_error = "HTTP 416 (range not satisfiable): starting over";
    } else if (rc == CURLE_OK && status >= 400 && status < 500 && status != 408 && status != 429) {
      throw Error(ErrorCode::kIo, "HTTP " + std::to_string(status) + " from " + url);
    } else if (a.bad_range) {
      last_error = "the server answered a range that does not start at " + std::to_string(a.offset);
    } else if (rc != CURLE_OK) {
      last_error = std::string(curl_easy_strerror(rc)) + (errbuf[0] ? std::string(": ") + errbuf : "");
    } else {
      last_error = "HTTP " + std::to_string(status);
    }
    log_message(LogLevel::kInfo, "download attempt " + std::to_string(attempt) + " failed: " + last_error);
    if (attempt < o.max_attempts) {
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
      delay_ms = std::min(delay_ms * 2, 8000);
    }
  }
  throw Error(ErrorCode::kIo, "download of " + url + " failed after " + std::to_string(result.attempts) +
                                  " attempts: " + last_error + " (the partial file is kept; run again to resume)");
}

}  // namespace edgellm
