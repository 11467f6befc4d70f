#include "docqa/index_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/sha256.h"
#include "core/utf8.h"

namespace edgellm {

namespace {

constexpr size_t kHeaderBytes = 16 + 4 + 4 + 8 + 32;

// ---- writing
void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
void put_str(std::string& out, std::string_view s) {
  require(s.size() <= std::numeric_limits<uint32_t>::max(), ErrorCode::kInvalidArgument,
          "index: a string of " + std::to_string(s.size()) + " bytes is too long for the index format");
  put_u32(out, static_cast<uint32_t>(s.size()));
  out.append(s);
}
uint32_t count32(size_t n, const char* what) {
  require(n <= std::numeric_limits<uint32_t>::max(), ErrorCode::kInvalidArgument,
          std::string("index: too many ") + what + " for the index format");
  return static_cast<uint32_t>(n);
}

// ---- reading: a cursor that refuses to run past the end
class Reader {
 public:
  Reader(std::string_view bytes, const std::string& name) : b_(bytes), name_(name) {}
  [[noreturn]] void corrupt(const std::string& why) const {
    throw Error(ErrorCode::kInvalidFile, "index file '" + name_ + "' is corrupt: " + why +
                                             " (the documents it was built from are untouched: restore '" + name_ +
                                             ".bak' or rebuild the index from them)");
  }
  void need(size_t n, const char* what) const {
    if (b_.size() - pos_ < n) corrupt(std::string("truncated in ") + what);
  }
  uint32_t u32(const char* what) {
    need(4, what);
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(b_[pos_ + i])) << (8 * i);
    pos_ += 4;
    return v;
  }
  uint64_t u64(const char* what) {
    need(8, what);
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(b_[pos_ + i])) << (8 * i);
    pos_ += 8;
    return v;
  }
  std::string str(const char* what) {
    const uint32_t n = u32(what);
    need(n, what);
    std::string s(b_.substr(pos_, n));
    pos_ += n;
    if (utf8::first_invalid(s) != s.size()) corrupt(std::string(what) + " is not valid UTF-8");
    return s;
  }
  std::string_view raw(size_t n, const char* what) {
    need(n, what);
    std::string_view s = b_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  // A count of items of at least `min_item_bytes` each: more than the bytes left can hold is
  // corrupt (so a hostile count never sizes an allocation).
  uint32_t count(size_t min_item_bytes, const char* what) {
    const uint32_t n = u32(what);
    if (min_item_bytes > 0 && n > (b_.size() - pos_) / min_item_bytes)
      corrupt(std::string(what) + " count is impossible");
    return n;
  }
  size_t left() const { return b_.size() - pos_; }

 private:
  std::string_view b_;
  const std::string& name_;
  size_t pos_ = 0;
};

}  // namespace

std::string encode_index(const VectorIndex& index, std::string_view settings) {
  std::string body;
  put_str(body, index.model_id());
  put_u32(body, static_cast<uint32_t>(index.dims()));
  put_u32(body, static_cast<uint32_t>(index.type()));
  put_u32(body, index.next_doc_id());
  put_u32(body, index.next_chunk_id());
  put_str(body, settings);
  const std::vector<const IndexedDocument*> docs = index.documents();
  put_u32(body, count32(docs.size(), "documents"));
  for (const IndexedDocument* d : docs) {
    put_u32(body, d->id);
    put_str(body, d->path);
    put_str(body, d->sha256);
    put_u64(body, static_cast<uint64_t>(d->mtime));
    put_u64(body, d->bytes);
    put_u32(body, count32(d->chunks.size(), "chunks"));
    for (const uint32_t c : d->chunks) put_u32(body, c);
  }
  const std::vector<IndexedChunk>& chunks = index.chunks_in_order();
  put_u32(body, count32(chunks.size(), "chunks"));
  for (const IndexedChunk& c : chunks) {
    put_u32(body, c.id);
    put_u32(body, c.doc);
    put_u32(body, c.begin);
    put_u32(body, c.end);
    put_str(body, c.text);
  }
  for (size_t slot = 0; slot < chunks.size(); ++slot) {
    body.append(reinterpret_cast<const char*>(index.vector_data(slot)), index.vector_bytes());
  }
  std::string out(kIndexMagic, sizeof kIndexMagic);
  put_u32(out, kIndexFormatVersion);
  put_u32(out, 0);
  put_u64(out, body.size());
  const Sha256::Digest digest = [&] {
    Sha256 h;
    h.update(body);
    return h.finish();
  }();
  out.append(reinterpret_cast<const char*>(digest.data()), digest.size());
  out += body;
  return out;
}

IndexFile decode_index(std::string_view bytes, const std::string& name) {
  Reader head(bytes, name);
  if (bytes.size() < kHeaderBytes) head.corrupt("shorter than its header (" + std::to_string(bytes.size()) + " bytes)");
  if (std::memcmp(bytes.data(), kIndexMagic, sizeof kIndexMagic) != 0)
    head.corrupt("not an EdgeLLM document index (bad magic)");
  head.raw(sizeof kIndexMagic, "magic");
  const uint32_t version = head.u32("version");
  if (version != kIndexFormatVersion) {
    throw Error(ErrorCode::kInvalidFile, "index file '" + name + "' has format version " + std::to_string(version) +
                                             "; this EdgeLLM reads version " + std::to_string(kIndexFormatVersion) +
                                             " (rebuild the index from its documents)");
  }
  if (head.u32("reserved") != 0) head.corrupt("the reserved header field is not 0");
  const uint64_t body_bytes = head.u64("body size");
  const std::string_view stored = head.raw(32, "checksum");
  if (body_bytes != head.left()) {
    head.corrupt("its header announces " + std::to_string(body_bytes) + " bytes of content, the file holds " +
                 std::to_string(head.left()) + " (truncated or extended)");
  }
  const std::string_view body = bytes.substr(kHeaderBytes);
  Sha256 h;
  h.update(body);
  const Sha256::Digest digest = h.finish();
  if (std::memcmp(digest.data(), stored.data(), digest.size()) != 0) head.corrupt("checksum mismatch");

  Reader r(body, name);
  const std::string model_id = r.str("model id");
  const uint32_t dims = r.u32("dims");
  const uint32_t type = r.u32("vector type");
  if (dims < 1 || dims > 65536) r.corrupt("dims " + std::to_string(dims) + " out of range");
  if (type > 1) r.corrupt("unknown vector type " + std::to_string(type));
  auto index = std::make_unique<VectorIndex>(static_cast<int32_t>(dims), static_cast<VectorType>(type), model_id);
  const uint32_t next_doc = r.u32("next document id");
  const uint32_t next_chunk = r.u32("next chunk id");
  IndexFile out;
  out.settings = r.str("settings");
  std::vector<IndexedDocument> docs(r.count(4 + 4 + 4 + 8 + 8 + 4, "documents"));
  for (size_t i = 0; i < docs.size(); ++i) {
    IndexedDocument& d = docs[i];
    d.id = r.u32("document id");
    d.path = r.str("document path");
    // The writer's order (by path): another order would load, but not as the bytes it came from.
    if (i > 0 && !(docs[i - 1].path < d.path)) r.corrupt("document paths out of order or repeated");
    d.sha256 = r.str("document checksum");
    if (!is_sha256_hex(d.sha256)) r.corrupt("a document checksum is not 64 hex digits");
    d.mtime = static_cast<int64_t>(r.u64("document time"));
    d.bytes = r.u64("document size");
    d.chunks.resize(r.count(4, "document chunks"));
    for (uint32_t& c : d.chunks) c = r.u32("document chunk id");
  }
  std::vector<IndexedChunk> chunks(r.count(4 * 4 + 4, "chunks"));
  for (IndexedChunk& c : chunks) {
    c.id = r.u32("chunk id");
    c.doc = r.u32("chunk document");
    c.begin = r.u32("chunk begin");
    c.end = r.u32("chunk end");
    c.text = r.str("chunk text");
  }
  const size_t vb = index->vector_bytes();
  if (chunks.size() > 0 && r.left() / vb < chunks.size()) r.corrupt("truncated in the vectors");
  const std::string_view vecs = r.raw(chunks.size() * vb, "vectors");
  if (r.left() != 0) r.corrupt(std::to_string(r.left()) + " bytes after the vectors");
  try {
    index->restore(std::move(docs), std::move(chunks), std::vector<uint8_t>(vecs.begin(), vecs.end()), next_doc,
                   next_chunk);
  } catch (const Error& e) {
    r.corrupt(e.what());
  }
  out.index = std::move(index);
  return out;
}

IndexFile load_index_file(const std::string& path) {
  const int64_t size = file_size_or_minus_one(path);
  if (size < 0) throw Error(ErrorCode::kNotFound, "no index file at '" + path + "'");
  // The whole file is read and checked before anything is used; a size no phone-scale index
  // reaches is refused before it sizes an allocation.
  require(static_cast<uint64_t>(size) <= kMaxIndexFileBytes, ErrorCode::kInvalidFile,
          "index file '" + path + "' is " + std::to_string(size) + " bytes, more than the " +
              std::to_string(kMaxIndexFileBytes >> 20) + " MiB an index may hold");
  std::ifstream in(path, std::ios::binary);
  require(static_cast<bool>(in), ErrorCode::kIo, "cannot open the index file '" + path + "'");
  std::string bytes(static_cast<size_t>(size), '\0');
  in.read(bytes.data(), size);
  require(in.gcount() == size, ErrorCode::kIo, "cannot read the index file '" + path + "'");
  return decode_index(bytes, path);
}

std::string index_backup_path(const std::string& path) {
  return path + ".bak";
}

void save_index_file(const std::string& path, const VectorIndex& index, std::string_view settings,
                     bool backup_current) {
  const std::string bytes = encode_index(index, settings);
  if (backup_current && path_exists(path)) {
    // The current file becomes the backup (a hard link, then renamed over the old backup: the
    // backup name always holds a whole file). Skipped, not fatal, where links are not possible.
    const std::string tmp = index_backup_path(path) + ".tmp";
    remove_file(tmp);
    if (::link(path.c_str(), tmp.c_str()) == 0) rename_durable(tmp, index_backup_path(path));
  }
  write_file_atomic(path, bytes);
}

}  // namespace edgellm
