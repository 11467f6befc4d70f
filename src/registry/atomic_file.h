// Crash-safe file updates for the model registry: a file is written next to its destination,
// flushed to the disk (fsync), renamed over the destination (rename(2) is atomic within one file
// system) and the directory flushed, so after a crash or power loss at any point the destination
// holds either the whole old or the whole new content, never a mix.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace edgellm {

// Writes `content` to `path` atomically (path + ".tmp", fsync, rename, fsync of the directory).
// Throws Error(kIo) naming the path and the system's reason (ENOSPC: "no space left on
// device"); on failure `path` is unchanged and the temporary file is removed.
void write_file_atomic(const std::string& path, std::string_view content);

// Renames `from` over `to` and fsyncs the destination directory. Throws Error(kIo).
void rename_durable(const std::string& from, const std::string& to);

// fsync of an open file descriptor / of a directory by path. Throw Error(kIo).
void fsync_fd(int fd, const std::string& what);
void fsync_dir(const std::string& dir);

// mkdir -p. Throws Error(kIo).
void make_dirs(const std::string& dir);

// Reads a whole (small) file. Throws Error(kIo).
std::string read_small_file(const std::string& path, size_t max_bytes = size_t{1} << 20);

bool path_exists(const std::string& path);
// Size in bytes, or -1 when the file does not exist.
int64_t file_size_or_minus_one(const std::string& path);
// unlink; no error when absent.
void remove_file(const std::string& path);

}  // namespace edgellm
