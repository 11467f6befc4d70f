#include "platform/memory_stats.h"

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif
#include <cstdlib>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "core/error.h"

namespace edgellm {

ProcessMemory read_process_memory() {
  ProcessMemory m;
  FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return m;
  char line[256];
  bool have_rss = false, have_hwm = false;
  while (std::fgets(line, sizeof line, f)) {
    unsigned long long kb = 0;
    if (std::sscanf(line, "VmRSS: %llu kB", &kb) == 1) {
      m.rss_bytes = static_cast<size_t>(kb) * 1024;
      have_rss = true;
    } else if (std::sscanf(line, "VmHWM: %llu kB", &kb) == 1) {
      m.peak_bytes = static_cast<size_t>(kb) * 1024;
      have_hwm = true;
    }
  }
  std::fclose(f);
  m.valid = have_rss && have_hwm;
  return m;
}

void MemoryAccount::add(size_t bytes) {
  const size_t now = current_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  size_t prev = peak_.load(std::memory_order_relaxed);
  while (now > prev && !peak_.compare_exchange_weak(prev, now, std::memory_order_relaxed)) {
  }
}

void MemoryAccount::sub(size_t bytes) { current_.fetch_sub(bytes, std::memory_order_relaxed); }

MemoryAccount& engine_memory() {
  static MemoryAccount account;
  return account;
}

namespace {

// First number in a file (memory.max holds "max" when unlimited: returns false then).
bool read_number_file(const char* path, unsigned long long* value) {
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return false;
  const bool ok = std::fscanf(f, "%llu", value) == 1;
  std::fclose(f);
  return ok;
}

}  // namespace

size_t available_memory_bytes() {
  unsigned long long available = 0;
  if (FILE* f = std::fopen("/proc/meminfo", "r")) {
    char line[256];
    while (std::fgets(line, sizeof(line), f) != nullptr) {
      unsigned long long kib = 0;
      if (std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1) {
        available = kib * 1024ULL;
        break;
      }
    }
    std::fclose(f);
  }
  unsigned long long limit = 0;
  unsigned long long current = 0;
  if (read_number_file("/sys/fs/cgroup/memory.max", &limit) &&
      read_number_file("/sys/fs/cgroup/memory.current", &current)) {
    const unsigned long long headroom = limit > current ? limit - current : 0;
    if (available == 0 || headroom < available) available = headroom;
  }
  return static_cast<size_t>(available);
}

namespace {

// Buffers from this size on are mapped directly (anonymous, private): the kernel hands out
// zero pages lazily, on first touch. Why: zero-filling a buffer up front faults in every page at
// creation, though most of a KV pool or a prompt-sized scratch buffer is never touched by a
// short request (page faults cost ~0.25 us each on bare metal, several times that on some
// guests: a TinyLlama Context took 300-490 ms to create here, docs/benchmarks.md). The heap
// cannot promise zeros (glibc reuses freed chunks above its mmap threshold), so memset stays
// for small buffers.
// Not under AddressSanitizer: its heap redzones are what catches an overrun of these buffers.
constexpr size_t kMapDirectlyBytes = size_t{256} << 10;
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAsan = true;
#else
constexpr bool kAsan = false;
#endif
#else
constexpr bool kAsan = false;
#endif

// The length of the direct mapping holding a buffer of `bytes`, 0 when it lives on the heap.
// The size alone decides (a failed mapping throws, it never falls back to the heap), so the
// buffer needs no flag to know how to free itself.
size_t mapped_length(size_t bytes) {
#if defined(__linux__)
  if (kAsan || bytes < kMapDirectlyBytes) return 0;
  const long p = ::sysconf(_SC_PAGESIZE);
  const size_t page = p > 0 ? static_cast<size_t>(p) : 4096;
  return (bytes + page - 1) / page * page;
#else
  (void)bytes;
  return 0;
#endif
}

}  // namespace

bool AlignedBuffer::maps_directly(size_t bytes) { return mapped_length(bytes) != 0; }

AlignedBuffer::AlignedBuffer(size_t bytes, const char* what) : AlignedBuffer(bytes, what, Uninitialized{}) {
  if (data_ && mapped_length(size_) == 0) std::memset(data_, 0, (size_ + kAlignment - 1) / kAlignment * kAlignment);
}

AlignedBuffer::AlignedBuffer(size_t bytes, const char* what, Uninitialized) {
  if (bytes == 0) return;
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (const size_t len = mapped_length(bytes); len != 0) {
#if defined(__linux__)
    void* m = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
      throw Error(ErrorCode::kOutOfMemory, std::string("cannot map ") + std::to_string(bytes) + " bytes for " + what);
    }
    data_ = static_cast<uint8_t*>(m);  // page-aligned, so kAlignment-aligned; reads as zeros
    size_ = bytes;
    engine_memory().add(size_);
    return;
#endif
  }
  void* p = ::operator new(rounded, std::align_val_t(kAlignment), std::nothrow);
  if (!p) {
    throw Error(ErrorCode::kOutOfMemory, std::string("cannot allocate ") + std::to_string(bytes) + " bytes for " + what);
  }
  data_ = static_cast<uint8_t*>(p);
  size_ = bytes;
  engine_memory().add(size_);
}

void AlignedBuffer::advise_huge_pages() const {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  const auto begin = reinterpret_cast<uintptr_t>(data_);
  const uintptr_t first = (begin + kHuge - 1) / kHuge * kHuge;
  const uintptr_t last = (begin + size_) / kHuge * kHuge;
  if (data_ == nullptr || last <= first) return;
  (void)::madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
#endif
}

size_t AlignedBuffer::discard_pages() {
#if defined(__linux__) && defined(MADV_DONTNEED)
  const long page_size = ::sysconf(_SC_PAGESIZE);
  const uintptr_t page = page_size > 0 ? static_cast<uintptr_t>(page_size) : 4096;
  const auto begin = reinterpret_cast<uintptr_t>(data_);
  const uintptr_t first = (begin + page - 1) / page * page;
  const uintptr_t last = (begin + size_) / page * page;
  if (data_ == nullptr || last <= first) return 0;
  if (::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED) != 0) return 0;
  return last - first;
#else
  return 0;
#endif
}

AlignedBuffer::~AlignedBuffer() { release(); }

AlignedBuffer::AlignedBuffer(AlignedBuffer&& other) noexcept : data_(other.data_), size_(other.size_) {
  other.data_ = nullptr;
  other.size_ = 0;
}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = other.data_;
    size_ = other.size_;
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

void AlignedBuffer::release() noexcept {
  if (data_) {
#if defined(__linux__)
    if (mapped_length(size_) != 0) {
      (void)::munmap(data_, mapped_length(size_));
    } else {
      ::operator delete(data_, std::align_val_t(kAlignment));
    }
#else
    ::operator delete(data_, std::align_val_t(kAlignment));
#endif
    engine_memory().sub(size_);
  }
  data_ = nullptr;
  size_ = 0;
}

}  // namespace edgellm
