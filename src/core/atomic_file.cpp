#include "core/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "core/error.h"

namespace edgellm {
namespace {

[[noreturn]] void io_error(const std::string& what, int err) {
  throw Error(ErrorCode::kIo, what + ": " + std::strerror(err));
}

std::string parent_dir(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

void fsync_fd(int fd, const std::string& what) {
  if (::fsync(fd) != 0) io_error("fsync of " + what, errno);
}

void fsync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) io_error("cannot open directory '" + dir + "'", errno);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  // Some file systems do not support fsync on directories (EINVAL); the rename is still atomic.
  if (rc != 0 && err != EINVAL) io_error("fsync of directory '" + dir + "'", err);
}

void make_dirs(const std::string& dir) {
  if (dir.empty()) return;
  std::string cur;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    cur = dir.substr(0, pos);
    if (cur.empty()) continue;
    if (::mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) io_error("cannot create directory '" + cur + "'", errno);
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw Error(ErrorCode::kIo, "'" + dir + "' is not a directory");
  }
}

void write_all(int fd, const void* data, size_t n, const std::string& path) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      io_error("cannot write '" + path + "'", errno);
    }
    if (w == 0) throw Error(ErrorCode::kIo, "cannot write '" + path + "': write returned 0");
    p += w;
    n -= static_cast<size_t>(w);
  }
}

// Removes "<name>.tmp.XXXXXX" files of `path` last modified more than an hour ago: left by a
// writer that was killed (an app in the background is). Younger ones may belong to a writer
// still at work. Best effort: errors are ignored.
static void remove_stale_temp_files(const std::string& path) {
  const std::string dir = parent_dir(path);
  const size_t slash = path.find_last_of('/');
  const std::string prefix = (slash == std::string::npos ? path : path.substr(slash + 1)) + ".tmp.";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  const time_t now = ::time(nullptr);
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    // mkstemp's 6 characters after the prefix, nothing else.
    if (name.size() != prefix.size() + 6 || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string full = dir + "/" + name;
    struct stat st {};
    if (::lstat(full.c_str(), &st) == 0 && S_ISREG(st.st_mode) && now - st.st_mtime > 3600) ::unlink(full.c_str());
  }
  ::closedir(d);
}

void write_file_atomically(const std::string& path, const std::function<void(int fd, const std::string& tmp_path)>& fill,
                           const AtomicWriteOptions& options) {
  remove_stale_temp_files(path);
  std::string tmp = path + ".tmp.XXXXXX";
  int fd = ::mkstemp(tmp.data());  // POSIX (mkostemp needs _GNU_SOURCE, which musl builds lack)
  if (fd < 0) io_error("cannot create '" + tmp + "'", errno);
  try {
    (void)::fcntl(fd, F_SETFD, FD_CLOEXEC);
    // mkstemp creates 0600.
    if (options.mode != 0600 && ::fchmod(fd, static_cast<mode_t>(options.mode)) != 0) {
      io_error("cannot chmod '" + tmp + "'", errno);
    }
    fill(fd, tmp);
    if (options.fsync) fsync_fd(fd, "'" + tmp + "'");
    const int rc = ::close(fd);
    fd = -1;
    // close() can report a delayed write error (NFS, some FUSE filesystems).
    if (rc != 0) io_error("cannot close '" + tmp + "'", errno);
    if (::rename(tmp.c_str(), path.c_str()) != 0) io_error("cannot rename '" + tmp + "' to '" + path + "'", errno);
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  // The new content is in place: making the rename durable is best effort.
  if (options.fsync) {
    try {
      fsync_dir(parent_dir(path));
    } catch (const Error&) {
    }
  }
}

void write_file_atomic(const std::string& path, std::string_view content, const AtomicWriteOptions& options) {
  write_file_atomically(
      path, [&](int fd, const std::string& tmp) { write_all(fd, content.data(), content.size(), tmp); }, options);
}

void rename_durable(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) io_error("cannot rename '" + from + "' to '" + to + "'", errno);
  fsync_dir(parent_dir(to));
}

std::string read_small_file(const std::string& path, size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) io_error("cannot open '" + path + "'", errno);
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      io_error("cannot read '" + path + "'", err);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > max_bytes) {
      ::close(fd);
      throw Error(ErrorCode::kInvalidFile, "'" + path + "' is larger than " + std::to_string(max_bytes) + " bytes");
    }
  }
  ::close(fd);
  return out;
}

bool path_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

int64_t file_size_or_minus_one(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return -1;
  return static_cast<int64_t>(st.st_size);
}

void remove_file(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) io_error("cannot remove '" + path + "'", errno);
}

}  // namespace edgellm
