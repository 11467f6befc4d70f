// Memory accounting: the process RSS as the OS sees it, and the bytes the engine allocated for
// its own buffers (KV pool, scratch, logits), so a report can tell mapped weights from buffers.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace edgellm {

struct ProcessMemory {
  size_t rss_bytes = 0;   // VmRSS: resident now (includes mapped weight pages that were touched)
  size_t peak_bytes = 0;  // VmHWM: high-water mark of VmRSS
  bool valid = false;     // false when /proc/self/status is unavailable
};

// Reads /proc/self/status. Never throws.
ProcessMemory read_process_memory();

// Memory the process could still take: MemAvailable of /proc/meminfo, lowered to the cgroup v2
// limit's headroom (memory.max - memory.current) when one is set. 0 when unknown. Never throws.
size_t available_memory_bytes();

// Running totals of engine buffers. Thread-safe.
class MemoryAccount {
 public:
  void add(size_t bytes);
  void sub(size_t bytes);
  size_t current() const { return current_.load(std::memory_order_relaxed); }
  size_t peak() const { return peak_.load(std::memory_order_relaxed); }

 private:
  std::atomic<size_t> current_{0};
  std::atomic<size_t> peak_{0};
};

// Every AlignedBuffer of the process is accounted here.
MemoryAccount& engine_memory();

// A zero-initialised, 64-byte aligned (cache line, widest SIMD register) byte buffer that records
// its size in engine_memory(). Move-only. Throws Error(kOutOfMemory) naming `what` on failure.
class AlignedBuffer {
 public:
  static constexpr size_t kAlignment = 64;

  AlignedBuffer() = default;
  AlignedBuffer(size_t bytes, const char* what = "buffer");
  // Uninitialised contents, for a buffer the caller overwrites entirely: its pages become
  // resident only as they are written (no up-front pass over all of them).
  struct Uninitialized {};
  AlignedBuffer(size_t bytes, const char* what, Uninitialized);
  ~AlignedBuffer();
  AlignedBuffer(AlignedBuffer&& other) noexcept;
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  template <typename T>
  T* as() {
    return reinterpret_cast<T*>(data_);
  }
  template <typename T>
  const T* as() const {
    return reinterpret_cast<const T*>(data_);
  }
  size_t size() const { return size_; }
  // Whether a buffer of `bytes` is its own anonymous mapping (zero pages, resident only once
  // written) rather than a zero-filled heap block: large buffers on Linux, never under ASan.
  static bool maps_directly(size_t bytes);
  // Asks the kernel to back the 2 MiB-aligned part of the buffer with transparent huge pages
  // (Linux THP, in "madvise" mode on most systems): a large buffer streamed every token (the
  // repacked weights) then costs ~500x fewer TLB misses and page faults. Call it before the
  // pages are first written (Uninitialized buffers); a hint only: no-op where unsupported.
  void advise_huge_pages() const;
  // Returns the whole pages inside the buffer to the system (MADV_DONTNEED: private anonymous
  // memory reads as zeros afterwards, and only becomes resident again when written). For buffers
  // whose contents are dead (scratch, an empty KV pool). Returns the bytes released.
  size_t discard_pages();

 private:
  void release() noexcept;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace edgellm
