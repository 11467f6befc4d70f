// The index file (docqa/index_file.h): a round trip keeps every document, chunk and vector byte
// (and a second encoding is byte-identical); the header is checked against the layout the
// header comment documents (offsets read here, SHA-256 recomputed); every truncation, every
// flipped byte and thousands of resealed random mutations (checksum recomputed, so the parser
// itself must catch them) are refused with kInvalidFile and a message naming the file, never a
// crash; the writer keeps the previous good file as "<path>.bak".
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/sha256.h"
#include "docqa/index_file.h"
#include "docqa/vector_index.h"
#include "support/test_env.h"

namespace edgellm {
namespace {

constexpr size_t kHeader = 16 + 4 + 4 + 8 + 32;

VectorIndex sample_index(VectorType type) {
  VectorIndex ix(12, type, "fingerprint 0123, bert, dims 12, pooling mean");
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  const std::vector<std::string> texts = {"床前明月光", "Hello world.", "third", "a", "last one"};
  for (int d = 0; d < 4; ++d) {
    std::vector<ChunkSource> chunks;
    std::vector<float> vecs;
    uint32_t pos = 0;
    for (int c = 0; c <= d; ++c) {
      const std::string& t = texts[static_cast<size_t>(c)];
      chunks.push_back({pos, pos + static_cast<uint32_t>(t.size()), t});
      pos += static_cast<uint32_t>(t.size()) + 1;
      for (int i = 0; i < 12; ++i) vecs.push_back(u(rng));
    }
    ix.add_document("dir/doc" + std::to_string(d) + ".txt", Sha256::hex_of(std::to_string(d)), 1700000000 + d, pos,
                    chunks, vecs.data());
  }
  ix.remove_document("dir/doc1.txt");  // holes in the id ranges
  return ix;
}

uint64_t le64(const std::string& b, size_t at) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(b[at + static_cast<size_t>(i)]);
  return v;
}

// Rewrites the header's body size and checksum for the body as it now is.
std::string reseal(std::string bytes) {
  const uint64_t n = bytes.size() - kHeader;
  for (int i = 0; i < 8; ++i) bytes[24 + static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xFF);
  Sha256 h;
  h.update(std::string_view(bytes).substr(kHeader));
  const Sha256::Digest d = h.finish();
  std::memcpy(bytes.data() + 32, d.data(), 32);
  return bytes;
}

// kInvalidFile naming the file, or success; anything else fails the test.
bool decodes(const std::string& bytes, const std::string& what) {
  try {
    decode_index(bytes, "x.index");
    return true;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidFile) << what << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find("'x.index'"), std::string::npos) << what << ": " << e.what();
    return false;
  }
}

TEST(IndexFile, RoundTripKeepsEverything) {
  for (const VectorType type : {VectorType::kInt8, VectorType::kF16}) {
    const VectorIndex ix = sample_index(type);
    const std::string bytes = encode_index(ix, R"({"chunk_tokens": 64})");
    // The documented header.
    EXPECT_EQ(bytes.substr(0, 16), "EDGELLM-DOCINDEX");
    EXPECT_EQ(static_cast<uint8_t>(bytes[16]), kIndexFormatVersion);
    EXPECT_EQ(le64(bytes, 24), bytes.size() - kHeader);
    Sha256 h;
    h.update(std::string_view(bytes).substr(kHeader));
    EXPECT_EQ(Sha256::hex(h.finish()), Sha256::hex([&] {
                Sha256::Digest d;
                std::memcpy(d.data(), bytes.data() + 32, 32);
                return d;
              }()));

    const IndexFile f = decode_index(bytes, "x.index");
    EXPECT_EQ(f.settings, R"({"chunk_tokens": 64})");
    const VectorIndex& back = *f.index;
    EXPECT_EQ(back.model_id(), ix.model_id());
    EXPECT_EQ(back.dims(), ix.dims());
    EXPECT_EQ(back.type(), type);
    EXPECT_EQ(back.next_chunk_id(), ix.next_chunk_id());
    EXPECT_EQ(back.next_doc_id(), ix.next_doc_id());
    ASSERT_EQ(back.document_count(), 3u);
    for (const IndexedDocument* d : ix.documents()) {
      const IndexedDocument* e = back.find_document(d->path);
      ASSERT_NE(e, nullptr) << d->path;
      EXPECT_EQ(e->id, d->id);
      EXPECT_EQ(e->sha256, d->sha256);
      EXPECT_EQ(e->mtime, d->mtime);
      EXPECT_EQ(e->bytes, d->bytes);
      EXPECT_EQ(e->chunks, d->chunks);
      for (const uint32_t id : d->chunks) {
        ASSERT_NE(back.chunk(id), nullptr);
        EXPECT_EQ(back.chunk(id)->text, ix.chunk(id)->text);
        EXPECT_EQ(back.chunk(id)->begin, ix.chunk(id)->begin);
        EXPECT_EQ(back.stored_vector(id), ix.stored_vector(id));
      }
    }
    EXPECT_EQ(encode_index(back, f.settings), bytes) << "a second encoding differs";
  }
}

TEST(IndexFile, EveryTruncationAndFlipIsRefused) {
  const std::string bytes = encode_index(sample_index(VectorType::kInt8), "{}");
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(decodes(bytes.substr(0, n), "truncated to " + std::to_string(n))) << n;
  }
  EXPECT_FALSE(decodes(bytes + "x", "one byte more"));
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string b = bytes;
    b[i] = static_cast<char>(b[i] ^ 0x20);
    EXPECT_FALSE(decodes(b, "flip at " + std::to_string(i))) << i;
  }
  // Another version: its own message.
  std::string v2 = bytes;
  v2[16] = 2;
  try {
    decode_index(v2, "x.index");
    ADD_FAILURE() << "version 2 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("format version 2"), std::string::npos) << e.what();
  }
}

TEST(IndexFile, ResealedMutationsAreRefusedOrExact) {
  // With the checksum recomputed the parser's own checks must hold: a mutated body either fails
  // with kInvalidFile or decodes to an index that encodes back to exactly these bytes.
  const std::string bytes = encode_index(sample_index(VectorType::kF16), "{}");
  std::mt19937 rng(2);
  int accepted = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string b = bytes;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t at = kHeader + rng() % (b.size() - kHeader);
      switch (rng() % 4) {
        case 0: b[at] = static_cast<char>(rng()); break;
        case 1: b[at] = static_cast<char>(0xFF); break;
        case 2: b.erase(at, 1 + rng() % 8); break;
        default: b.insert(at, std::string(1 + rng() % 8, static_cast<char>(rng()))); break;
      }
    }
    b = reseal(b);
    try {
      const IndexFile f = decode_index(b, "x.index");
      ++accepted;
      EXPECT_EQ(encode_index(*f.index, f.settings), b) << "round " << round << " accepted an inexact file";
    } catch (const Error& e) {
      ASSERT_EQ(e.code(), ErrorCode::kInvalidFile) << "round " << round << ": " << e.what();
    }
  }
  // Some mutations only change a vector code or a text byte and are legitimately accepted.
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, 3000);
}

TEST(IndexFile, SaveKeepsTheLastGoodFileAndRefusesACorruptOne) {
  const std::string dir = test::temp_dir() + "/index-file";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/docs.index";
  try {
    load_index_file(path);
    ADD_FAILURE() << "a missing file loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  }
  VectorIndex ix = sample_index(VectorType::kInt8);
  save_index_file(path, ix, "{}");
  EXPECT_FALSE(test::file_exists(index_backup_path(path)));  // nothing to keep yet
  const std::string first = test::read_file(path);
  ix.remove_document("dir/doc0.txt");
  save_index_file(path, ix, "{}");
  EXPECT_EQ(test::read_file(index_backup_path(path)), first);
  EXPECT_EQ(load_index_file(path).index->document_count(), 2u);
  EXPECT_FALSE(test::temp_file_left(path));
  // Damaged on disk later: refused with the path and the way out; the backup still loads.
  std::string bytes = test::read_file(path);
  bytes[bytes.size() / 2] ^= 1;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  try {
    load_index_file(path);
    ADD_FAILURE() << "a damaged file loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidFile);
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find("checksum"), std::string::npos) << msg;
    EXPECT_NE(msg.find(".bak"), std::string::npos) << msg;
  }
  EXPECT_EQ(load_index_file(index_backup_path(path)).index->document_count(), 3u);
}

}  // namespace
}  // namespace edgellm
