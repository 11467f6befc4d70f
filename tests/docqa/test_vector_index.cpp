// The vector index (docqa/vector_index.h) against a brute-force reference written here: every
// stored vector decoded by the test from the documented storage format (int8: f32 scale + codes;
// f16: IEEE halves, decoded bit by bit here), scored in double and sorted naively; top-k must be
// the same ids in the same order. Also: the storage rounding stays within its bound of the
// original vector, removed and updated documents leave no stale hits and never reuse an id, and
// bad input is refused with nothing changed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "docqa/vector_index.h"

namespace edgellm {
namespace {

// IEEE 754 binary16 -> double, from the bits (not core/fp16.h).
double half_to_double(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 0x1F, frac = h & 0x3FF;
  double v;
  if (exp == 0) {
    v = std::ldexp(frac, -24);
  } else if (exp == 31) {
    v = frac ? NAN : INFINITY;
  } else {
    v = std::ldexp(1024 + frac, exp - 25);
  }
  return sign ? -v : v;
}

// The stored vector of storage slot `slot`, decoded from the raw bytes.
std::vector<double> decode_slot(const VectorIndex& ix, size_t slot) {
  const uint8_t* p = ix.vector_data(slot);
  std::vector<double> v(static_cast<size_t>(ix.dims()));
  if (ix.type() == VectorType::kInt8) {
    float scale;
    std::memcpy(&scale, p, 4);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(static_cast<int8_t>(p[4 + i])) * scale;
  } else {
    for (size_t i = 0; i < v.size(); ++i) v[i] = half_to_double(static_cast<uint16_t>(p[2 * i] | (p[2 * i + 1] << 8)));
  }
  return v;
}

struct Ref {
  uint32_t chunk;
  double score;
};

std::vector<Ref> brute_force(const VectorIndex& ix, const std::vector<float>& q, size_t k) {
  std::vector<Ref> all;
  for (size_t slot = 0; slot < ix.chunks_in_order().size(); ++slot) {
    const std::vector<double> v = decode_slot(ix, slot);
    double s = 0;
    for (size_t i = 0; i < v.size(); ++i) s += v[i] * q[i];
    all.push_back({ix.chunks_in_order()[slot].id, s});
  }
  // Naive: repeatedly take the best remaining (score, then smaller id).
  std::vector<Ref> out;
  while (out.size() < k && !all.empty()) {
    size_t best = 0;
    for (size_t i = 1; i < all.size(); ++i) {
      if (all[i].score > all[best].score || (all[i].score == all[best].score && all[i].chunk < all[best].chunk))
        best = i;
    }
    out.push_back(all[best]);
    all.erase(all.begin() + static_cast<std::ptrdiff_t>(best));
  }
  return out;
}

std::vector<float> unit_vector(std::mt19937& rng, int dims) {
  std::normal_distribution<float> g;
  std::vector<float> v(static_cast<size_t>(dims));
  double n = 0;
  for (float& x : v) {
    x = g(rng);
    n += static_cast<double>(x) * x;
  }
  for (float& x : v) x = static_cast<float>(x / std::sqrt(n));
  return v;
}

// A document of `n` chunks with random unit vectors; the vectors are returned too.
std::vector<float> add_random(VectorIndex& ix, std::mt19937& rng, const std::string& path, size_t n,
                              bool update = false) {
  std::vector<ChunkSource> chunks;
  std::vector<float> vecs;
  for (size_t i = 0; i < n; ++i) {
    const std::string text = path + "#" + std::to_string(i) + " ";
    chunks.push_back({static_cast<uint32_t>(i * 100), static_cast<uint32_t>(i * 100 + text.size()), text});
    const std::vector<float> v = unit_vector(rng, ix.dims());
    vecs.insert(vecs.end(), v.begin(), v.end());
  }
  const std::string sha(64, 'a');
  if (update) {
    ix.update_document(path, sha, 0, n * 100 + 100, chunks, vecs.data());
  } else {
    ix.add_document(path, sha, 0, n * 100 + 100, chunks, vecs.data());
  }
  return vecs;
}

void expect_search_matches_reference(const VectorIndex& ix, const std::vector<float>& q, size_t k,
                                     const std::string& what) {
  const std::vector<VectorIndex::Hit> got = ix.search(q.data(), k);
  const std::vector<Ref> want = brute_force(ix, q, k);
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    // Float accumulation vs double: a swap is only allowed between scores within 1.5e-6 (the
    // largest |float - double| score difference measured here is 1.2e-7).
    if (got[i].chunk != want[i].chunk) {
      EXPECT_NEAR(got[i].score, want[i].score, 1.5e-6)
          << what << " rank " << i << ": got chunk " << got[i].chunk << ", the reference " << want[i].chunk;
    }
    EXPECT_NEAR(got[i].score, want[i].score, 1.5e-6) << what << " rank " << i;
    ASSERT_NE(ix.chunk(got[i].chunk), nullptr);
  }
}

TEST(VectorIndex, TopKEqualsBruteForceForBothTypes) {
  for (const VectorType type : {VectorType::kInt8, VectorType::kF16}) {
    std::mt19937 rng(11);
    VectorIndex ix(96, type, "test model");
    for (int d = 0; d < 30; ++d) add_random(ix, rng, "doc" + std::to_string(d), 1 + rng() % 20);
    ASSERT_GT(ix.chunk_count(), 200u);
    for (int q = 0; q < 20; ++q) {
      const std::vector<float> query = unit_vector(rng, 96);
      for (const size_t k : {size_t{1}, size_t{5}, size_t{50}, ix.chunk_count(), ix.chunk_count() + 10}) {
        expect_search_matches_reference(ix, query, k, std::string(vector_type_name(type)) + " k " + std::to_string(k));
      }
    }
    EXPECT_TRUE(ix.search(unit_vector(rng, 96).data(), 0).empty());
  }
}

TEST(VectorIndex, StorageRoundingStaysWithinItsBound) {
  std::mt19937 rng(3);
  for (const VectorType type : {VectorType::kInt8, VectorType::kF16}) {
    VectorIndex ix(384, type, "m");
    const std::vector<float> v = add_random(ix, rng, "a", 8);
    for (size_t c = 0; c < 8; ++c) {
      const uint32_t id = ix.find_document("a")->chunks[c];
      const std::vector<float> back = ix.stored_vector(id);
      float amax = 0;
      for (size_t i = 0; i < 384; ++i) amax = std::max(amax, std::fabs(v[c * 384 + i]));
      for (size_t i = 0; i < 384; ++i) {
        const float x = v[c * 384 + i];
        // int8: half a step of amax / 127; f16: half an ulp (2^-11 relative, 2^-25 near 0).
        const float bound =
            type == VectorType::kInt8 ? amax / 127 / 2 * 1.0001f : std::max(std::fabs(x) * 0.00049f, 3e-8f);
        ASSERT_LE(std::fabs(back[i] - x), bound) << vector_type_name(type) << " chunk " << c << " dim " << i;
      }
      // The query equal to a stored vector finds it first, cosine within 1e-3 of 1 (measured
      // 1 - cosine at most 7.0e-4 for int8, 3.5e-5 for f16 at 384 dims).
      const std::vector<VectorIndex::Hit> hits = ix.search(v.data() + c * 384, 1);
      ASSERT_EQ(hits.size(), 1u);
      EXPECT_EQ(hits[0].chunk, id);
      EXPECT_NEAR(hits[0].score, 1.0f, 1e-3f);
    }
  }
}

TEST(VectorIndex, RemoveAndUpdateLeaveNoStaleHits) {
  std::mt19937 rng(5);
  VectorIndex ix(32, VectorType::kInt8, "m");
  std::map<std::string, std::vector<float>> vecs;
  for (int d = 0; d < 12; ++d) vecs["d" + std::to_string(d)] = add_random(ix, rng, "d" + std::to_string(d), 6);
  std::vector<uint32_t> retired;
  const auto retire = [&](const std::string& path) {
    for (uint32_t id : ix.find_document(path)->chunks) retired.push_back(id);
  };
  retire("d3");
  ASSERT_TRUE(ix.remove_document("d3"));
  EXPECT_FALSE(ix.remove_document("d3"));
  retire("d7");
  vecs["d7"] = add_random(ix, rng, "d7", 4, /*update=*/true);
  retire("d0");
  ASSERT_TRUE(ix.remove_document("d0"));
  add_random(ix, rng, "d0", 2);  // the same path again: new ids
  EXPECT_EQ(ix.document_count(), 11u + 1u - 1u);
  EXPECT_EQ(ix.chunk_count(), 12u * 6 - 6 - 6 + 4 - 6 + 2 + 0u);
  for (uint32_t id : retired) EXPECT_EQ(ix.chunk(id), nullptr) << id;
  // A query equal to a removed chunk's vector: its id is never a hit; all chunks listed match
  // the brute force over what remains.
  for (int q = 0; q < 10; ++q) {
    const std::vector<float> query =
        q < 6 ? std::vector<float>(vecs["d3"].begin() + q * 32, vecs["d3"].begin() + q * 32 + 32)
              : unit_vector(rng, 32);
    const std::vector<VectorIndex::Hit> hits = ix.search(query.data(), ix.chunk_count());
    EXPECT_EQ(hits.size(), ix.chunk_count());
    for (const VectorIndex::Hit& h : hits) {
      EXPECT_EQ(std::find(retired.begin(), retired.end(), h.chunk), retired.end()) << "stale chunk " << h.chunk;
      const IndexedChunk* c = ix.chunk(h.chunk);
      ASSERT_NE(c, nullptr);
      ASSERT_NE(ix.document(c->doc), nullptr);
      EXPECT_EQ(c->text.rfind(ix.document(c->doc)->path + "#", 0), 0u) << "chunk text of another document";
    }
    expect_search_matches_reference(ix, query, 10, "after removals");
  }
  // Ids only grow.
  uint32_t max_id = 0;
  for (const IndexedChunk& c : ix.chunks_in_order()) max_id = std::max(max_id, c.id);
  EXPECT_LT(max_id, ix.next_chunk_id());
  for (uint32_t id : retired) EXPECT_LT(id, ix.next_chunk_id());
}

TEST(VectorIndex, BadInputIsRefusedAndChangesNothing) {
  std::mt19937 rng(9);
  VectorIndex ix(8, VectorType::kF16, "m");
  add_random(ix, rng, "keep", 3);
  const auto code_of = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return static_cast<int>(e.code());
    }
    return -1;
  };
  std::vector<float> v(16, 0.25f);
  const std::string sha(64, 'b');
  std::vector<ChunkSource> two = {{0, 2, "ab"}, {2, 4, "cd"}};
  const int bad = static_cast<int>(ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { ix.add_document("keep", sha, 0, 4, two, v.data()); }), bad);  // already there
  EXPECT_EQ(code_of([&] { ix.add_document("", sha, 0, 4, two, v.data()); }), bad);
  EXPECT_EQ(code_of([&] { ix.add_document("x", sha, 0, 3, two, v.data()); }), bad);             // past the document
  EXPECT_EQ(code_of([&] { ix.add_document("x", sha, 0, 4, {{0, 3, "ab"}}, v.data()); }), bad);  // text != range
  EXPECT_EQ(code_of([&] { ix.add_document("x", sha, 0, 4, two, nullptr); }), bad);
  v[9] = NAN;
  EXPECT_EQ(code_of([&] { ix.add_document("x", sha, 0, 4, two, v.data()); }), bad);
  // An update with a bad vector keeps the old version.
  const std::vector<uint32_t> before = ix.find_document("keep")->chunks;
  EXPECT_EQ(code_of([&] { ix.update_document("keep", sha, 0, 4, two, v.data()); }), bad);
  ASSERT_NE(ix.find_document("keep"), nullptr);
  EXPECT_EQ(ix.find_document("keep")->chunks, before);
  EXPECT_EQ(ix.chunk_count(), 3u);
  EXPECT_EQ(code_of([&] { ix.search(v.data() + 8, 3); }), bad);  // NaN in the query
  EXPECT_EQ(code_of([] { VectorIndex(0, VectorType::kInt8, "m"); }), bad);
  EXPECT_EQ(code_of([] { vector_type_from_name("f32"); }), bad);
}

}  // namespace
}  // namespace edgellm
