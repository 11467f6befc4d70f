// Durable file writes (pack files, sessions, the model registry's manifests and pointers): a file
// is written whole or not at all, so a reader, a crash, a power loss or a full disk never leaves
// half a file under the name — the name holds the whole old or the whole new content.
//
// The bytes go to a temporary file of its own in the same folder, "<path>.tmp.XXXXXX" (mkstemp):
// not a fixed "<path>.tmp", because two writers of one path (an app saving a session twice at
// once, an app and the CLI packing one model) would then truncate and interleave one file that
// one of them renames into place. Here the last rename wins, with a whole file. Then fsync,
// close (which can report a delayed write error), rename over `path` (atomic within one file
// system), and an fsync of the folder so the rename survives a power loss (best effort: once the
// rename happened the new content is in place, and a folder that cannot be fsynced is no error).
// A writer killed half way leaves its temporary file; the next write of the same path removes
// such leftovers older than an hour (younger ones may be another writer's, still working).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace edgellm {

struct AtomicWriteOptions {
  unsigned mode = 0644;  // the file's permissions (0600: private data such as a conversation)
  // fsync the file before the rename. Off: the rename still never shows half a file to a reader
  // or after a crash of the process; after a power loss the name may hold the old content (or,
  // on some file systems, an empty file). For files written often on a latency-critical thread.
  bool fsync = true;
};

// `fill(fd, tmp_path)` writes the content to fd (and reports errors naming tmp_path). On any
// failure before the rename the temporary file is removed and the exception (Error(kIo) from
// here, naming the path and the system's reason, e.g. "No space left on device", or fill's own)
// propagates; `path` is then as it was. Any thread; concurrent calls for one path are safe
// (above).
void write_file_atomically(const std::string& path, const std::function<void(int fd, const std::string& tmp_path)>& fill,
                           const AtomicWriteOptions& options = {});

// write_file_atomically with `content` as the bytes.
void write_file_atomic(const std::string& path, std::string_view content, const AtomicWriteOptions& options = {});

// Writes all n bytes to fd, retrying short writes and EINTR; Error(kIo) naming `path` otherwise.
void write_all(int fd, const void* data, size_t n, const std::string& path);

// Renames `from` over `to` and fsyncs the destination directory. Throws Error(kIo).
void rename_durable(const std::string& from, const std::string& to);

// fsync of an open file descriptor / of a directory by path (a file system that cannot fsync a
// directory, EINVAL, is not an error: the rename is still atomic). Throw Error(kIo).
void fsync_fd(int fd, const std::string& what);
void fsync_dir(const std::string& dir);

// mkdir -p. Throws Error(kIo).
void make_dirs(const std::string& dir);

// Reads a whole (small) file. Throws Error(kIo), or Error(kInvalidFile) when it is larger.
std::string read_small_file(const std::string& path, size_t max_bytes = size_t{1} << 20);

bool path_exists(const std::string& path);
// Size in bytes, or -1 when the file does not exist.
int64_t file_size_or_minus_one(const std::string& path);
// unlink; no error when absent.
void remove_file(const std::string& path);

}  // namespace edgellm
