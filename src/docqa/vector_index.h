// The local vector index of document Q&A: documents, their chunks (text and where they came
// from) and one vector per chunk, searched exactly (every vector scored: at phone scale a linear
// scan over int8 vectors is milliseconds and needs no approximate structure to keep consistent).
// Documents are added, updated and removed in place; chunk ids are never reused, so an id in an
// answer's citations names one piece of text for the index's whole life, and a removed
// document's chunks can never come back as hits.
//
// Vectors (L2-normalised by the embedder, pooling.h) are stored as
//   kInt8: one float scale (max |x| / 127) and dims int8 codes per chunk: dims + 4 bytes
//   kF16:  dims half floats: 2 x dims bytes
// and scored against the query (F32) by dot product: the cosine, up to the storage rounding.
// Memory: chunks x (vector bytes + text + ~64 bytes of bookkeeping). 384 dimensions (bge-small,
// MiniLM): 388 bytes of int8 vector per chunk — 10,000 chunks 3.9 MB, 100,000 chunks 39 MB and
// a scan of ~7 ms for 10,000 chunks on one x86 core (docs/docqa.md has the measured numbers).
//
// Not thread-safe: one owner (DocQa, or the caller) mutates and searches it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace edgellm {

enum class VectorType : uint32_t { kInt8 = 0, kF16 = 1 };
const char* vector_type_name(VectorType t);                 // "int8", "f16"
VectorType vector_type_from_name(const std::string& name);  // throws kInvalidArgument

struct IndexedDocument {
  uint32_t id = 0;
  std::string path;    // as given (docqa: relative to the indexed folder)
  std::string sha256;  // of the content that was indexed (64 hex digits)
  int64_t mtime = 0;   // seconds since the epoch, as the file had it (informative)
  uint64_t bytes = 0;
  std::vector<uint32_t> chunks;  // chunk ids, in document order
};

struct IndexedChunk {
  uint32_t id = 0;
  uint32_t doc = 0;             // IndexedDocument::id
  uint32_t begin = 0, end = 0;  // byte range in the document
  std::string text;
};

// What add_document takes per chunk.
struct ChunkSource {
  uint32_t begin = 0, end = 0;
  std::string text;
};

class VectorIndex {
 public:
  // `model_id` names the embedding model (docqa: its fingerprint and dims): vectors of two
  // models do not compare, and an index refuses queries of another (DocQa checks it).
  VectorIndex(int32_t dims, VectorType type, std::string model_id);

  int32_t dims() const { return dims_; }
  VectorType type() const { return type_; }
  const std::string& model_id() const { return model_id_; }
  size_t document_count() const { return docs_.size(); }
  size_t chunk_count() const { return chunks_.size(); }
  // Vectors, chunk texts and bookkeeping held (an estimate of the heap it occupies).
  size_t memory_bytes() const;

  // Adds a document under `path` (which must not be indexed yet: update_document replaces) with
  // one vector per chunk ([chunks.size(), dims] floats). Returns the document's id. Throws
  // Error(kInvalidArgument) for a path already present or empty, a chunk whose text is not its
  // byte range's length or lies past `bytes`, a vector value that is not finite; nothing is
  // added then.
  uint32_t add_document(const std::string& path, const std::string& sha256, int64_t mtime, uint64_t bytes,
                        std::vector<ChunkSource> chunks, const float* vectors);
  // Removes the document and its chunks (their ids are retired). False when absent.
  bool remove_document(std::string_view path);
  // remove_document + add_document: the new chunks get new ids.
  uint32_t update_document(const std::string& path, const std::string& sha256, int64_t mtime, uint64_t bytes,
                           std::vector<ChunkSource> chunks, const float* vectors);

  const IndexedDocument* find_document(std::string_view path) const;
  const IndexedDocument* document(uint32_t id) const;     // null when absent
  const IndexedChunk* chunk(uint32_t id) const;           // null when absent (removed or never used)
  std::vector<const IndexedDocument*> documents() const;  // by path

  struct Hit {
    uint32_t chunk;  // id
    float score;     // dot(query, stored vector): the cosine for normalised vectors
  };
  // The k best chunks for `query` ([dims] floats, normalised), best first; ties by chunk id.
  // Exact: every chunk is scored (one pass over the vectors, O(chunks x dims), plus a
  // partial sort of chunks x 8 bytes). Throws Error(kInvalidArgument) for a value that is not
  // finite.
  std::vector<Hit> search(const float* query, size_t k) const;

  // The stored vector of chunk `id` as floats (the storage rounding included): for tests and
  // exports. Throws Error(kInvalidArgument) for an unknown id.
  std::vector<float> stored_vector(uint32_t id) const;

  // ---- for the file reader / writer (index_file.h): raw state, validated by the reader
  uint32_t next_doc_id() const { return next_doc_id_; }
  uint32_t next_chunk_id() const { return next_chunk_id_; }
  // Chunks in storage order with their vectors' bytes (kInt8: 4-byte scale + dims codes; kF16:
  // 2 x dims bytes).
  size_t vector_bytes() const;
  const std::vector<IndexedChunk>& chunks_in_order() const { return chunks_; }
  const uint8_t* vector_data(size_t slot) const { return vectors_.data() + slot * vector_bytes(); }
  // Restores a state read from a file: documents, chunks and vector bytes as stored; the ids'
  // counters. The reader has checked every reference; this checks them again (kInvalidFile).
  void restore(std::vector<IndexedDocument> docs, std::vector<IndexedChunk> chunks, std::vector<uint8_t> vectors,
               uint32_t next_doc_id, uint32_t next_chunk_id);

 private:
  void store_vector(const float* v, uint8_t* out) const;
  void check_vectors(const float* vectors, size_t n) const;
  // What add_document checks of a new document (all of it before anything changes).
  void check_new(const std::string& path, uint64_t bytes, const std::vector<ChunkSource>& chunks,
                 const float* vectors) const;

  int32_t dims_;
  VectorType type_;
  std::string model_id_;
  std::map<std::string, IndexedDocument, std::less<>> docs_;        // by path
  std::unordered_map<uint32_t, const IndexedDocument*> doc_by_id_;  // into docs_ (map nodes do not move)
  std::vector<IndexedChunk> chunks_;                 // slot order (removal moves the last chunk into the hole)
  std::vector<uint8_t> vectors_;                     // [slot][vector_bytes()]
  std::unordered_map<uint32_t, size_t> chunk_slot_;  // chunk id -> slot
  uint32_t next_doc_id_ = 1;
  uint32_t next_chunk_id_ = 1;
};

}  // namespace edgellm
