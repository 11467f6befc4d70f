// device/planner.h: the choice fits the budget, is the most capable configuration that fits
// (the next step up does not), better-ranked candidates that were passed over cannot fit even
// at their least demanding configuration; device profiles from JSON are validated; and the
// crash-loop guard: a child process killed (SIGKILL, as the low-memory killer does) twice while
// loading the chosen configuration gets it marked unfit, and the planner's next choice differs.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "core/error.h"
#include "device/planner.h"
#include "engine/context.h"
#include "engine/embedder.h"
#include "generation/draft_model_drafter.h"
#include "model/model.h"
#include "registry/crash_loop_guard.h"
#include "support/synthetic_model.h"
#include "support/test_env.h"

namespace edgellm {
namespace {

DeviceProfile small_device(double app_limit_mib) {
  Json j = Json::parse(R"({"name": "test", "ram_total_mib": 4096, "ram_available_mib": 2000,
                           "clusters": [{"cores": 4, "max_mhz": 2000}, {"cores": 2, "max_mhz": 3000}]})");
  j.set("app_limit_mib", app_limit_mib);
  return DeviceProfile::from_json(j);
}

std::vector<PlanCandidate> two_models() {
  return {{"stories", test::shared_model("stories260K.gguf"), std::nullopt},
          {"zh", test::shared_model("tiny-zh-poems.gguf"), std::nullopt}};
}

// The chosen configuration's memory terms, recomputed without plan_memory: the KV pool and the
// logits by hand from the hyper-parameters (memory_plan.h's formula: blocks of 16 positions x
// layers x KV heads x a K row and a V row in their types; one logits row per sequence, at most
// n_batch), the weights from the file's tensor sizes (F32 models: nothing is repacked; an untied
// token_embd is read row by row and not counted), and KV + scratch + logits against what a
// Context of that configuration actually holds (Context::allocated_bytes: its pool, its forward
// pass's buffers and its logits, each by its real size).
void expect_terms_hold(const Model& model, const PlanOption& c, const ThreadPlan& threads) {
  SCOPED_TRACE("choice " + c.label + " ctx " + std::to_string(c.n_ctx));
  const HParams& hp = model.hparams();
  const MemoryPlan& m = c.memory;
  const size_t blocks = static_cast<size_t>((c.n_ctx + 15) / 16) * static_cast<size_t>(m.n_seq_max);
  const size_t row_k = tensor_row_bytes(c.kv_type, hp.head_dim), row_v = tensor_row_bytes(c.kv_type_v, hp.head_dim);
  EXPECT_EQ(m.kv, blocks * 16 * static_cast<size_t>(hp.n_layer) * static_cast<size_t>(hp.n_head_kv) * (row_k + row_v));
  EXPECT_EQ(m.logits, static_cast<size_t>(std::min(c.n_batch, m.n_seq_max)) * static_cast<size_t>(hp.n_vocab) * 4);
  size_t weights = 0;
  const bool tied = model.gguf().find_tensor("output.weight") == nullptr;
  for (const auto& t : model.gguf().tensors()) {
    if (!tied && t.name == "token_embd.weight") continue;
    ASSERT_EQ(t.type, TensorType::F32) << t.name << ": the hand count assumes an F32 file (no repacking)";
    weights += t.n_bytes;
  }
  EXPECT_EQ(m.weights_touched, weights);
  ContextParams cp;
  cp.n_ctx = c.n_ctx;
  cp.n_batch = c.n_batch;
  cp.n_seq_max = m.n_seq_max;
  cp.kv_type = c.kv_type;
  if (c.kv_type_v != c.kv_type) cp.kv_type_v = c.kv_type_v;
  cp.n_threads = threads.decode;
  cp.n_threads_batch = threads.prefill;
  Context ctx(model, cp);
  EXPECT_EQ(ctx.kv_cache().pool().total_bytes(), m.kv);
  EXPECT_EQ(ctx.allocated_bytes(), m.kv + m.scratch + m.logits);
}

TEST(Planner, ChoiceIsTheMostCapableConfigurationThatFits) {
  for (double limit : {8.0, 12.0, 20.0, 30.0, 60.0}) {
    const DeviceProfile d = small_device(limit);
    PlanOptions o;
    o.max_ctx = 4096;
    o.min_ctx = 128;
    o.headroom = 0.1;
    const Plan p = make_plan(d, two_models(), o);
    ASSERT_EQ(p.considered.size(), 2u);
    EXPECT_EQ(p.considered[0].label, "zh") << "the model reading more weight bytes ranks first";
    SCOPED_TRACE(p.to_text());
    EXPECT_EQ(p.budget_bytes, static_cast<uint64_t>(limit * 1048576 * 0.9));
    ASSERT_TRUE(p.choice) << "stories260K fits 8 MiB at ctx 128";
    EXPECT_LE(p.choice->memory.total(), p.budget_bytes);
    // Candidates ranked above the choice cannot fit at all.
    for (const auto& c : p.considered) {
      if (c.label == p.choice->label) break;
      EXPECT_FALSE(c.fits);
      EXPECT_GT(c.memory.total(), p.budget_bytes) << c.label;
    }
    // One step more capable (double context, or the K/V types one rung up the ladder, or a
    // bigger batch) no longer fits, unless the choice is already at that end.
    auto model = Model::load(p.choice->path);
    auto plan_for = [&](int32_t ctx, KvTypePair kv, int32_t batch) {
      ContextParams cp;
      cp.n_ctx = ctx;
      cp.n_batch = batch;
      cp.kv_type = kv.k;
      if (kv.v != kv.k) cp.kv_type_v = kv.v;
      cp.n_threads = p.threads.decode;
      cp.n_threads_batch = p.threads.prefill;
      return plan_memory(*model, cp, RepackMode::kAuto).total();
    };
    const auto& c = *p.choice;
    const KvTypePair chosen{c.kv_type, c.kv_type_v};
    expect_terms_hold(*model, c, p.threads);
    const auto& ladder = plan_kv_ladder();
    size_t rung = 0;
    while (rung < ladder.size() && (ladder[rung].k != chosen.k || ladder[rung].v != chosen.v)) ++rung;
    ASSERT_LT(rung, ladder.size());
    const KvTypePair least = model->hparams().head_dim % 32 == 0 ? ladder.back() : ladder.front();
    const int32_t top = std::min(4096, std::max(model->hparams().n_ctx_train, 128));
    if (c.n_ctx < top) {
      EXPECT_GT(plan_for(std::min(top, c.n_ctx * 2), least, 128), p.budget_bytes);
    }
    if (rung > 0) {
      EXPECT_GT(plan_for(c.n_ctx, ladder[rung - 1], 128), p.budget_bytes);
    }
    if (c.n_batch < 512) {
      EXPECT_GT(plan_for(c.n_ctx, chosen, c.n_batch * 2), p.budget_bytes);
    }
  }
}

// Every rung of the K/V ladder is offered: with the budget set just above what a rung needs at
// one context (tiny-zh-poems, head_dim 32, ctx 1024, batch 128), that rung is the choice — the
// rung above it does not fit, a bigger batch does not either. Each rung needs strictly less.
TEST(Planner, KvLadderGoesFromF16ToQ8ThenQ4ValuesThenQ4) {
  const std::vector<PlanCandidate> zh = {{"zh", test::shared_model("tiny-zh-poems.gguf"), std::nullopt}};
  auto model = Model::load(zh[0].path);
  ASSERT_EQ(model->hparams().head_dim % 32, 0);
  PlanOptions o;
  o.max_ctx = o.min_ctx = 1024;
  o.headroom = 0;
  const ThreadPlan threads = make_plan(small_device(1000), zh, o).threads;
  const auto& ladder = plan_kv_ladder();
  ASSERT_EQ(ladder.size(), 4u);
  uint64_t above = UINT64_MAX;
  for (const KvTypePair& kv : ladder) {
    SCOPED_TRACE(std::string(tensor_type_name(kv.k)) + "/" + tensor_type_name(kv.v));
    ContextParams cp;
    cp.n_ctx = 1024;
    cp.n_batch = 128;
    cp.kv_type = kv.k;
    if (kv.v != kv.k) cp.kv_type_v = kv.v;
    apply_thread_plan(threads, cp);
    const uint64_t need = plan_memory(*model, cp, RepackMode::kAuto).total();
    EXPECT_LT(need, above);
    above = need;
    const Plan p = make_plan(small_device((static_cast<double>(need) + 64) / 1048576.0), zh, o);
    ASSERT_TRUE(p.choice) << p.to_text();
    EXPECT_EQ(p.choice->kv_type, kv.k);
    EXPECT_EQ(p.choice->kv_type_v, kv.v);
    EXPECT_EQ(p.choice->n_batch, 128);
    EXPECT_EQ(p.choice->memory.total(), need);
    EXPECT_EQ(p.choice->guard_key, plan_guard_key("zh", 1024, kv.k, kv.v));
  }
  EXPECT_EQ(plan_guard_key("zh", 1024, TensorType::Q8_0, TensorType::Q4_0), "zh/ctx=1024/kv=q8_0-q4_0");
  EXPECT_EQ(plan_guard_key("zh", 1024, TensorType::F16), "zh/ctx=1024/kv=f16");
  // The crash-loop guard takes every key the ladder makes (its keys name marker files).
  CrashLoopGuard guard(test::temp_dir() + "/ladder-guard");
  for (const KvTypePair& kv : ladder) {
    const std::string key = plan_guard_key("zh@1", 1024, kv.k, kv.v);
    EXPECT_TRUE(guard.begin(key).allowed) << key;
    EXPECT_FALSE(guard.is_unfit(key));
    EXPECT_NO_THROW(guard.end(key)) << key;
  }
}

// An embedder held beside the generator (docqa): its memory comes off the budget first, so a
// device where the generator alone fits a configuration may no longer fit it with the embedder.
TEST(Planner, CompanionEmbedderIsCountedFirst) {
  test::SyntheticModelSpec s;
  s.arch = "bert";
  s.n_vocab = 30522;
  s.n_embd = 384;
  s.n_layer = 2;
  s.n_ff = 1536;
  s.n_head = 12;
  s.n_head_kv = 12;
  s.n_ctx_train = 512;
  s.rms_eps = 1e-12f;
  s.weight_type = TensorType::Q8_0;
  s.write_vocab = true;
  const std::string bert = test::temp_dir() + "/plan-bert.gguf";
  test::write_synthetic_model(s, bert);
  ModelLoadParams lp;
  lp.repack = RepackMode::kOff;  // as the planner maps candidates: the formula decides what repacking adds
  const auto model = Model::load(bert, lp);
  const MemoryPlan em = plan_embedder_memory(*model, EmbedderParams{}, RepackMode::kAuto);
  // The embedder's planned scratch is what an Embedder allocates.
  EXPECT_EQ(em.scratch, Embedder(*model, EmbedderParams{}).allocated_bytes());
  EXPECT_EQ(em.kv, 0u);
  EXPECT_GT(em.weights_touched, 2u << 20);

  PlanOptions o;
  o.max_ctx = 256;
  o.min_ctx = 128;
  o.headroom = 0.0;
  const std::vector<PlanCandidate> stories = {{"stories", test::shared_model("stories260K.gguf"), std::nullopt}};
  // A budget the generator alone fits at ctx 256 with 1 MiB to spare.
  const Plan alone = make_plan(small_device(1000), stories, o);
  ASSERT_TRUE(alone.choice);
  const uint64_t need = alone.choice->memory.total();
  const double limit_mib = static_cast<double>(need + (1u << 20)) / 1048576.0;
  ASSERT_TRUE(make_plan(small_device(limit_mib), stories, o).choice);
  o.companions.push_back({"bge", bert, EmbedderParams{}});
  const Plan with = make_plan(small_device(limit_mib), stories, o);
  ASSERT_EQ(with.companions.size(), 1u);
  EXPECT_TRUE(with.companions[0].error.empty()) << with.companions[0].error;
  EXPECT_EQ(with.companion_bytes, em.total());
  EXPECT_FALSE(with.choice) << with.to_text();
  EXPECT_NE(with.considered[0].rejected.find("companions"), std::string::npos) << with.considered[0].rejected;
  // With room for both, the generator's configuration is the one it had alone.
  const Plan both =
      make_plan(small_device(static_cast<double>(need + em.total() + (1u << 20)) / 1048576.0), stories, o);
  ASSERT_TRUE(both.choice) << both.to_text();
  EXPECT_EQ(both.choice->n_ctx, alone.choice->n_ctx);
  EXPECT_NE(both.to_text().find("beside it: bge"), std::string::npos);
  EXPECT_EQ(both.to_json().at("companion_bytes").as_int(), static_cast<int64_t>(em.total()));
}

// A draft model (speculative decoding) beside the candidate is counted per configuration: its
// term is what its own Context really holds beside the chosen one (DraftModelDrafter's
// allocated_bytes: one sequence of the target's n_ctx, F16 KV) plus its weights counted from the
// file, and it changes the choice where the candidate alone fits only with the room the draft
// takes. stories260K drafts for itself (the vocabulary must be the target's).
TEST(Planner, DraftModelIsCountedPerConfiguration) {
  const std::string path = test::shared_model("stories260K.gguf");
  const std::vector<PlanCandidate> stories = {{"stories", path, std::nullopt}};
  PlanOptions o;
  o.max_ctx = 1024;
  o.min_ctx = 128;
  o.headroom = 0.0;
  const Plan alone = make_plan(small_device(1000), stories, o);
  ASSERT_TRUE(alone.choice);
  EXPECT_EQ(alone.choice->memory.draft, 0u);
  o.draft_model = path;
  const Plan roomy = make_plan(small_device(1000), stories, o);
  ASSERT_TRUE(roomy.choice);
  const PlanOption& c = *roomy.choice;
  EXPECT_EQ(c.n_ctx, alone.choice->n_ctx);
  ASSERT_GT(c.memory.draft, 0u);
  EXPECT_EQ(c.memory.total(), alone.choice->memory.total() + c.memory.draft);

  ModelLoadParams lp;
  lp.repack = RepackMode::kOff;
  const auto target = Model::load(path, lp);
  const auto draft = Model::load(path, lp);
  size_t weights = 0;  // stories260K: F32, untied: every tensor but token_embd is read
  for (const auto& t : draft->gguf().tensors()) {
    if (t.name != "token_embd.weight") weights += t.n_bytes;
  }
  ContextParams cp;
  cp.n_ctx = c.n_ctx;
  cp.n_batch = c.n_batch;
  cp.kv_type = c.kv_type;
  cp.n_threads = roomy.threads.decode;
  cp.n_threads_batch = roomy.threads.prefill;
  Context ctx(*target, cp);
  const DraftModelDrafter drafter(*draft, ctx);
  EXPECT_EQ(c.memory.draft, weights + drafter.allocated_bytes());
  // The documented shape of that context: one full sequence of the target's n_ctx (blocks of 16),
  // F16 K and V.
  EXPECT_EQ(drafter.context().kv_blocks_total(), (c.n_ctx + 15) / 16);
  EXPECT_EQ(drafter.context().params().kv_k(), TensorType::F16);
  EXPECT_EQ(drafter.context().params().kv_v(), TensorType::F16);
  EXPECT_NE(roomy.to_text().find("draft  "), std::string::npos) << roomy.to_text();
  EXPECT_EQ(roomy.to_json().at("choice").at("memory").at("draft_bytes").as_int(), static_cast<int64_t>(c.memory.draft));

  // A budget the candidate alone fits at its best with less than the draft to spare: with the
  // draft the planner steps down, and what it picks fits with the draft counted.
  const double limit_mib = static_cast<double>(alone.choice->memory.total() + c.memory.draft / 2) / 1048576.0;
  o.draft_model.clear();
  const Plan tight_alone = make_plan(small_device(limit_mib), stories, o);
  ASSERT_TRUE(tight_alone.choice);
  EXPECT_EQ(tight_alone.choice->n_ctx, alone.choice->n_ctx);
  EXPECT_EQ(tight_alone.choice->n_batch, alone.choice->n_batch);
  o.draft_model = path;
  const Plan tight = make_plan(small_device(limit_mib), stories, o);
  ASSERT_TRUE(tight.choice) << tight.to_text();
  // A less demanding configuration (here: batch 128 instead of 512, less scratch for both models).
  EXPECT_TRUE(tight.choice->n_ctx < alone.choice->n_ctx || tight.choice->kv_type != alone.choice->kv_type ||
              tight.choice->n_batch < alone.choice->n_batch)
      << tight.to_text();
  EXPECT_LE(tight.choice->memory.total(), tight.budget_bytes);
  EXPECT_GT(tight.choice->memory.draft, 0u);

  o.draft_model = test::temp_dir() + "/no-such-draft.gguf";
  try {
    (void)make_plan(small_device(1000), stories, o);
    FAIL() << "a missing draft model was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-draft.gguf"), std::string::npos) << e.what();
  }
}

TEST(Planner, NothingFitsIsReportedWithTheArithmetic) {
  PlanOptions o;
  o.min_ctx = 256;
  const Plan p = make_plan(small_device(2.0), two_models(), o);
  EXPECT_FALSE(p.choice);
  for (const auto& c : p.considered) {
    EXPECT_FALSE(c.fits);
    EXPECT_NE(c.rejected.find("the budget is"), std::string::npos) << c.rejected;
  }
  const Plan bad = make_plan(small_device(100), {{"junk", test::temp_dir() + "/missing.gguf", std::nullopt}}, o);
  EXPECT_FALSE(bad.choice);
  EXPECT_NE(bad.considered[0].rejected.find("cannot be loaded"), std::string::npos);
}

TEST(Planner, ThreadsPerPowerMode) {
  const DeviceProfile phone = load_device_profile("phone-8gb");  // 1 + 3 + 4 cores
  EXPECT_EQ(plan_threads(phone, PowerMode::kPerformance).prefill, 4);
  EXPECT_EQ(plan_threads(phone, PowerMode::kPerformance).decode, 4);
  EXPECT_EQ(plan_threads(phone, PowerMode::kBalanced).decode, 2);
  const ThreadPlan eff = plan_threads(phone, PowerMode::kEfficiency);
  EXPECT_TRUE(eff.decode_on_efficiency_cores);
  EXPECT_EQ(eff.decode, 4);
  EXPECT_EQ(phone.budget_bytes(0.0), uint64_t{3072} << 20);
}

// A fake 1 + 3 + 4 phone whose little cores are CPUs 0-3 (as on most SoCs), big 4-6, prime 7.
DeviceProfile fake_big_little() {
  DeviceProfile d;
  d.name = "fake";
  d.clusters = {{1, 3130000, {7}}, {3, 2540000, {4, 5, 6}}, {4, 2050000, {0, 1, 2, 3}}};
  return d;
}

TEST(PowerMode, CpusAndNicePerPhase) {
  const DeviceProfile d = fake_big_little();
  const std::vector<int> fast = {4, 5, 6, 7}, little = {0, 1, 2, 3};

  const ThreadPlan perf = plan_threads(d, PowerMode::kPerformance);
  EXPECT_EQ(perf.prefill, 4);
  EXPECT_EQ(perf.decode, 4);
  EXPECT_EQ(perf.prefill_placement, (ThreadPlacement{fast, kPerformanceNice}));
  EXPECT_EQ(perf.decode_placement, (ThreadPlacement{fast, kPerformanceNice}));

  const ThreadPlan bal = plan_threads(d, PowerMode::kBalanced);
  EXPECT_EQ(bal.prefill, 4);
  EXPECT_EQ(bal.decode, 2);
  EXPECT_EQ(bal.prefill_placement, (ThreadPlacement{fast, 0}));
  EXPECT_EQ(bal.decode_placement, (ThreadPlacement{fast, 0}));

  const ThreadPlan eff = plan_threads(d, PowerMode::kEfficiency);
  EXPECT_EQ(eff.prefill, 4);
  EXPECT_EQ(eff.decode, 4);
  EXPECT_TRUE(eff.decode_on_efficiency_cores);
  EXPECT_EQ(eff.prefill_placement, (ThreadPlacement{fast, 0}));
  EXPECT_EQ(eff.decode_placement, (ThreadPlacement{little, kEfficiencyDecodeNice}));

  // One cluster (this 2-core x86 box): every phase on all its cores; efficiency halves decode.
  DeviceProfile one;
  one.clusters = {{2, 0, {0, 1}}};
  const ThreadPlan e1 = plan_threads(one, PowerMode::kEfficiency);
  EXPECT_EQ(e1.prefill, 2);
  EXPECT_EQ(e1.decode, 1);
  EXPECT_FALSE(e1.decode_on_efficiency_cores);
  EXPECT_EQ(e1.decode_placement, (ThreadPlacement{{0, 1}, kEfficiencyDecodeNice}));

  // A JSON tier has no CPU ids: counts and nice only.
  const ThreadPlan tier = plan_threads(load_device_profile("phone-8gb"), PowerMode::kEfficiency);
  EXPECT_TRUE(tier.decode_placement.cpus.empty());
  EXPECT_EQ(tier.decode_placement.nice, kEfficiencyDecodeNice);

  // Explicit thread counts win over the plan; placements are taken.
  ContextParams cp;
  cp.n_threads = 3;
  apply_thread_plan(eff, cp);
  EXPECT_EQ(cp.n_threads, 3);
  EXPECT_EQ(cp.n_threads_batch, 4);
  EXPECT_EQ(cp.placement.cpus, little);
  EXPECT_EQ(cp.placement_batch.cpus, fast);
}

TEST(DeviceProfile, JsonIsValidated) {
  for (const char* bad :
       {"[]", "{}", R"({"ram_total_mib": -1, "clusters": [{"cores": 1}]})", R"({"ram_total_mib": 100, "clusters": []})",
        R"({"ram_total_mib": 100, "clusters": [{"cores": 0}]})",
        R"({"ram_total_mib": "x", "clusters": [{"cores": 1}]})"}) {
    EXPECT_THROW(DeviceProfile::from_json(Json::parse(bad)), Error) << bad;
  }
  const DeviceProfile d = detect_this_device();
  EXPECT_GT(d.ram_total_bytes, 0u);
  EXPECT_GE(d.total_cores(), 1);
  EXPECT_FALSE(d.isa.empty());
  EXPECT_THROW(load_device_profile("phone-3gb"), Error);
}

// The child process: the guarded load of `key`, then SIGKILL before the guard's end() (an OOM
// kill while loading). Returns the signal that ended it.
int load_and_get_killed(const std::string& guard_dir, const std::string& key, const std::string& path) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    CrashLoopGuard guard(guard_dir);
    if (!guard.begin(key).allowed) ::_exit(3);
    auto model = Model::load(path);  // the real load the kill interrupts
    ::kill(::getpid(), SIGKILL);
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFSIGNALED(status) ? WTERMSIG(status) : -WEXITSTATUS(status);
}

TEST(CrashLoopGuard, TwoKilledLoadsMarkTheConfigurationAndThePlannerMovesOn) {
  const std::string dir = test::temp_dir() + "/guard";
  CrashLoopGuard guard(dir);
  PlanOptions o;
  o.max_ctx = 512;
  o.min_ctx = 128;
  o.guard = &guard;
  const DeviceProfile d = small_device(100);
  const Plan first = make_plan(d, two_models(), o);
  ASSERT_TRUE(first.choice);
  EXPECT_EQ(first.choice->label, "zh");
  const std::string key = first.choice->guard_key;

  EXPECT_EQ(load_and_get_killed(dir, key, first.choice->path), SIGKILL);
  EXPECT_FALSE(guard.is_unfit(key)) << "one kill is not yet a loop";
  EXPECT_EQ(load_and_get_killed(dir, key, first.choice->path), SIGKILL);
  // The next start: the guard sees two loads that never finished and refuses the third.
  const auto third = guard.begin(key);
  EXPECT_FALSE(third.allowed);
  EXPECT_EQ(third.killed_loads, 2);
  EXPECT_TRUE(guard.is_unfit(key));

  const Plan next = make_plan(d, two_models(), o);
  ASSERT_TRUE(next.choice);
  EXPECT_NE(next.choice->guard_key, key);
  EXPECT_LT(next.choice->memory.total(), first.choice->memory.total());
  std::printf("  first choice %s (%.2f MiB), after two killed loads %s (%.2f MiB)\n", key.c_str(),
              first.choice->memory.total() / 1048576.0, next.choice->guard_key.c_str(),
              next.choice->memory.total() / 1048576.0);

  // A load that finishes (or fails cleanly) clears its marker; clear() forgets the mark.
  const std::string other = "stories/ctx=128/kv=f16";
  ASSERT_TRUE(guard.begin(other).allowed);
  guard.end(other);
  EXPECT_EQ(guard.begin(other).killed_loads, 0);
  guard.end(other);
  guard.clear(key);
  EXPECT_FALSE(guard.is_unfit(key));
  EXPECT_THROW(guard.begin("bad key with spaces"), Error);
}

}  // namespace
}  // namespace edgellm
