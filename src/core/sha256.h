// SHA-256 (FIPS 180-4), streamed: model files are verified while they are read or downloaded,
// never loaded whole. Portable C++ (no OpenSSL: the shipped library keeps no third-party
// runtime dependency); ~200-400 MB/s per core, so a 2 GB model verifies in seconds, once per
// install (docs/device-fitness.md).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace edgellm {

class Sha256 {
 public:
  using Digest = std::array<uint8_t, 32>;

  Sha256() { reset(); }
  void reset();
  void update(const void* data, size_t n);
  void update(std::string_view s) { update(s.data(), s.size()); }
  // The digest of everything updated so far; the object must be reset() before reuse.
  Digest finish();

  // Lower-case hex of a digest (64 characters).
  static std::string hex(const Digest& d);
  // One-shot helper.
  static std::string hex_of(std::string_view data);

 private:
  void compress(const uint8_t* block);
  uint32_t state_[8];
  uint8_t buffer_[64];
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

// Streams a file through SHA-256 in 1 MiB reads. progress(done, total) is called after every
// read (may be empty); returning false from it cancels (Error kCancelled). Throws Error(kIo)
// naming the file when it cannot be opened or read.
using HashProgress = std::function<bool(uint64_t done, uint64_t total)>;
std::string sha256_file_hex(const std::string& path, const HashProgress& progress = {});

// True for exactly 64 hex digits (either case).
bool is_sha256_hex(std::string_view s);

}  // namespace edgellm
