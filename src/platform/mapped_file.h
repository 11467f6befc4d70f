// A read-only memory map of a whole file (weights are never copied), or an owned byte buffer
// standing in for one (tests, fuzzing). Move-only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace edgellm {

class MappedFile {
 public:
  MappedFile() = default;
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // Throws Error(kIo) naming the path and errno text.
  static MappedFile map(const std::string& path);
  static MappedFile from_bytes(const void* data, size_t size);

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool is_mapped() const { return mapped_; }
  const std::string& path() const { return path_; }

  // Hints to the kernel: we will read [offset, offset+len) soon / sequentially. No-ops on failure.
  void advise_willneed(size_t offset, size_t len) const;
  // The pages wholly inside [offset, offset+len) are no longer needed (their contents now live
  // elsewhere, e.g. repacked): drop them from this process's resident set. They are clean file
  // pages, so a later read faults them in again from the file. No-op for from_bytes() buffers
  // (dropping those would lose the data) and on failure.
  void release_pages(size_t offset, size_t len) const;
  // Copies [offset, offset+len) into dst without touching the mapping: pread from the file (a
  // read through the mapping can map a whole large page-cache folio, up to 2 MiB, into this
  // process for a few bytes), memcpy for from_bytes() buffers. Throws Error(kIo) when the file
  // cannot be read or the range is outside it.
  void copy_out(size_t offset, void* dst, size_t len) const;
  // Touch every page (warm-up / measuring load time); returns bytes touched.
  size_t prefault(size_t offset, size_t len) const;

 private:
  void release();

  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
  std::string path_;
  // from_bytes(): an owned copy, 64-byte aligned so tensor views into it are as aligned as the
  // file offsets (GGUF aligns tensor data to general.alignment, 32 by default) — SIMD kernels
  // see the same alignment as with a real page-aligned mapping.
  uint8_t* owned_ = nullptr;
};

}  // namespace edgellm
