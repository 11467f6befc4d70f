// Per-phase threads (ContextParams n_threads / n_threads_batch and their placements,
// device/power_mode.h): a prompt runs on n_threads_batch threads and a decode step on n_threads
// (the pool's per-job count), worker priorities differ per phase through a second pool whose
// workers read back the decode nice value, and greedy tokens on stories260K are the same for
// every split (prefill/decode 2/1, 1/1, 2/2, and efficiency-style placements).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "engine/context.h"
#include "model/model.h"
#include "platform/thread_pool.h"
#include "support/test_env.h"

namespace edgellm {
namespace {

const std::vector<int32_t> kPrompt = {1, 403, 407, 261, 378, 285, 418, 301, 365, 280, 261, 359};
constexpr int kGenerate = 24;

int32_t argmax(const float* v, int32_t n) { return static_cast<int32_t>(std::max_element(v, v + n) - v); }

// Greedy generation; records the most threads a prompt job and a decode job asked for.
std::vector<int32_t> greedy(Context& ctx, int* prefill_threads, int* decode_threads) {
  const int32_t n_vocab = ctx.model().hparams().n_vocab;
  Batch b;
  for (size_t i = 0; i < kPrompt.size(); ++i) b.add(0, kPrompt[i], static_cast<int32_t>(i), i + 1 == kPrompt.size());
  ctx.prefill_pool().reset_max_job_threads();
  ctx.decode(b);
  *prefill_threads = ctx.prefill_pool().max_job_threads();
  std::vector<int32_t> out;
  int32_t tok = argmax(ctx.logits(0), n_vocab);
  ctx.decode_pool().reset_max_job_threads();
  for (int i = 0; i < kGenerate; ++i) {
    out.push_back(tok);
    Batch step;
    step.add(0, tok, static_cast<int32_t>(kPrompt.size()) + i, true);
    ctx.decode(step);
    tok = argmax(ctx.logits(0), n_vocab);
  }
  *decode_threads = ctx.decode_pool().max_job_threads();
  return out;
}

ContextParams params(int prefill, int decode) {
  ContextParams p;
  p.n_ctx = 64;
  p.n_batch = 32;
  p.n_threads = decode;
  p.n_threads_batch = prefill;
  return p;
}

TEST(PhaseThreads, EachPhaseRunsOnItsThreadCountAndGreedyTokensDoNotDependOnIt) {
  const auto model = Model::load(test::shared_model("stories260K.gguf"));
  int pt = 0, dt = 0;
  Context solo(*model, params(1, 1));
  const std::vector<int32_t> reference = greedy(solo, &pt, &dt);
  EXPECT_EQ(pt, 1);
  EXPECT_EQ(dt, 1);
  for (auto [prefill, decode] : {std::pair{2, 1}, std::pair{2, 2}, std::pair{1, 2}}) {
    Context ctx(*model, params(prefill, decode));
    EXPECT_EQ(greedy(ctx, &pt, &dt), reference) << "prefill " << prefill << " / decode " << decode;
    EXPECT_EQ(pt, prefill) << "prefill " << prefill << " / decode " << decode;
    EXPECT_EQ(dt, decode) << "prefill " << prefill << " / decode " << decode;
  }
}

TEST(PhaseThreads, DecodeAtAnotherPriorityRunsOnItsOwnPoolAtThatPriority) {
  const auto model = Model::load(test::shared_model("stories260K.gguf"));
  const std::vector<int> cpus = current_thread_cpus();
  const int base = current_thread_nice();
  ContextParams p = params(2, 2);
  p.placement_batch = ThreadPlacement{cpus, base};
  p.placement = ThreadPlacement{{cpus.back()}, base + 4};  // efficiency mode's shape: one core, lower priority
  int pt = 0, dt = 0;
  std::vector<int32_t> tokens;
  std::vector<int> workers_nice, workers_cpu_count;
  {
    Context ctx(*model, p);
    ASSERT_NE(&ctx.prefill_pool(), &ctx.decode_pool());
    tokens = greedy(ctx, &pt, &dt);
    EXPECT_EQ(pt, 2);
    EXPECT_EQ(dt, 2);
    // The last job of the greedy run was a decode step, started under decode's placement: the
    // caller (thread 0) took its CPU. (Whether the worker joined those microsecond-long jobs of
    // a tiny model is a race, so the workers are read back in a job of their own below.)
    EXPECT_EQ(current_thread_cpus(), std::vector<int>{cpus.back()});
    // A decode-phase job on the decode pool in which the caller's tasks wait (up to 10 s) until
    // worker 1 has run one: a worker applies the phase's placement before it runs any of the
    // phase's tasks.
    {
      const ScopedThreadPlacement decode_phase(&p.placement);
      std::atomic<bool> worker_ran{false};
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      ctx.decode_pool().parallel_for(16, [&](int64_t, int thread) {
        if (thread != 0) {  // only worker 1 writes: a 2-thread job
          workers_nice.push_back(current_thread_nice());
          workers_cpu_count.push_back(static_cast<int>(current_thread_cpus().size()));
          worker_ran = true;
        }
        while (!worker_ran && std::chrono::steady_clock::now() < give_up) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
      }, 2);
    }
    const auto log = ctx.placement_log();
    EXPECT_EQ(log.nice_denied, 0u) << log.note;
    EXPECT_GE(log.nice_applied, 1u);
  }
  apply_placement_to_current_thread(ThreadPlacement{cpus, std::nullopt}, false);  // the caller took decode's CPU
  ASSERT_FALSE(workers_nice.empty());
  for (int n : workers_nice) EXPECT_EQ(n, base + 4);
  for (int c : workers_cpu_count) EXPECT_EQ(c, 1);
  EXPECT_EQ(current_thread_nice(), base) << "the caller keeps its priority";

  Context plain(*model, params(1, 1));
  EXPECT_EQ(greedy(plain, &pt, &dt), tokens);
}

}  // namespace
}  // namespace edgellm
