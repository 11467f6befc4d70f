// The vector index (vector_index.h) in one file: written whole or not at all, checked whole when
// read. A corrupt file is refused with the reason and never half-loaded; the documents it was
// built from are never touched, and the previous good generation is kept beside it.
//
// Layout (little-endian):
//   header  16 bytes magic "EDGELLM-DOCINDEX", u32 format version (1), u32 reserved (0),
//           u64 body bytes, 32 bytes SHA-256 of the body
//   body    str model_id, u32 dims, u32 vector type (0 int8, 1 f16), u32 next document id,
//           u32 next chunk id, str settings (JSON: chunking options, embedder; informative)
//           u32 documents (by path, strictly increasing); each: u32 id, str path,
//                                 str sha256 (64 hex digits), i64 mtime, u64 bytes,
//                                 u32 chunks, u32 chunk id ... (document order)
//           u32 chunks; each: u32 id, u32 document id, u32 begin, u32 end, str text
//           vectors, chunk by chunk in the order above (int8: f32 scale then dims codes;
//           f16: dims halves)
//   str = u32 length + bytes (UTF-8, checked)
// The reader checks the magic, version, sizes, the checksum, then every count against the bytes
// left, every string's UTF-8, every id and reference (vector_index.h: restore), and that nothing
// follows the vectors: a file that passes is exactly what a writer wrote.
//
// Writes (save_index_file): the new content goes to a temporary file, fsync, rename over the
// path (core/atomic_file.h), so a crash or a full disk leaves the old index; before that, the
// current file is hard-linked to "<path>.bak" (replacing the previous backup atomically), so the
// last good generation survives even a file that is damaged later on disk.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "docqa/vector_index.h"

namespace edgellm {

inline constexpr char kIndexMagic[16] = {'E', 'D', 'G', 'E', 'L', 'L', 'M', '-',
                                         'D', 'O', 'C', 'I', 'N', 'D', 'E', 'X'};
inline constexpr uint32_t kIndexFormatVersion = 1;
// load_index_file refuses larger files (~1.5 M chunks of 384-dim int8 vectors with 300-byte texts).
inline constexpr uint64_t kMaxIndexFileBytes = uint64_t{1} << 30;

struct IndexFile {
  std::unique_ptr<VectorIndex> index;
  std::string settings;  // the JSON the writer stored
};

// The bytes of an index file. Throws only for an index larger than the format holds (kInvalidArgument).
std::string encode_index(const VectorIndex& index, std::string_view settings);
// Parses and checks `bytes` (from a file called `name`, for messages). Throws
// Error(kInvalidFile, "index file 'NAME' is corrupt: <why>") for anything but a whole valid file.
IndexFile decode_index(std::string_view bytes, const std::string& name = "index");

// Reads `path` (kIo when unreadable, kNotFound when absent, kInvalidFile as decode_index).
IndexFile load_index_file(const std::string& path);
// Writes atomically; with `backup_current`, the current file (which the caller loaded and
// found whole) is kept as "<path>.bak" first (above) — never a file not known to be good.
// Throws Error(kIo) (e.g. a full disk: the old file is then unchanged).
void save_index_file(const std::string& path, const VectorIndex& index, std::string_view settings,
                     bool backup_current = true);
std::string index_backup_path(const std::string& path);  // "<path>.bak"

}  // namespace edgellm
