// `edgellm bench --ttft` (bench/ttft_bench.h) on stories260K with short prompts: every scenario
// row is there, cold rows split into load / start / first token that add up, the cached-system
// row takes the system prompt's full KV blocks from the prefix cache (and only that row), and
// the page-cache helpers see a dropped file. Times are only checked to be positive.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "tools/bench/page_cache.h"
#include "tools/bench/ttft_bench.h"
#include "core/error.h"
#include "core/json.h"
#include "support/test_env.h"

namespace edgellm::bench {
namespace {

TEST(TtftBench, EveryScenarioWithPrefixCacheAndColdParts) {
  TtftParams p;
  p.models = {test::shared_model("stories260K.gguf")};
  p.prompts = {8, 24};
  p.system_tokens = 40;  // two full 16-token KV blocks (32 positions) can come from the cache
  p.repetitions = 2;
  p.n_threads = 1;
  p.drop_page_cache = true;
  const std::vector<TtftRecord> rs = run_ttft_bench(p);
  const std::vector<std::string> want = {"cold", "cold, page cache dropped", "cold", "cold, page cache dropped",
                                         "warm", "warm + system", "warm + system cached",
                                         "warm", "warm + system", "warm + system cached"};
  ASSERT_EQ(rs.size(), want.size());
  for (size_t i = 0; i < rs.size(); ++i) {
    const TtftRecord& r = rs[i];
    EXPECT_EQ(r.scenario, want[i]) << i;
    EXPECT_EQ(r.prompt_tokens, i < 4 ? (i < 2 ? 8 : 24) : (i < 7 ? 8 : 24)) << i;
    ASSERT_EQ(r.ttft_ms.size(), 2u) << i;
    EXPECT_EQ(r.n_threads, 1);
    for (const double t : r.ttft_ms) EXPECT_GT(t, 0.0) << i;
    EXPECT_DOUBLE_EQ(r.median_ttft_ms, (r.ttft_ms[0] + r.ttft_ms[1]) / 2) << i;
    const bool cold = i < 4;
    ASSERT_EQ(r.load_ms.size(), cold ? 2u : 0u) << i;
    if (cold) {
      for (size_t k = 0; k < 2; ++k) {
        // ttft = load + start + first token, plus the moments between them.
        EXPECT_GE(r.ttft_ms[k] + 1e-6, r.load_ms[k] + r.start_ms[k] + r.first_token_ms[k]) << i;
        EXPECT_GE(r.resident_before[k], 0.0) << i;
        EXPECT_LE(r.resident_before[k], 1.0) << i;
      }
    } else {
      EXPECT_EQ(r.ttft_ms, r.first_token_ms) << i;
    }
    const bool cached = r.scenario == "warm + system cached";
    EXPECT_EQ(r.system_tokens, r.scenario.find("system") != std::string::npos ? 40 : 0) << i;
    EXPECT_EQ(r.cached_tokens, cached ? 32 : 0) << r.scenario << " " << r.prompt_tokens;
  }
  const Json j = Json::parse(format_ttft_json(rs));
  ASSERT_EQ(j.size(), rs.size());
  EXPECT_EQ(j.at(size_t{6}).at("cached_tokens").as_int(), 32);
  EXPECT_TRUE(j.at(size_t{4}).at("median_load_ms").is_null());
  EXPECT_EQ(j.at(size_t{0}).at("load_ms").size(), 2u);
  const std::string md = format_ttft_markdown(rs);
  EXPECT_NE(md.find("| warm + system cached | 40 | 8 | 32 |"), std::string::npos) << md;
}

TEST(TtftBench, BadParametersNameTheProblem) {
  TtftParams p;
  p.models = {test::shared_model("stories260K.gguf")};
  p.prompts = {0};
  EXPECT_THROW(run_ttft_bench(p), Error);
  p.prompts = {8};
  p.repetitions = 0;
  EXPECT_THROW(run_ttft_bench(p), Error);
  p.repetitions = 1;
  p.system_tokens = -1;
  EXPECT_THROW(run_ttft_bench(p), Error);
  p.system_tokens = 0;
  p.models = {test::temp_dir() + "/no-such-model.gguf"};
  EXPECT_THROW(run_ttft_bench(p), Error);
}

TEST(TtftBench, MedianOfOddAndEvenCounts) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2.0);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median({}), 0.0);
}

TEST(PageCache, ReadFileIsResidentAndDropEmptiesIt) {
  const std::string path = test::temp_dir() + "/page-cache.bin";
  {
    std::ofstream f(path, std::ios::binary);
    const std::string block(1 << 20, 'x');
    for (int i = 0; i < 4; ++i) f << block;
  }
  (void)test::read_file(path);  // every page read through the cache
  EXPECT_EQ(page_cache_resident_fraction(test::temp_dir() + "/missing"), -1.0);
  EXPECT_NE(drop_page_cache(test::temp_dir() + "/missing"), "");
  const double before = page_cache_resident_fraction(path);
  EXPECT_GT(before, 0.5);
  ASSERT_EQ(drop_page_cache(path), "");
  const double after = page_cache_resident_fraction(path);
  EXPECT_GE(after, 0.0);
  // The file was just written: drop_page_cache writes its dirty pages back first. A file system
  // without a droppable cache (tmpfs) keeps them: say so rather than fail.
  if (after >= before)
    GTEST_SKIP() << "NOT CHECKED ON THIS HOST: this file system kept the pages after DONTNEED (" << after << ")";
  EXPECT_LT(after, 0.5);
}

}  // namespace
}  // namespace edgellm::bench
