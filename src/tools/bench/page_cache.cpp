#include "tools/bench/page_cache.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace edgellm::bench {

double page_cache_resident_fraction(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return -1;
  }
  if (st.st_size == 0) {
    ::close(fd);
    return 1;
  }
  const auto size = static_cast<size_t>(st.st_size);
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);  // never touched: no page is read
  ::close(fd);
  if (map == MAP_FAILED) return -1;
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t pages = (size + page - 1) / page;
  std::vector<unsigned char> vec(pages);
  double fraction = -1;
  if (::mincore(map, size, vec.data()) == 0) {
    size_t resident = 0;
    for (const unsigned char v : vec) resident += v & 1u;
    fraction = static_cast<double>(resident) / static_cast<double>(pages);
  }
  ::munmap(map, size);
  return fraction;
}

std::string drop_page_cache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "cannot open '" + path + "': " + std::strerror(errno);
  // Dirty pages (a file just written, e.g. by `edgellm synth`) are not dropped: write them back
  // first (fdatasync works on a read-only descriptor on Linux).
  (void)::fdatasync(fd);
  const int rc = ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);  // returns the error, no errno
  ::close(fd);
  return rc == 0 ? std::string() : "posix_fadvise(DONTNEED) on '" + path + "' failed: " + std::strerror(rc);
}

}  // namespace edgellm::bench
