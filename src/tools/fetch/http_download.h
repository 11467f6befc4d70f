// Resumable HTTP(S) download of a model file (libcurl; tool builds on Linux only — on a phone the
// host app downloads with the platform's own stack and hands the file to the same
// verify-and-install call, ModelRegistry::install_moved).
//
// The bytes go to `part_path`, appended from its current size with `Range: bytes=N-`, so an
// interrupted download (dropped connection, app killed, device rebooted) continues where it
// stopped, within this call (retries with backoff) and across calls. A server that ignores the
// range (200 instead of 206) restarts the file from zero; one whose Content-Range does not start
// at N is refused for that attempt. Nothing here trusts the bytes: the registry verifies the
// SHA-256 before installing.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace edgellm {

struct DownloadOptions {
  int max_attempts = 8;           // attempts in this call (connection errors, stalls, 5xx, 429)
  int backoff_ms = 250;           // first retry delay, doubled each time up to 8 s
  long connect_timeout_s = 15;
  long stall_timeout_s = 30;      // fewer than 1 byte/s for this long: the attempt fails
  uint64_t expected_size = 0;     // 0: unknown; else a larger body is refused
  // (bytes in the part file, total or 0 when unknown); false cancels (Error kCancelled).
  std::function<bool(uint64_t done, uint64_t total)> progress;
};

struct DownloadResult {
  uint64_t bytes = 0;    // size of the finished part file
  int attempts = 0;      // HTTP requests made
  int resumed = 0;       // attempts that continued a partial file (206)
  int restarted = 0;     // attempts where the server ignored the range (200): started over
};

// Throws Error(kInvalidArgument) for a URL that is not http:// or https://, Error(kIo) after
// the last failed attempt or at once for a client error (4xx other than 408 / 429) — the part
// file is kept for a later resume — and for a write error such as a full disk (the part file is
// removed: it could not be completed here). Error(kCancelled) from progress.
DownloadResult download_resumable(const std::string& url, const std::string& part_path,
                                  const DownloadOptions& options = {});

}  // namespace edgellm
