#include "docqa/vector_index.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_set>

#include "core/error.h"
#include "core/fp16.h"
#include "core/utf8.h"

namespace edgellm {

const char* vector_type_name(VectorType t) {
  return t == VectorType::kF16 ? "f16" : "int8";
}

VectorType vector_type_from_name(const std::string& name) {
  if (name == "int8") return VectorType::kInt8;
  if (name == "f16") return VectorType::kF16;
  throw Error(ErrorCode::kInvalidArgument, "vector type '" + name + "' is not one of int8, f16");
}

VectorIndex::VectorIndex(int32_t dims, VectorType type, std::string model_id)
    : dims_(dims), type_(type), model_id_(std::move(model_id)) {
  require(dims >= 1 && dims <= 65536, ErrorCode::kInvalidArgument,
          "vector index: dims " + std::to_string(dims) + " outside [1, 65536]");
  require(type == VectorType::kInt8 || type == VectorType::kF16, ErrorCode::kInvalidArgument,
          "vector index: unknown vector type");
}

size_t VectorIndex::vector_bytes() const {
  return type_ == VectorType::kInt8 ? sizeof(float) + static_cast<size_t>(dims_)
                                    : sizeof(uint16_t) * static_cast<size_t>(dims_);
}

size_t VectorIndex::memory_bytes() const {
  size_t bytes = vectors_.capacity() + chunk_slot_.size() * 32;
  for (const IndexedChunk& c : chunks_) bytes += sizeof(IndexedChunk) + c.text.capacity();
  for (const auto& [path, d] : docs_) {
    // A map node (~32 bytes of links), the key and the document, a doc_by_id_ entry (~32).
    bytes += 64 + path.capacity() + sizeof(IndexedDocument) + d.path.capacity() + d.sha256.capacity() +
             d.chunks.capacity() * sizeof(uint32_t);
  }
  return bytes;
}

void VectorIndex::check_vectors(const float* vectors, size_t n) const {
  for (size_t i = 0; i < n * static_cast<size_t>(dims_); ++i) {
    require(
        std::isfinite(vectors[i]), ErrorCode::kInvalidArgument,
        "vector index: vector " + std::to_string(i / static_cast<size_t>(dims_)) + " has a value that is not finite");
  }
}

void VectorIndex::store_vector(const float* v, uint8_t* out) const {
  if (type_ == VectorType::kF16) {
    for (int32_t i = 0; i < dims_; ++i) {
      const uint16_t h = fp32_to_fp16(v[i]);
      std::memcpy(out + 2 * static_cast<size_t>(i), &h, sizeof h);
    }
    return;
  }
  float amax = 0;
  for (int32_t i = 0; i < dims_; ++i) amax = std::max(amax, std::fabs(v[i]));
  const float scale = amax / 127.0f;
  const float inv = scale > 0 ? 1.0f / scale : 0.0f;
  std::memcpy(out, &scale, sizeof scale);
  for (int32_t i = 0; i < dims_; ++i) {
    const auto q = static_cast<int8_t>(std::clamp(std::nearbyint(v[i] * inv), -127.0f, 127.0f));
    std::memcpy(out + sizeof(float) + static_cast<size_t>(i), &q, 1);
  }
}

void VectorIndex::check_new(const std::string& path, uint64_t bytes, const std::vector<ChunkSource>& chunks,
                            const float* vectors) const {
  require(!path.empty(), ErrorCode::kInvalidArgument, "vector index: a document needs a path");
  // The file format stores paths as checked UTF-8: one that is not would make the saved index
  // unreadable (and its documents lost with it).
  require(
      utf8::is_valid(path), ErrorCode::kInvalidArgument,
      "vector index: a document's path is not valid UTF-8 (byte " + std::to_string(utf8::first_invalid(path)) + ")");
  require(chunks.empty() || vectors != nullptr, ErrorCode::kInvalidArgument, "vector index: chunks without vectors");
  for (const ChunkSource& c : chunks) {
    require(c.begin <= c.end && c.end <= bytes && c.text.size() == c.end - c.begin, ErrorCode::kInvalidArgument,
            "vector index: a chunk of '" + path + "' has the range [" + std::to_string(c.begin) + ", " +
                std::to_string(c.end) + ") with " + std::to_string(c.text.size()) + " bytes of text in a " +
                std::to_string(bytes) + "-byte document");
  }
  check_vectors(vectors, chunks.size());
}

uint32_t VectorIndex::add_document(const std::string& path, const std::string& sha256, int64_t mtime, uint64_t bytes,
                                   std::vector<ChunkSource> chunks, const float* vectors) {
  require(find_document(path) == nullptr, ErrorCode::kInvalidArgument,
          "vector index: '" + path + "' is indexed already (update it instead)");
  check_new(path, bytes, chunks, vectors);
  IndexedDocument doc;
  doc.id = next_doc_id_++;
  doc.path = path;
  doc.sha256 = sha256;
  doc.mtime = mtime;
  doc.bytes = bytes;
  const size_t vb = vector_bytes();
  vectors_.reserve(vectors_.size() + chunks.size() * vb);
  for (size_t i = 0; i < chunks.size(); ++i) {
    IndexedChunk c;
    c.id = next_chunk_id_++;
    c.doc = doc.id;
    c.begin = chunks[i].begin;
    c.end = chunks[i].end;
    c.text = std::move(chunks[i].text);
    doc.chunks.push_back(c.id);
    chunk_slot_[c.id] = chunks_.size();
    chunks_.push_back(std::move(c));
    vectors_.resize(vectors_.size() + vb);
    store_vector(vectors + i * static_cast<size_t>(dims_), vectors_.data() + vectors_.size() - vb);
  }
  const uint32_t id = doc.id;
  const auto [it, inserted] = docs_.emplace(path, std::move(doc));
  (void)inserted;
  doc_by_id_[id] = &it->second;
  return id;
}

bool VectorIndex::remove_document(std::string_view path) {
  const auto it = docs_.find(path);
  if (it == docs_.end()) return false;
  const size_t vb = vector_bytes();
  for (const uint32_t id : it->second.chunks) {
    const auto s = chunk_slot_.find(id);
    if (s == chunk_slot_.end()) continue;
    const size_t slot = s->second;
    const size_t last = chunks_.size() - 1;
    if (slot != last) {  // the last chunk moves into the hole
      chunks_[slot] = std::move(chunks_[last]);
      std::memcpy(vectors_.data() + slot * vb, vectors_.data() + last * vb, vb);
      chunk_slot_[chunks_[slot].id] = slot;
    }
    chunks_.pop_back();
    vectors_.resize(vectors_.size() - vb);
    chunk_slot_.erase(id);
  }
  doc_by_id_.erase(it->second.id);
  docs_.erase(it);
  return true;
}

uint32_t VectorIndex::update_document(const std::string& path, const std::string& sha256, int64_t mtime, uint64_t bytes,
                                      std::vector<ChunkSource> chunks, const float* vectors) {
  check_new(path, bytes, chunks, vectors);  // before anything is removed
  remove_document(path);
  return add_document(path, sha256, mtime, bytes, std::move(chunks), vectors);
}

const IndexedDocument* VectorIndex::find_document(std::string_view path) const {
  const auto it = docs_.find(path);
  return it == docs_.end() ? nullptr : &it->second;
}

const IndexedDocument* VectorIndex::document(uint32_t id) const {
  const auto it = doc_by_id_.find(id);
  return it == doc_by_id_.end() ? nullptr : it->second;
}

const IndexedChunk* VectorIndex::chunk(uint32_t id) const {
  const auto it = chunk_slot_.find(id);
  return it == chunk_slot_.end() ? nullptr : &chunks_[it->second];
}

std::vector<const IndexedDocument*> VectorIndex::documents() const {
  std::vector<const IndexedDocument*> out;
  out.reserve(docs_.size());
  for (const auto& entry : docs_) out.push_back(&entry.second);  // the map's order: by path
  return out;
}

std::vector<float> VectorIndex::stored_vector(uint32_t id) const {
  const auto it = chunk_slot_.find(id);
  require(it != chunk_slot_.end(), ErrorCode::kInvalidArgument, "vector index: no chunk " + std::to_string(id));
  const uint8_t* p = vector_data(it->second);
  std::vector<float> v(static_cast<size_t>(dims_));
  if (type_ == VectorType::kF16) {
    for (int32_t i = 0; i < dims_; ++i) {
      uint16_t h;
      std::memcpy(&h, p + 2 * static_cast<size_t>(i), sizeof h);
      v[static_cast<size_t>(i)] = fp16_to_fp32(h);
    }
  } else {
    float scale;
    std::memcpy(&scale, p, sizeof scale);
    for (int32_t i = 0; i < dims_; ++i)
      v[static_cast<size_t>(i)] = static_cast<float>(static_cast<int8_t>(p[4 + i])) * scale;
  }
  return v;
}

std::vector<VectorIndex::Hit> VectorIndex::search(const float* query, size_t k) const {
  require(query != nullptr, ErrorCode::kInvalidArgument, "vector index: no query vector");
  for (int32_t i = 0; i < dims_; ++i) {
    require(std::isfinite(query[i]), ErrorCode::kInvalidArgument,
            "vector index: the query has a value that is not finite");
  }
  std::vector<Hit> hits(chunks_.size());
  const size_t vb = vector_bytes();
  const int32_t n = dims_;
  for (size_t slot = 0; slot < chunks_.size(); ++slot) {
    const uint8_t* p = vectors_.data() + slot * vb;
    float score = 0;
    if (type_ == VectorType::kInt8) {
      float scale;
      std::memcpy(&scale, p, sizeof scale);
      const auto* codes = reinterpret_cast<const int8_t*>(p + sizeof(float));
      float dot = 0;
      for (int32_t i = 0; i < n; ++i) dot += query[i] * static_cast<float>(codes[i]);
      score = dot * scale;
    } else {
      for (int32_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * static_cast<size_t>(i), sizeof h);
        score += query[i] * fp16_to_fp32(h);
      }
    }
    hits[slot] = {chunks_[slot].id, score};
  }
  const auto better = [](const Hit& a, const Hit& b) {
    return a.score > b.score || (a.score == b.score && a.chunk < b.chunk);
  };
  k = std::min(k, hits.size());
  std::partial_sort(hits.begin(), hits.begin() + static_cast<std::ptrdiff_t>(k), hits.end(), better);
  hits.resize(k);
  return hits;
}

void VectorIndex::restore(std::vector<IndexedDocument> docs, std::vector<IndexedChunk> chunks,
                          std::vector<uint8_t> vectors, uint32_t next_doc_id, uint32_t next_chunk_id) {
  require(vectors.size() == chunks.size() * vector_bytes(), ErrorCode::kInvalidFile,
          "vector index: vector bytes do not match the chunk count");
  std::unordered_map<uint32_t, size_t> slots;
  std::unordered_map<uint32_t, const IndexedDocument*> doc_of;
  std::unordered_set<std::string_view> paths;
  for (const IndexedDocument& d : docs) {
    require(d.id >= 1 && d.id < next_doc_id && doc_of.emplace(d.id, &d).second, ErrorCode::kInvalidFile,
            "vector index: document id " + std::to_string(d.id) + " is repeated or beyond the id counter");
    require(!d.path.empty() && paths.insert(d.path).second, ErrorCode::kInvalidFile,
            "vector index: a document path is empty or repeated");
  }
  for (size_t i = 0; i < chunks.size(); ++i) {
    const IndexedChunk& c = chunks[i];
    require(c.id >= 1 && c.id < next_chunk_id && slots.emplace(c.id, i).second, ErrorCode::kInvalidFile,
            "vector index: chunk id " + std::to_string(c.id) + " is repeated or beyond the id counter");
    const auto d = doc_of.find(c.doc);
    require(d != doc_of.end() && c.begin <= c.end && c.end <= d->second->bytes && c.text.size() == c.end - c.begin,
            ErrorCode::kInvalidFile,
            "vector index: chunk " + std::to_string(c.id) + " names no document or has a range that does not fit");
  }
  std::unordered_set<uint32_t> listed;  // every chunk in exactly one list: its document's
  for (const IndexedDocument& d : docs) {
    for (const uint32_t id : d.chunks) {
      const auto s = slots.find(id);
      require(s != slots.end() && chunks[s->second].doc == d.id && listed.insert(id).second, ErrorCode::kInvalidFile,
              "vector index: document " + std::to_string(d.id) + " lists chunk " + std::to_string(id) +
                  ", which is not its own or listed twice");
    }
  }
  require(listed.size() == chunks.size(), ErrorCode::kInvalidFile,
          "vector index: a chunk belongs to no document's list");
  if (type_ == VectorType::kInt8) {
    for (size_t i = 0; i < chunks.size(); ++i) {
      float scale;
      std::memcpy(&scale, vectors.data() + i * vector_bytes(), sizeof scale);
      require(std::isfinite(scale) && scale >= 0, ErrorCode::kInvalidFile,
              "vector index: a vector scale is not finite");
    }
  }
  docs_.clear();
  doc_by_id_.clear();
  for (IndexedDocument& d : docs) {
    std::string key = d.path;
    const auto it = docs_.emplace(std::move(key), std::move(d)).first;
    doc_by_id_[it->second.id] = &it->second;
  }
  chunks_ = std::move(chunks);
  vectors_ = std::move(vectors);
  chunk_slot_ = std::move(slots);
  next_doc_id_ = next_doc_id;
  next_chunk_id_ = next_chunk_id;
}

}  // namespace edgellm
