#include "platform/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <utility>

#include "core/error.h"

namespace edgellm {
namespace {

constexpr std::align_val_t kOwnedAlignment{64};

size_t page_size() {
  const long p = ::sysconf(_SC_PAGESIZE);
  return p > 0 ? static_cast<size_t>(p) : 4096;
}

std::string errno_text(int err) { return std::strerror(err); }

// Closes the descriptor on every exit path of map().
struct FdGuard {
  int fd;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

// Throws Error(kIo) naming the path and errno text.
int open_readonly(const std::string& path) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) throw Error(ErrorCode::kIo, "cannot open '" + path + "': " + errno_text(errno));
  return fd;
}

}  // namespace

MappedFile::~MappedFile() { release(); }

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, false)),
      path_(std::move(other.path_)),
      owned_(std::exchange(other.owned_, nullptr)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, false);
    path_ = std::move(other.path_);
    owned_ = std::exchange(other.owned_, nullptr);
  }
  return *this;
}

void MappedFile::release() {
  if (mapped_ && data_ != nullptr) {
    // munmap only fails for invalid arguments, which would be a bug; nothing useful to do here.
    ::munmap(const_cast<uint8_t*>(data_), size_);
  }
  if (owned_ != nullptr) ::operator delete[](owned_, kOwnedAlignment);
  data_ = nullptr;
  size_ = 0;
  mapped_ = false;
  owned_ = nullptr;
}

MappedFile MappedFile::map(const std::string& path) {
  FdGuard guard{open_readonly(path)};
  const int fd = guard.fd;

  struct stat st;
  if (::fstat(fd, &st) != 0) throw Error(ErrorCode::kIo, "cannot stat '" + path + "': " + errno_text(errno));
  if (!S_ISREG(st.st_mode)) throw Error(ErrorCode::kIo, "'" + path + "' is not a regular file");
  if (st.st_size < 0 || static_cast<uint64_t>(st.st_size) > SIZE_MAX) {
    throw Error(ErrorCode::kIo, "'" + path + "' is too large to map on this platform");
  }

  MappedFile m;
  m.path_ = path;
  m.size_ = static_cast<size_t>(st.st_size);
  if (m.size_ == 0) {
    // mmap of length 0 is EINVAL: an empty file is an empty (valid) mapping; parsers reject it.
    return m;
  }
  void* p = ::mmap(nullptr, m.size_, PROT_READ, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    m.size_ = 0;
    throw Error(ErrorCode::kIo, "cannot mmap '" + path + "' (" + std::to_string(st.st_size) + " bytes): " + errno_text(err));
  }
  m.data_ = static_cast<const uint8_t*>(p);
  m.mapped_ = true;
  // The mapping stays valid after close(); the guard closes fd on return.
  return m;
}

MappedFile MappedFile::from_bytes(const void* data, size_t size) {
  MappedFile m;
  m.size_ = size;
  if (size > 0) {
    m.owned_ = static_cast<uint8_t*>(::operator new[](size, kOwnedAlignment));
    std::memcpy(m.owned_, data, size);
    m.data_ = m.owned_;
  }
  return m;
}

void MappedFile::copy_out(size_t offset, void* dst, size_t len) const {
  if (offset > size_ || len > size_ - offset) {
    throw Error(ErrorCode::kIo, "read of " + std::to_string(len) + " bytes at " + std::to_string(offset) +
                                    " is outside '" + path_ + "' (" + std::to_string(size_) + " bytes)");
  }
  if (len == 0) return;
  if (!mapped_) {
    std::memcpy(dst, data_ + offset, len);
    return;
  }
  FdGuard guard{open_readonly(path_)};
  const int fd = guard.fd;
  auto* out = static_cast<uint8_t*>(dst);
  size_t done = 0;
  while (done < len) {
    const ssize_t got = ::pread(fd, out + done, len - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      throw Error(ErrorCode::kIo, "cannot read '" + path_ + "' at " + std::to_string(offset + done) + ": " +
                                      (got < 0 ? errno_text(errno) : std::string("unexpected end of file")));
    }
    done += static_cast<size_t>(got);
  }
}

void MappedFile::release_pages(size_t offset, size_t len) const {
  if (!mapped_ || offset >= size_ || len == 0) return;
  len = std::min(len, size_ - offset);
  // Only whole pages: round the start up and the end down, never touching a neighbour's bytes.
  const size_t page = page_size();
  const size_t start = (offset + page - 1) / page * page;
  const size_t end = (offset + len) / page * page;
  if (end <= start) return;
#if defined(MADV_DONTNEED)
  (void)::madvise(const_cast<uint8_t*>(data_) + start, end - start, MADV_DONTNEED);
#endif
}

void MappedFile::advise_willneed(size_t offset, size_t len) const {
  if (!mapped_ || offset >= size_ || len == 0) return;
  len = std::min(len, size_ - offset);
  // madvise wants a page-aligned start: round down and extend the length accordingly.
  const size_t page = page_size();
  const size_t start = offset - offset % page;
  const size_t span = len + (offset - start);
#if defined(POSIX_MADV_WILLNEED)
  (void)::posix_madvise(const_cast<uint8_t*>(data_) + start, span, POSIX_MADV_WILLNEED);
#elif defined(MADV_WILLNEED)
  (void)::madvise(const_cast<uint8_t*>(data_) + start, span, MADV_WILLNEED);
#else
  (void)start;
  (void)span;
#endif
}

size_t MappedFile::prefault(size_t offset, size_t len) const {
  if (data_ == nullptr || offset >= size_ || len == 0) return 0;
  len = std::min(len, size_ - offset);
  const size_t page = page_size();
  // One volatile read per page is enough to fault it in; the sum keeps the loads alive.
  volatile uint8_t sink = 0;
  uint8_t acc = 0;
  for (size_t i = 0; i < len; i += page) acc = static_cast<uint8_t>(acc + data_[offset + i]);
  acc = static_cast<uint8_t>(acc + data_[offset + len - 1]);
  sink = acc;
  (void)sink;
  return len;
}

}  // namespace edgellm
