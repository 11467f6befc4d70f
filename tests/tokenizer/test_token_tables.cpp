// The tokenizer's flat lookup tables (tokenizer/token_index.h, tokenizer/merge_table.h) against
// std::map built from the same data: every present key, absent keys, duplicates.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "tokenizer/merge_table.h"
#include "tokenizer/token_index.h"

namespace edgellm {
namespace {

std::string random_text(std::mt19937& rng) {
  std::uniform_int_distribution<int> len(0, 24), byte(0, 255);
  std::string s(static_cast<size_t>(len(rng)), '\0');
  for (auto& c : s) c = static_cast<char>(byte(rng) % 6 == 0 ? 'a' + byte(rng) % 3 : byte(rng));
  return s;
}

TEST(TokenIndex, FindsEveryTokenLastDuplicateWinsAndMissesTheRest) {
  std::mt19937 rng(5);
  std::vector<std::string> tokens;
  for (int i = 0; i < 20000; ++i) tokens.push_back(random_text(rng));
  tokens.push_back("");          // an empty token text
  tokens.push_back(tokens[17]);  // explicit duplicates: the later id must win
  tokens.push_back(tokens[17]);
  std::map<std::string, int32_t> want;
  for (size_t i = 0; i < tokens.size(); ++i) want[tokens[i]] = static_cast<int32_t>(i);
  TokenIndex index;
  index.build(tokens);
  for (const auto& [text, id] : want) ASSERT_EQ(index.find(tokens, text), id) << "'" << text << "'";
  EXPECT_EQ(index.find(tokens, tokens[17]), static_cast<int32_t>(tokens.size() - 1));
  int absent = 0;
  for (int i = 0; i < 20000; ++i) {
    const std::string probe = random_text(rng) + "#";
    if (want.count(probe) != 0) continue;
    ASSERT_EQ(index.find(tokens, probe), -1) << "'" << probe << "'";
    ++absent;
  }
  EXPECT_GT(absent, 10000);
  EXPECT_LE(index.bytes(), 4 * 65536u);  // 2 x 20003 rounded up to a power of two, 4 bytes each
  TokenIndex empty;
  EXPECT_EQ(empty.find(tokens, "a"), -1);
}

TEST(MergeTable, FirstInsertWinsAndLookupsMatchAMap) {
  std::mt19937 rng(9);
  std::uniform_int_distribution<int32_t> id(0, 3000);
  constexpr size_t kMerges = 50000;
  MergeTable table;
  table.reserve(kMerges);
  std::map<std::pair<int32_t, int32_t>, MergeTable::Merge> want;
  for (size_t rank = 0; rank < kMerges; ++rank) {
    const int32_t l = id(rng), r = id(rng);
    const MergeTable::Merge m{static_cast<int32_t>(rank), id(rng)};
    table.insert_if_absent(l, r, m);
    want.try_emplace({l, r}, m);
  }
  EXPECT_EQ(table.size(), want.size());
  for (const auto& [key, m] : want) {
    const MergeTable::Merge* got = table.find(key.first, key.second);
    ASSERT_NE(got, nullptr);
    ASSERT_EQ(got->rank, m.rank);
    ASSERT_EQ(got->result, m.result);
  }
  for (int i = 0; i < 50000; ++i) {
    const int32_t l = id(rng), r = id(rng) + 5000;  // right ids never inserted
    ASSERT_EQ(table.find(l, r), nullptr);
  }
  // Id 0 pairs and the largest ids are ordinary keys (no collision with the empty marker).
  MergeTable edge;
  edge.reserve(3);
  edge.insert_if_absent(0, 0, {1, 2});
  edge.insert_if_absent(0x7FFFFFFF, 0x7FFFFFFF, {3, 4});
  ASSERT_NE(edge.find(0, 0), nullptr);
  EXPECT_EQ(edge.find(0x7FFFFFFF, 0x7FFFFFFF)->result, 4);
  EXPECT_EQ(edge.find(0, 1), nullptr);
  EXPECT_EQ(edge.find(-1, -1), nullptr);  // its key is the empty-slot marker
  EXPECT_EQ(edge.find(-1, 0), nullptr);
  EXPECT_THROW(edge.insert_if_absent(-1, 5, {0, 0}), Error);
}

TEST(MergeTable, MoreInsertsThanReservedIsAnError) {
  MergeTable table;
  table.reserve(2);
  int32_t inserted = 0;
  try {
    for (int32_t i = 0; i < 100; ++i, ++inserted) table.insert_if_absent(i, i, {i, i});
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInternal);
  }
  EXPECT_GE(inserted, 2);
  EXPECT_LT(inserted, 100);
}

}  // namespace
}  // namespace edgellm
