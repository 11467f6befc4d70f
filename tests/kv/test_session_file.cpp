// Session bytes (kv/session_file.h): a sequence saved and restored into another cache (another
// block size, a pool with other blocks in use) reads back the same rows and ids; every truncation
// and every single-bit flip of a session is refused as kInvalidFile, another model's or KV
// type's as kInvalidArgument, and a refusal leaves the cache as it was.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/hash.h"
#include "kv/kv_cache.h"
#include "kv/session_file.h"
#include "support/test_env.h"

namespace edgellm {
namespace {

constexpr uint64_t kFingerprint = 0x1234abcd5678ef01ULL;

KvCacheParams params(TensorType type, int32_t block_tokens, std::optional<TensorType> type_v = std::nullopt) {
  KvCacheParams p;
  p.n_layer = 2;
  p.n_head_kv = 2;
  p.head_dim = 32;
  p.type_k = type;
  p.type_v = type_v.value_or(type);
  p.block_tokens = block_tokens;
  p.n_seq_max = 2;
  p.n_ctx = 64;
  p.n_blocks = 64 / block_tokens * 2;
  return p;
}

float value(int layer, int kv, int head, int pos, int i) {
  return static_cast<float>(layer * 1000 + kv * 500 + head * 100 + pos) * 0.25f + static_cast<float>(i) / 32.0f;
}

// Positions [0, n) with token id 100 + pos and recognisable rows.
void fill(KvCache& c, int32_t seq, int32_t n) {
  const auto& p = c.params();
  c.seq_grow(seq, n);
  std::vector<float> row(static_cast<size_t>(p.head_dim));
  for (int32_t pos = 0; pos < n; ++pos) {
    c.seq_set_token(seq, pos, 100 + pos);
    for (int l = 0; l < p.n_layer; ++l) {
      for (int h = 0; h < p.n_head_kv; ++h) {
        for (int kv = 0; kv < 2; ++kv) {
          for (int i = 0; i < p.head_dim; ++i) row[static_cast<size_t>(i)] = value(l, kv, h, pos, i);
          if (kv == 0) {
            c.store_k_row(row.data(), c.k_row(seq, l, h, pos));
          } else {
            c.store_v_row(row.data(), c.v_row(seq, l, h, pos));
          }
        }
      }
    }
  }
  c.seq_publish(seq);
}

// The rows of `seq` in `c` equal those of `ref_seq` in `ref` byte for byte (positions [0, n)).
void expect_same_rows(KvCache& c, int32_t seq, KvCache& ref, int32_t ref_seq, int32_t n) {
  const auto& p = c.params();
  ASSERT_EQ(c.seq_length(seq), n);
  for (int32_t pos = 0; pos < n; ++pos) {
    EXPECT_EQ(c.seq_tokens(seq)[static_cast<size_t>(pos)], 100 + pos);
    for (int l = 0; l < p.n_layer; ++l) {
      for (int h = 0; h < p.n_head_kv; ++h) {
        ASSERT_EQ(std::memcmp(c.k_row(seq, l, h, pos), ref.k_row(ref_seq, l, h, pos), c.k_row_bytes()), 0) << pos;
        ASSERT_EQ(std::memcmp(c.v_row(seq, l, h, pos), ref.v_row(ref_seq, l, h, pos), c.v_row_bytes()), 0) << pos;
      }
    }
  }
}

ErrorCode refusal(const std::string& bytes, uint64_t fingerprint, const KvCacheParams& p) {
  try {
    (void)decode_session(bytes, fingerprint, p);
  } catch (const Error& e) {
    return e.code();
  }
  return ErrorCode::kInternal;  // accepted
}

TEST(SessionFile, RoundTripIntoAnotherBlockSizeAndAPartlyUsedPool) {
  const std::pair<TensorType, TensorType> kTypes[] = {
      {TensorType::F32, TensorType::F32},   {TensorType::F16, TensorType::F16},  {TensorType::Q8_0, TensorType::Q8_0},
      {TensorType::Q4_0, TensorType::Q4_0}, {TensorType::Q8_0, TensorType::Q4_0}, {TensorType::F16, TensorType::Q4_0}};
  for (const auto& [type, type_v] : kTypes) {
    SCOPED_TRACE(std::string(tensor_type_name(type)) + "/" + tensor_type_name(type_v));
    KvCache src(params(type, 4, type_v));
    fill(src, 1, 23);
    const std::string bytes = encode_session(src, 1, kFingerprint, "payload \xe6\x9c\x88");
    KvCache dst(params(type, 8, type_v));
    fill(dst, 0, 9);  // other blocks in use
    const SessionView s = decode_session(bytes, kFingerprint, dst.params());
    EXPECT_EQ(s.payload, "payload \xe6\x9c\x88");
    ASSERT_EQ(s.tokens.size(), 23u);
    import_session(dst, 1, s, 23);
    expect_same_rows(dst, 1, src, 1, 23);
    // Its full blocks are in the prefix cache of the new pool.
    EXPECT_EQ(dst.cached_prefix_length(s.tokens.data(), 23), 16);
    // A part of it only.
    import_session(dst, 1, s, 10);
    expect_same_rows(dst, 1, src, 1, 10);
  }
}

TEST(SessionFile, EveryTruncationAndEveryBitFlipIsRefused) {
  KvCache src(params(TensorType::F16, 4));
  fill(src, 0, 5);
  const std::string bytes = encode_session(src, 0, kFingerprint, "{}");
  const KvCacheParams p = src.params();
  ASSERT_EQ(refusal(bytes, kFingerprint, p), ErrorCode::kInternal) << "the intact session must be accepted";
  for (size_t n = 0; n < bytes.size(); ++n) {
    ASSERT_EQ(refusal(bytes.substr(0, n), kFingerprint, p), ErrorCode::kInvalidFile) << "truncated to " << n;
  }
  EXPECT_EQ(refusal(bytes + "x", kFingerprint, p), ErrorCode::kInvalidFile);
  for (size_t bit = 0; bit < bytes.size() * 8; ++bit) {
    std::string flipped = bytes;
    flipped[bit / 8] = static_cast<char>(flipped[bit / 8] ^ (1 << (bit % 8)));
    ASSERT_EQ(refusal(flipped, kFingerprint, p), ErrorCode::kInvalidFile) << "bit " << bit;
  }
}

TEST(SessionFile, AnotherModelOrKvTypeIsRefusedAndNothingChanges) {
  KvCache src(params(TensorType::F16, 4));
  fill(src, 0, 6);
  const std::string bytes = encode_session(src, 0, kFingerprint, "");
  EXPECT_EQ(refusal(bytes, kFingerprint + 1, src.params()), ErrorCode::kInvalidArgument);
  EXPECT_EQ(refusal(bytes, kFingerprint, params(TensorType::F32, 4)), ErrorCode::kInvalidArgument);
  EXPECT_EQ(refusal(bytes, kFingerprint, params(TensorType::Q8_0, 4)), ErrorCode::kInvalidArgument);
  // K and V types are checked separately.
  KvCache mixed(params(TensorType::Q8_0, 4, TensorType::Q4_0));
  fill(mixed, 0, 6);
  const std::string mixed_bytes = encode_session(mixed, 0, kFingerprint, "");
  EXPECT_EQ(refusal(mixed_bytes, kFingerprint, mixed.params()), ErrorCode::kInternal);
  for (const auto& [k, v] : {std::pair{TensorType::Q4_0, TensorType::Q4_0}, std::pair{TensorType::Q8_0, TensorType::Q8_0},
                             std::pair{TensorType::Q4_0, TensorType::Q8_0}, std::pair{TensorType::F16, TensorType::F16}}) {
    EXPECT_EQ(refusal(mixed_bytes, kFingerprint, params(k, 4, v)), ErrorCode::kInvalidArgument)
        << tensor_type_name(k) << "/" << tensor_type_name(v);
  }
  try {
    (void)decode_session(mixed_bytes, kFingerprint, params(TensorType::Q8_0, 4));
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("it holds q8_0/q4_0 KV (K/V) but this context uses q8_0/q8_0"),
              std::string::npos)
        << e.what();
  }
  KvCacheParams shape = src.params();
  shape.n_head_kv = 1;
  EXPECT_EQ(refusal(bytes, kFingerprint, shape), ErrorCode::kInvalidArgument);
  try {
    (void)decode_session(bytes, kFingerprint + 1, src.params());
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("another model"), std::string::npos) << e.what();
  }
  // Ids outside the vocabulary (a crafted file with a valid checksum).
  const SessionView ok = decode_session(bytes, kFingerprint, src.params());
  EXPECT_NO_THROW(check_session_tokens(ok, 200));
  try {
    check_session_tokens(ok, 103);
    FAIL() << "expected kInvalidFile";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidFile);
  }
  // Too long for the context: kContextFull, the sequence left empty.
  KvCacheParams small = src.params();
  small.n_ctx = 4;
  KvCache tiny(small);
  const SessionView s = decode_session(bytes, kFingerprint, tiny.params());
  EXPECT_THROW(import_session(tiny, 0, s, 6), Error);
  EXPECT_EQ(tiny.seq_length(0), 0);
}

// The bytes of an older format version from a version 3 file: the exact-positions field (u32 at
// 56) removed; for version 1 also one u32 KV type at 12 for K and V. Checksum (hash_bytes of
// everything before it, seed "kv-sess") recomputed.
std::string as_version(std::string bytes, uint32_t version) {
  bytes.erase(56, 4);
  std::memcpy(bytes.data() + 8, &version, 4);
  if (version == 1) {
    uint16_t type16 = 0;
    std::memcpy(&type16, bytes.data() + 12, 2);
    const uint32_t type = type16;
    std::memcpy(bytes.data() + 12, &type, 4);
  }
  const uint64_t sum = hash_bytes(0x6b762d73657373ULL, bytes.data(), bytes.size() - 8);
  std::memcpy(bytes.data() + bytes.size() - 8, &sum, 8);
  return bytes;
}

// Version 1 (one KV type for K and V) and version 2 (no exact-positions field) files still
// restore; every position of them counts as exact.
TEST(SessionFile, VersionOneAndTwoFilesAreRead) {
  for (const uint32_t version : {1u, 2u}) {
    SCOPED_TRACE(version);
    KvCache src(params(TensorType::F16, 4));
    fill(src, 0, 9);
    const std::string bytes = as_version(encode_session(src, 0, kFingerprint, "old"), version);
    KvCache dst(params(TensorType::F16, 4));
    const SessionView s = decode_session(bytes, kFingerprint, dst.params());
    EXPECT_EQ(s.payload, "old");
    EXPECT_EQ(s.exact_positions, 9);
    import_session(dst, 0, s, 9);
    expect_same_rows(dst, 0, src, 0, 9);
    EXPECT_EQ(dst.cached_prefix_length(s.tokens.data(), 9), 8);
    EXPECT_EQ(refusal(bytes, kFingerprint, params(TensorType::F16, 4, TensorType::Q8_0)), ErrorCode::kInvalidArgument);
  }
}

// A sequence whose rows a context shift moved records where its exact prefix ends (the block that
// held n_keep); restored into a cache of any block size, only full blocks inside that prefix go to
// the prefix cache, and truncating back into it makes the sequence an ordinary one again.
TEST(SessionFile, ShiftedSequenceRecordsItsExactPrefix) {
  KvCache src(params(TensorType::F32, 4));
  fill(src, 0, 30);
  src.seq_drop(0, 9, 10);  // keep 9: the block holding position 9 (block 2) and later are moved
  ASSERT_EQ(src.seq_length(0), 20);
  EXPECT_EQ(src.seq_exact_length(0), 8);
  const std::string bytes = encode_session(src, 0, kFingerprint, "");
  for (const int32_t block : {2, 4, 8}) {
    SCOPED_TRACE(block);
    KvCache dst(params(TensorType::F32, block));
    const SessionView s = decode_session(bytes, kFingerprint, dst.params());
    EXPECT_EQ(s.exact_positions, 8);
    import_session(dst, 0, s, 20);
    EXPECT_EQ(dst.seq_exact_length(0), 8 / block * block);
    EXPECT_EQ(dst.cached_prefix_length(s.tokens.data(), 20), 8 / block * block);
    // Restoring fewer positions than the exact prefix: all of them exact.
    import_session(dst, 0, s, 6);
    EXPECT_EQ(dst.seq_exact_length(0), 6);
  }
  // An unshifted sequence: every position exact.
  KvCache plain(params(TensorType::F32, 4));
  fill(plain, 0, 13);
  EXPECT_EQ(decode_session(encode_session(plain, 0, kFingerprint, ""), kFingerprint, plain.params()).exact_positions, 13);
  // A crafted file (valid checksum) claiming more exact positions than tokens is refused.
  std::string crafted = bytes;
  const uint32_t too_many = 21;
  std::memcpy(crafted.data() + 56, &too_many, 4);
  const uint64_t sum = hash_bytes(0x6b762d73657373ULL, crafted.data(), crafted.size() - 8);
  std::memcpy(crafted.data() + crafted.size() - 8, &sum, 8);
  EXPECT_EQ(refusal(crafted, kFingerprint, plain.params()), ErrorCode::kInvalidFile);
}

// Session files hold a conversation: written private (0600) whatever the umask, and read back.
TEST(SessionFile, FilesArePrivateAndReadBack) {
  KvCache src(params(TensorType::F16, 4));
  fill(src, 0, 5);
  const std::string bytes = encode_session(src, 0, kFingerprint, "{\"messages\": []}");
  const std::string path = test::temp_dir() + "/chat.session";
  write_session_file(path, bytes);
  EXPECT_EQ(read_session_file(path), bytes);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_FALSE(test::temp_file_left(path));
}

}  // namespace
}  // namespace edgellm
