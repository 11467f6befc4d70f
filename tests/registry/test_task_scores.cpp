// Task scores in model manifests (registry/model_manifest.h, written by `edgellm eval
// --registry`): a manifest written before the field existed still reads (and keeps its
// hand-typed task_score), the field round-trips, hostile entries are refused, recording replaces
// the same (task file, metric) and keeps the newest 256, and the scores the planner ranks by.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "core/json.h"
#include "registry/model_manifest.h"
#include "registry/model_registry.h"
#include "support/test_env.h"

namespace edgellm {
namespace {

const std::string kShaA(64, 'a'), kShaB(64, 'b');

// A manifest as an EdgeLLM without task scores wrote it (docs/device-fitness.md, before eval).
const char* kOldManifest =
    "{\"name\": \"qwen\", \"version\": \"3\", \"file\": \"qwen@3.gguf\", \"size_bytes\": 409600000, "
    "\"sha256\": \"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\", \"weight_type\": \"q4_0\", "
    "\"tier\": \"4GB\", \"prefill_tokens_per_second\": 640.5, \"decode_tokens_per_second\": 80.1, \"task_score\": "
    "0.71, "
    "\"source\": \"https://example.com/q.gguf\"}";

TaskScore score(const std::string& sha, const std::string& metric, double value, const std::string& date) {
  return {"tasks.jsonl", sha, metric, value, 10, date};
}

TEST(TaskScores, OldManifestReadsAndRoundTrips) {
  ModelManifest m = ModelManifest::from_json(Json::parse(kOldManifest));
  EXPECT_TRUE(m.task_scores.empty());
  ASSERT_TRUE(m.task_score.has_value());
  EXPECT_EQ(*m.task_score, 0.71);
  m.record_task_scores({score(kShaA, "rougeL", 0.41, "2026-12-06T10:00:00Z")});
  const Json j = m.to_json();
  // Every field of the old format is still written, with the same meaning.
  for (const char* k : {"name", "version", "file", "size_bytes", "sha256", "weight_type", "tier",
                        "prefill_tokens_per_second", "decode_tokens_per_second", "task_score", "source"}) {
    EXPECT_NE(j.find(k), nullptr) << k;
  }
  const ModelManifest back = ModelManifest::from_json(Json::parse(j.dump()));
  ASSERT_EQ(back.task_scores.size(), 1u);
  EXPECT_EQ(back.task_scores[0].metric, "rougeL");
  EXPECT_EQ(back.task_scores[0].value, 0.41);
  EXPECT_EQ(back.task_scores[0].cases, 10);
  EXPECT_EQ(back.task_scores[0].date, "2026-12-06T10:00:00Z");
  EXPECT_EQ(back.task_score_for(kShaA, "rougeL"), 0.41);
  EXPECT_FALSE(back.task_score_for(kShaB, "rougeL").has_value());
}

TEST(TaskScores, HostileEntriesAreRefused) {
  const std::string head = std::string(kOldManifest).substr(0, std::string(kOldManifest).size() - 1);
  const std::string bad[] = {
      ", \"task_scores\": 5}",
      ", \"task_scores\": [7]}",
      ", \"task_scores\": [{\"task_file_sha256\": \"zz\", \"metric\": \"bleu\", \"value\": 1}]}",
      ", \"task_scores\": [{\"task_file_sha256\": \"" + kShaA + "\", \"metric\": \"../x\", \"value\": 1}]}",
      ", \"task_scores\": [{\"task_file_sha256\": \"" + kShaA + "\", \"metric\": \"bleu\"}]}",
      ", \"task_scores\": [{\"task_file_sha256\": \"" + kShaA + "\", \"metric\": \"bleu\", \"value\": \"1\"}]}",
      ", \"task_scores\": [{\"task_file_sha256\": \"" + kShaA +
          "\", \"metric\": \"bleu\", \"value\": 1, \"cases\": 1.5}]}",
      ", \"task_scores\": [{\"task_file_sha256\": \"" + kShaA +
          "\", \"metric\": \"bleu\", \"value\": 1, \"cases\": -1}]}",
  };
  for (const auto& tail : bad) {
    try {
      ModelManifest::from_json(Json::parse(head + tail));
      ADD_FAILURE() << "accepted " << tail;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidFile) << tail;
      EXPECT_NE(std::string(e.what()).find("task_scores"), std::string::npos) << e.what();
    }
  }
  std::string many = ", \"task_scores\": [";
  for (size_t i = 0; i <= kMaxTaskScores; ++i) {
    many += std::string(i ? "," : "") + "{\"task_file_sha256\": \"" + kShaA + "\", \"metric\": \"m" +
            std::to_string(i) + "\", \"value\": 1}";
  }
  EXPECT_THROW(ModelManifest::from_json(Json::parse(head + many + "]}")), Error);
  // null is "none" (as task_score's null is).
  EXPECT_TRUE(ModelManifest::from_json(Json::parse(head + ", \"task_scores\": null}")).task_scores.empty());
}

TEST(TaskScores, RecordingReplacesTheSameTaskAndMetric) {
  ModelManifest m = ModelManifest::from_json(Json::parse(kOldManifest));
  m.record_task_scores({score(kShaA, "rouge1", 0.5, "d1"), score(kShaA, "rougeL", 0.4, "d1")});
  m.record_task_scores({score(kShaA, "rougeL", 0.45, "d2"), score(kShaB, "rougeL", 0.3, "d2")});
  ASSERT_EQ(m.task_scores.size(), 3u);
  EXPECT_EQ(m.task_score_for(kShaA, "rougeL"), 0.45);
  EXPECT_EQ(m.task_score_for(kShaA, "rouge1"), 0.5);
  EXPECT_EQ(m.task_score_for(kShaB, "rougeL"), 0.3);
  for (size_t i = 0; i < kMaxTaskScores + 10; ++i)
    m.record_task_scores({score(kShaB, "m" + std::to_string(i), 1, "d3")});
  EXPECT_EQ(m.task_scores.size(), kMaxTaskScores);
  EXPECT_EQ(m.task_scores.back().metric, "m" + std::to_string(kMaxTaskScores + 9));  // the newest kept
}

TEST(TaskScores, RegistryRecordsAtomically) {
  ModelRegistry reg(test::temp_dir() + "/reg-scores");
  ModelManifest m;
  m.name = "tiny";
  m.version = "1";
  m.task_score = 0.2;
  reg.install_file(test::shared_model("stories260K.gguf"), m, {});
  reg.record_task_scores("tiny", "1", {score(kShaA, "bleu", 0.25, "d")});
  const auto got = reg.get("tiny", "1");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->task_score_for(kShaA, "bleu"), 0.25);
  EXPECT_EQ(got->task_score, 0.2);  // the hand-typed score stays
  EXPECT_FALSE(test::temp_file_left(reg.root() + "/manifests/tiny@1.json"));
  EXPECT_THROW(reg.record_task_scores("tiny", "2", {}), Error);
}

TEST(TaskScores, PlannerRanksByAScoreEveryCandidateHas) {
  ModelManifest a = ModelManifest::from_json(Json::parse(kOldManifest));  // hand-typed 0.71
  ModelManifest b = a;
  b.version = "4";
  b.task_score = 0.9;
  // No shared measurement: the hand-typed scores.
  a.record_task_scores({score(kShaA, "rougeL", 0.40, "2026-01-01")});
  auto s = ranking_task_scores({a, b});
  EXPECT_EQ(s[0], 0.71);
  EXPECT_EQ(s[1], 0.9);
  // Both measured on task A: those values, although B's hand-typed one is higher.
  b.record_task_scores({score(kShaA, "rougeL", 0.35, "2026-01-02")});
  s = ranking_task_scores({a, b});
  EXPECT_EQ(s[0], 0.40);
  EXPECT_EQ(s[1], 0.35);
  // Two shared measurements: the one measured most recently (task B's bleu).
  a.record_task_scores({score(kShaB, "bleu", 0.2, "2026-02-01")});
  b.record_task_scores({score(kShaB, "bleu", 0.3, "2026-02-01")});
  s = ranking_task_scores({a, b});
  EXPECT_EQ(s[0], 0.2);
  EXPECT_EQ(s[1], 0.3);
  // A third candidate without that measurement: back to the pair all three share, or none.
  ModelManifest c = ModelManifest::from_json(Json::parse(kOldManifest));
  c.version = "5";
  c.task_score.reset();
  s = ranking_task_scores({a, b, c});
  EXPECT_EQ(s[0], 0.71);
  EXPECT_FALSE(s[2].has_value());
  EXPECT_TRUE(ranking_task_scores({}).empty());
}

}  // namespace
}  // namespace edgellm
