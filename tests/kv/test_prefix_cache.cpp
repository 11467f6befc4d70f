// The prefix cache of KvCache + BlockPool against a naive reference. A "forward" here writes, at
// position p of a sequence, rows that are a function of the whole token prefix [0, p] (as real
// K/V are); the reference recomputes that function from each sequence's token list. Random
// operations (reuse a prefix, append, truncate, clear, fork) over a small pool, with prompts from
// a tiny alphabet so prefixes repeat and blocks are shared, cached and evicted; after every
// operation every sequence must read its reference rows through its block table, and the pool's
// reference counts must equal the number of tables holding each block.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "kv/kv_cache.h"

namespace edgellm {
namespace {

constexpr int32_t kT = 4;

KvCacheParams params(int32_t n_blocks) {
  KvCacheParams p;
  p.n_layer = 2;
  p.n_head_kv = 1;
  p.head_dim = 8;
  p.type_k = p.type_v = TensorType::F32;
  p.block_tokens = kT;
  p.n_seq_max = 3;
  p.n_ctx = 40;
  p.n_blocks = n_blocks;
  p.prefix_seed = 1234;
  return p;
}

// The reference: a value that depends on every token of the prefix and on the position.
float prefix_value(const std::vector<int32_t>& tokens, int32_t pos, int layer, int kv, int i) {
  uint32_t h = 17;
  for (int32_t k = 0; k <= pos; ++k) h = h * 31u + static_cast<uint32_t>(tokens[static_cast<size_t>(k)]) + 7u;
  return static_cast<float>(h % 100003u) + static_cast<float>(layer * 16 + kv * 8 + i) / 64.0f;
}

// A fake forward of one token: grow, record the id, write the rows, publish full blocks.
void append(KvCache& c, int32_t seq, const std::vector<int32_t>& all, int32_t pos) {
  c.seq_grow(seq, pos + 1);
  c.seq_set_token(seq, pos, all[static_cast<size_t>(pos)]);
  const auto& p = c.params();
  std::vector<float> row(static_cast<size_t>(p.head_dim));
  for (int l = 0; l < p.n_layer; ++l) {
    for (int kv = 0; kv < 2; ++kv) {
      for (int i = 0; i < p.head_dim; ++i) row[static_cast<size_t>(i)] = prefix_value(all, pos, l, kv, i);
      if (kv == 0) {
        c.store_k_row(row.data(), c.k_row(seq, l, 0, pos));
      } else {
        c.store_v_row(row.data(), c.v_row(seq, l, 0, pos));
      }
    }
  }
  c.seq_publish(seq);
}

void expect_consistent(const KvCache& c, const std::vector<std::vector<int32_t>>& model_tokens) {
  const auto& p = c.params();
  std::map<int32_t, int32_t> refs;
  for (int32_t s = 0; s < p.n_seq_max; ++s) {
    const std::vector<int32_t>& toks = model_tokens[static_cast<size_t>(s)];
    ASSERT_EQ(c.seq_length(s), static_cast<int32_t>(toks.size())) << "seq " << s;
    ASSERT_EQ(c.seq_tokens(s), toks) << "seq " << s;
    const auto& table = c.block_table(s);
    ASSERT_EQ(table.size(), (toks.size() + kT - 1) / kT) << "seq " << s;
    for (int32_t b : table) ++refs[b];
    for (int32_t pos = 0; pos < static_cast<int32_t>(toks.size()); ++pos) {
      const int32_t block = table[static_cast<size_t>(pos / kT)];
      for (int l = 0; l < p.n_layer; ++l) {
        for (int kv = 0; kv < 2; ++kv) {
          const auto* rows = reinterpret_cast<const float*>(kv == 0 ? c.k_rows(block, l, 0) : c.v_rows(block, l, 0));
          for (int i = 0; i < p.head_dim; ++i) {
            ASSERT_EQ(rows[(pos % kT) * p.head_dim + i], prefix_value(toks, pos, l, kv, i))
                << "seq " << s << " pos " << pos << " layer " << l << " kv " << kv;
          }
        }
      }
    }
  }
  int32_t in_use = 0;
  for (int32_t b = 0; b < p.n_blocks; ++b) {
    const auto it = refs.find(b);
    EXPECT_EQ(c.pool().refcount(b), it == refs.end() ? 0 : it->second) << "block " << b;
    in_use += it == refs.end() ? 0 : 1;
  }
  EXPECT_EQ(c.pool().n_in_use(), in_use);
  EXPECT_LE(c.pool().n_cached(), p.n_blocks - in_use);
}

std::vector<int32_t> common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return {a.begin(), a.begin() + static_cast<std::ptrdiff_t>(n)};
}

TEST(PrefixCache, FreedFullBlocksAreFoundAgainAndPartialOnesAreNot) {
  KvCache c(params(16));
  const std::vector<int32_t> prompt = {5, 6, 7, 8, 9, 10, 11, 12, 13, 14};  // 2 full blocks + 2
  for (int32_t pos = 0; pos < 10; ++pos) append(c, 0, prompt, pos);
  EXPECT_EQ(c.pool().n_cached(), 0);
  c.seq_clear(0);
  EXPECT_EQ(c.pool().n_cached(), 2);  // the partial block is free, not cached
  EXPECT_EQ(c.cached_prefix_length(prompt.data(), 10), 8);
  // Another sequence with the same first 6 tokens gets the first block only.
  const std::vector<int32_t> other = {5, 6, 7, 8, 9, 10, 99, 98, 97};
  EXPECT_EQ(c.seq_reuse_prefix(1, other.data(), 9, 8), 4);
  EXPECT_EQ(c.pool().n_cached(), 1);
  for (int32_t pos = 4; pos < 9; ++pos) append(c, 1, other, pos);
  expect_consistent(c, {{}, other, {}});
  // Identical prompt, n_max = n - 1 = 9: both full blocks, the second cut to one slot short is
  // never written in place while another table or the index holds it.
  EXPECT_EQ(c.seq_reuse_prefix(2, prompt.data(), 8, 7), 7);
  append(c, 2, prompt, 7);
  for (int32_t pos = 8; pos < 10; ++pos) append(c, 2, prompt, pos);
  expect_consistent(c, {{}, other, prompt});
}

TEST(PrefixCache, SharedPartialBlockIsCopiedBeforeItIsWritten) {
  KvCache c(params(16));
  const std::vector<int32_t> a = {1, 2, 3, 4, 5, 6, 7, 8};
  for (int32_t pos = 0; pos < 8; ++pos) append(c, 0, a, pos);
  // Seq 1 takes both blocks but only 6 positions: its last block is shared with seq 0.
  const std::vector<int32_t> b = {1, 2, 3, 4, 5, 6, 42, 43};
  EXPECT_EQ(c.seq_reuse_prefix(1, a.data(), 8, 6), 6);
  EXPECT_EQ(c.block_table(1)[1], c.block_table(0)[1]);
  EXPECT_EQ(c.blocks_needed(1, 7), 1);  // the copy
  append(c, 1, b, 6);
  EXPECT_NE(c.block_table(1)[1], c.block_table(0)[1]);
  append(c, 1, b, 7);
  expect_consistent(c, {a, b, {}});
}

TEST(PrefixCache, EvictsLeastRecentlyReleasedTailFirstAndNeverABlockInUse) {
  KvCache c(params(6));
  const std::vector<int32_t> a = {1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3};  // 3 full blocks
  for (int32_t pos = 0; pos < 12; ++pos) append(c, 0, a, pos);
  c.seq_clear(0);  // released tail first: block 3 is the least recently released
  ASSERT_EQ(c.pool().n_cached(), 3);
  const std::vector<int32_t> b = {9, 9, 9, 9, 8, 8, 8, 8, 7, 7, 7, 7, 6, 6, 6, 6};  // 4 blocks
  // 3 free blocks, then one eviction: a's tail.
  for (int32_t pos = 0; pos < 16; ++pos) append(c, 1, b, pos);
  EXPECT_EQ(c.pool().evictions(), 1u);
  EXPECT_EQ(c.cached_prefix_length(a.data(), 12), 8);
  // A full pool of blocks in use: allocation fails cleanly, nothing is evicted from a table.
  EXPECT_EQ(c.seq_reuse_prefix(2, a.data(), 12, 11), 8);
  expect_consistent(c, {{}, b, {a.begin(), a.begin() + 8}});
  EXPECT_EQ(c.pool().n_free(), 0);
  try {
    append(c, 2, a, 8);
    FAIL() << "expected kContextFull";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kContextFull);
  }
  expect_consistent(c, {{}, b, {a.begin(), a.begin() + 8}});
}

// A naive model of the pool and the prefix cache, written from their documented behaviour
// (block_pool.h, kv_cache.h) with none of their data structures: blocks are records made here,
// a registered block is known by the whole token prefix it completes (what its chained hash
// stands for), the cache is searched by comparing those prefixes, and the LRU order is a release
// counter. It predicts how many positions a prompt reuses, whether a growth or a fork fits, and
// the pool's counts, independently of KvCache's own answers (cached_prefix_length included).
class NaivePool {
 public:
  NaivePool(int32_t n_blocks, int32_t n_seq, int32_t n_ctx)
      : n_blocks_(n_blocks), n_ctx_(n_ctx), seqs_(static_cast<size_t>(n_seq)) {}

  // seq_reuse_prefix: the longer of what the sequence holds itself and the cache's full blocks,
  // at most n_max positions.
  int32_t reuse_prefix(int32_t seq, const std::vector<int32_t>& tokens, int32_t n_max) {
    Seq& s = seqs_[static_cast<size_t>(seq)];
    const int32_t n = static_cast<int32_t>(tokens.size());
    n_max = std::max(0, std::min({n_max, n, n_ctx_}));
    int32_t own = 0;
    while (own < n_max && own < static_cast<int32_t>(s.tokens.size()) &&
           s.tokens[static_cast<size_t>(own)] == tokens[static_cast<size_t>(own)])
      ++own;
    std::vector<int> found;
    for (int32_t i = 0; i < (n_max + kT - 1) / kT && (i + 1) * kT <= n; ++i) {
      const int b = lookup({tokens.begin(), tokens.begin() + (i + 1) * kT});
      if (b < 0) break;
      found.push_back(b);
    }
    const int32_t cached = std::min(n_max, static_cast<int32_t>(found.size()) * kT);
    if (cached <= own) {
      truncate(seq, own);
      return own;
    }
    for (int b : found) ++blocks_.at(b).refs;  // a cached block leaves the LRU order
    truncate(seq, 0);
    s.table = found;
    s.tokens.assign(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(found.size()) * kT);
    s.published = found.size();
    truncate(seq, cached);
    return cached;
  }
  // One position written at the end of `seq` (the test's append): false when it does not fit.
  bool append(int32_t seq, int32_t token) {
    Seq& s = seqs_[static_cast<size_t>(seq)];
    const int32_t len = static_cast<int32_t>(s.tokens.size());
    if (len + 1 > n_ctx_) return false;
    const size_t need = static_cast<size_t>((len + 1 + kT - 1) / kT);
    const bool partial = len % kT != 0;
    const bool copy = partial && blocks_.at(s.table.back()).refs > 1;
    if (need - s.table.size() + (copy ? 1 : 0) > static_cast<size_t>(available())) return false;
    if (copy) {
      const int fresh = allocate();
      release(s.table.back());
      s.table.back() = fresh;
    } else if (partial) {
      unregister(s.table.back());  // its content is about to change
    }
    while (s.table.size() < need) s.table.push_back(allocate());
    s.tokens.push_back(token);
    // Publish: every full block not yet registered, under the prefix it completes.
    while (s.published < s.tokens.size() / kT) {
      const size_t i = s.published++;
      register_block(s.table[i], {s.tokens.begin(), s.tokens.begin() + static_cast<std::ptrdiff_t>((i + 1) * kT)});
    }
    return true;
  }
  void truncate(int32_t seq, int32_t n_keep) {
    Seq& s = seqs_[static_cast<size_t>(seq)];
    if (n_keep >= static_cast<int32_t>(s.tokens.size())) return;
    while (s.table.size() > static_cast<size_t>((n_keep + kT - 1) / kT)) {  // tail first
      release(s.table.back());
      s.table.pop_back();
    }
    s.tokens.resize(static_cast<size_t>(n_keep));
    s.published = std::min(s.published, static_cast<size_t>(n_keep / kT));
  }
  // seq_fork: false (dst left empty) when the partial last block has no block to be copied to.
  bool fork(int32_t src, int32_t dst) {
    truncate(dst, 0);
    const Seq& s = seqs_[static_cast<size_t>(src)];
    Seq& d = seqs_[static_cast<size_t>(dst)];
    const bool partial = s.tokens.size() % kT != 0;
    if (partial && available() == 0) return false;
    d = s;
    for (size_t i = 0; i + (partial ? 1 : 0) < d.table.size(); ++i) ++blocks_.at(d.table[i]).refs;
    if (partial) d.table.back() = allocate();
    return true;
  }
  const std::vector<int32_t>& tokens(int32_t seq) const { return seqs_[static_cast<size_t>(seq)].tokens; }
  int32_t in_use() const {
    return static_cast<int32_t>(
        std::count_if(blocks_.begin(), blocks_.end(), [](const auto& b) { return b.second.refs > 0; }));
  }
  int32_t cached() const { return static_cast<int32_t>(blocks_.size()) - in_use(); }
  uint64_t evictions() const { return evictions_; }

 private:
  struct Block {
    int refs = 0;
    std::vector<int32_t> key;  // the prefix it completes when registered, else empty
    uint64_t released = 0;     // when its last reference went (LRU order of cached blocks)
  };
  struct Seq {
    std::vector<int> table;
    std::vector<int32_t> tokens;
    size_t published = 0;  // leading full blocks already offered to the cache
  };
  // Blocks with a record are in use or cached; the rest of the pool is free.
  int32_t available() const { return n_blocks_ - in_use(); }
  int allocate() {
    if (static_cast<int32_t>(blocks_.size()) == n_blocks_) {  // no free block: evict the cached one released first
      auto oldest = blocks_.end();
      for (auto it = blocks_.begin(); it != blocks_.end(); ++it) {
        if (it->second.refs == 0 && (oldest == blocks_.end() || it->second.released < oldest->second.released))
          oldest = it;
      }
      EXPECT_NE(oldest, blocks_.end()) << "allocation with every block in use";
      if (oldest == blocks_.end()) return -1;
      blocks_.erase(oldest);
      ++evictions_;
    }
    blocks_[next_id_].refs = 1;
    return next_id_++;
  }
  void release(int b) {
    Block& blk = blocks_.at(b);
    if (--blk.refs > 0) return;
    if (blk.key.empty()) {
      blocks_.erase(b);
    } else {
      blk.released = ++clock_;
    }
  }
  void unregister(int b) {
    blocks_.at(b).key.clear();
    if (blocks_.at(b).refs == 0) blocks_.erase(b);
  }
  void register_block(int b, std::vector<int32_t> key) {
    if (!blocks_.at(b).key.empty() || lookup(key) >= 0) return;  // one block per content
    blocks_.at(b).key = std::move(key);
  }
  int lookup(const std::vector<int32_t>& key) const {
    for (const auto& [id, b] : blocks_) {
      if (b.key == key) return id;
    }
    return -1;
  }

  int32_t n_blocks_, n_ctx_;
  std::vector<Seq> seqs_;
  std::map<int, Block> blocks_;
  int next_id_ = 0;
  uint64_t clock_ = 0, evictions_ = 0;
};

TEST(PrefixCache, RandomOperationsMatchTheNaiveReference) {
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    const int32_t n_blocks = 6 + static_cast<int32_t>(seed % 7);  // small: evictions and full pools
    KvCache c(params(n_blocks));
    NaivePool naive(n_blocks, 3, c.params().n_ctx);
    std::vector<std::vector<int32_t>> tokens(3);
    // Prompts from 3 stems so that prefixes repeat.
    std::vector<std::vector<int32_t>> stems;
    for (int s = 0; s < 3; ++s) {
      std::vector<int32_t> stem;
      for (int i = 0; i < 30; ++i) stem.push_back(static_cast<int32_t>(rng() % 3) + 10 * s);
      stems.push_back(stem);
    }
    // The real append and the model's: both fit or both fail (kContextFull, nothing changed).
    const auto append_both = [&](int32_t seq, const std::vector<int32_t>& all, int32_t pos) {
      bool fits = true;
      try {
        append(c, seq, all, pos);
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kContextFull);
        fits = false;
      }
      EXPECT_EQ(naive.append(seq, all[static_cast<size_t>(pos)]), fits) << "seq " << seq << " pos " << pos;
      return fits;
    };
    int reused = 0, evicting = 0;
    for (int op = 0; op < 300; ++op) {
      const int32_t seq = static_cast<int32_t>(rng() % 3);
      std::vector<int32_t>& mine = tokens[static_cast<size_t>(seq)];
      const uint32_t kind = rng() % 10;
      if (kind < 3) {  // start a prompt: reuse, then prefill the rest
        std::vector<int32_t> prompt = stems[rng() % 3];
        prompt.resize(1 + rng() % 30);
        if (rng() % 2) prompt.back() = static_cast<int32_t>(rng() % 50);
        const int32_t n = static_cast<int32_t>(prompt.size());
        const int32_t got = c.seq_reuse_prefix(seq, prompt.data(), n, n - 1);
        ASSERT_EQ(got, naive.reuse_prefix(seq, prompt, n - 1)) << "op " << op;
        reused += got > static_cast<int32_t>(common_prefix(mine, prompt).size()) ? 1 : 0;
        mine.assign(prompt.begin(), prompt.begin() + got);
        for (int32_t pos = got; pos < n; ++pos) {
          if (!append_both(seq, prompt, pos)) break;
          mine.push_back(prompt[static_cast<size_t>(pos)]);
        }
      } else if (kind < 6) {  // decode a few tokens
        for (int k = 0; k < 3 && static_cast<int32_t>(mine.size()) < 40; ++k) {
          std::vector<int32_t> next = mine;
          next.push_back(static_cast<int32_t>(rng() % 3));
          if (!append_both(seq, next, static_cast<int32_t>(mine.size()))) break;
          mine = next;
        }
      } else if (kind < 8) {
        const int32_t keep = mine.empty() ? 0 : static_cast<int32_t>(rng() % mine.size());
        c.seq_truncate(seq, keep);
        naive.truncate(seq, keep);
        mine.resize(static_cast<size_t>(keep));
      } else if (kind < 9) {
        c.seq_clear(seq);
        naive.truncate(seq, 0);
        mine.clear();
      } else {
        const int32_t dst = (seq + 1) % 3;
        bool forked = true;
        try {
          c.seq_fork(seq, dst);
          tokens[static_cast<size_t>(dst)] = mine;
        } catch (const Error& e) {
          ASSERT_EQ(e.code(), ErrorCode::kContextFull);
          tokens[static_cast<size_t>(dst)].clear();
          forked = false;
        }
        ASSERT_EQ(naive.fork(seq, dst), forked) << "op " << op;
      }
      expect_consistent(c, tokens);
      for (int32_t s2 = 0; s2 < 3; ++s2) ASSERT_EQ(naive.tokens(s2), tokens[static_cast<size_t>(s2)]) << "seq " << s2;
      ASSERT_EQ(c.pool().n_in_use(), naive.in_use()) << "op " << op;
      ASSERT_EQ(c.pool().n_cached(), naive.cached()) << "op " << op;
      ASSERT_EQ(c.pool().evictions(), naive.evictions()) << "op " << op;
      evicting = static_cast<int>(naive.evictions());
      if (testing::Test::HasFatalFailure() || testing::Test::HasFailure()) return;
    }
    // The seeds exercise what the model predicts: prompts served from the cache, evictions.
    EXPECT_GT(reused, 0);
    std::printf("  seed %2u, %2d blocks: %3d prompts took cached blocks, %3d evictions\n", seed, n_blocks, reused,
                evicting);
  }
}

}  // namespace
}  // namespace edgellm
