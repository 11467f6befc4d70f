// The degradation ladder: its mapping and hysteresis on a fake clock; Linux pressure files read
// from a folder of fake /proc, cgroup and thermal files; and the controller on a real ModelHost
// while requests stream: pressure fed during streaming moves down the ladder in order (threads,
// context, int8 KV, smaller model, refuse, end running) and back up in reverse order once it
// eases; every step is in the metrics with its reason; a request admitted before the steps
// finishes unchanged (equal to its solo reference), one running at the last rung ends with
// DEGRADED and its text so far, refusals carry the reason, and after recovery the output
// equals the base reference again.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <future>
#include <string>
#include <thread>

#include "core/error.h"
#include "device/power_mode.h"
#include "core/atomic_file.h"
#include "runtime/degradation_controller.h"
#include "runtime/degradation_ladder.h"
#include "runtime/model_host.h"
#include "runtime/pressure_signals.h"
#include "support/test_env.h"

namespace edgellm {
namespace {

TEST(DegradationLadder, TargetsAndOrderAndHysteresis) {
  EXPECT_EQ(target_rung({0, 0, false}), Rung::kNormal);
  EXPECT_EQ(target_rung({0, 0, true}), Rung::kFewerThreads);
  EXPECT_EQ(target_rung({1, 0, false}), Rung::kShorterContext);
  EXPECT_EQ(target_rung({2, 0, false}), Rung::kSmallerModel);
  EXPECT_EQ(target_rung({3, 0, false}), Rung::kRefuseNew);
  EXPECT_EQ(target_rung({4, 0, false}), Rung::kEndRunning);
  EXPECT_EQ(target_rung({0, 2, false}), Rung::kShorterContext);
  EXPECT_EQ(target_rung({0, 3, true}), Rung::kRefuseNew);
  std::string why;
  target_rung({1, 3, false}, &why);
  EXPECT_EQ(why, "thermal pressure critical");

  DegradationLadder ladder(1000);
  int64_t t = 0;
  // Down: one rung per update, in order, to the target.
  for (int expect = 1; expect <= 4; ++expect) {
    const auto steps = ladder.update({2, 0, false}, t += 10);
    ASSERT_EQ(steps.size(), 1u);
    EXPECT_EQ(static_cast<int>(steps[0].to), expect);
    EXPECT_EQ(steps[0].reason, "memory pressure high");
  }
  EXPECT_TRUE(ladder.update({2, 0, false}, t += 10).empty());
  EXPECT_FALSE(ladder.pending());
  // Up: not before the pressure stayed lower for 1000 ms; a flicker restarts the hold.
  EXPECT_TRUE(ladder.update({0, 0, false}, t += 10).empty());
  EXPECT_TRUE(ladder.update({0, 0, false}, t += 900).empty());
  EXPECT_TRUE(ladder.update({2, 0, false}, t += 10).empty());  // back up: target reached, no step
  EXPECT_TRUE(ladder.update({0, 0, false}, t += 10).empty());
  EXPECT_TRUE(ladder.update({0, 0, false}, t += 999).empty());
  auto up = ladder.update({0, 0, false}, t += 1);
  ASSERT_EQ(up.size(), 1u);
  EXPECT_EQ(up[0].to, Rung::kInt8Kv);
  EXPECT_TRUE(ladder.update({0, 0, false}, t += 500).empty()) << "each step up waits its own hold";
  for (Rung want : {Rung::kShorterContext, Rung::kFewerThreads, Rung::kNormal}) {
    up = ladder.update({0, 0, false}, t += 1000);
    ASSERT_EQ(up.size(), 1u);
    EXPECT_EQ(up[0].to, want);
  }
  const Json m = ladder.metrics_json();
  EXPECT_EQ(m.at("rungs").at("smaller_model").at("entered").as_int(), 1);
  EXPECT_EQ(m.at("rungs").at("fewer_threads").at("left").as_int(), 1);
  EXPECT_EQ(m.at("rungs").at("int8_kv").at("last_reason").as_string(), "memory pressure high");
}

TEST(PressureSignals, LinuxFilesToLevels) {
  const std::string root = test::temp_dir() + "/fake-sys";
  make_dirs(root + "/proc/pressure");
  make_dirs(root + "/cg");
  make_dirs(root + "/thermal/thermal_zone0");
  make_dirs(root + "/thermal/thermal_zone1");
  std::ofstream(root + "/proc/pressure/memory")
      << "some avg10=12.50 avg60=3.00 avg300=1.00 total=123\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
  std::ofstream(root + "/cg/memory.events") << "low 0\nhigh 3\nmax 0\noom 0\noom_kill 0\n";
  std::ofstream(root + "/thermal/thermal_zone0/temp") << "41000\n";
  std::ofstream(root + "/thermal/thermal_zone1/temp") << "56500\n";
  const LinuxPressure a = read_linux_pressure(root + "/proc", root + "/cg", root + "/thermal");
  EXPECT_TRUE(a.psi);
  EXPECT_DOUBLE_EQ(a.some_avg10, 12.5);
  EXPECT_EQ(a.high, 3u);
  EXPECT_DOUBLE_EQ(a.max_temp_c, 56.5);
  PressureSignals s = signals_from_linux(a, a);
  EXPECT_EQ(s.memory_level, 1);
  EXPECT_EQ(s.thermal_level, 2);
  std::ofstream(root + "/cg/memory.events") << "low 0\nhigh 3\nmax 0\noom 1\noom_kill 1\n";
  const LinuxPressure b = read_linux_pressure(root + "/proc", root + "/cg", root + "/thermal");
  EXPECT_EQ(signals_from_linux(b, a).memory_level, 3) << "a new OOM event";
  // Nothing readable: no signal, no crash.
  const LinuxPressure none = read_linux_pressure(root + "/nope", root + "/nope", root + "/nope");
  EXPECT_FALSE(none.psi || none.memory_events || none.thermal);
  EXPECT_EQ(signals_from_linux(none, none), PressureSignals{});
}

ServiceParams base_params() {
  ServiceParams p;
  p.context.n_ctx = 256;
  p.context.n_seq_max = 4;
  p.context.n_threads = 2;
  p.max_queued = 4;
  return p;
}

ServiceRequest greedy(const std::string& prompt, int max_tokens) {
  ServiceRequest r;
  r.prompt = prompt;
  r.sampling.temperature = 0;
  r.max_tokens = max_tokens;
  r.ignore_eog = true;
  r.deadline_ms = 0;
  return r;
}

std::string solo(const std::string& path, const ServiceParams& p, const std::string& prompt, int max_tokens) {
  auto svc = InferenceService::open(path, p);
  std::promise<std::string> done;
  ServiceRequest r = greedy(prompt, max_tokens);
  r.on_finish = [&](const RequestResult& res) { done.set_value(res.text); };
  svc->submit(std::move(r));
  return done.get_future().get();
}

struct Running {
  std::promise<RequestResult> done;
  std::future<RequestResult> result = done.get_future();
  std::atomic<int> tokens{0};
  ModelHost::Submitted submitted;
};

// Starts a request whose token callback sleeps 4 ms, so it keeps streaming while steps happen.
void start_slow(DegradationController& c, Running& run, const std::string& prompt, int max_tokens) {
  ServiceRequest r = greedy(prompt, max_tokens);
  r.on_token = [&run](const TokenEvent&) {
    ++run.tokens;
    std::this_thread::sleep_for(std::chrono::milliseconds(4));
    return true;
  };
  r.on_finish = [&run](const RequestResult& res) { run.done.set_value(res); };
  run.submitted = c.submit(std::move(r));
}

TEST(DegradationController, DownAndBackUpWhileStreaming) {
  const std::string big = test::shared_model("tiny-zh-poems.gguf");
  const std::string small = test::shared_model("stories260K.gguf");
  const std::string zh_prompt = "春眠不觉晓";
  ModelHost host(big, "big", base_params());
  DegradationConfig cfg;
  cfg.base_model_path = big;
  cfg.base_version = "big";
  cfg.smaller_models = {{small, "small"}};
  cfg.recover_ms = 150;
  cfg.tick_ms = 20;
  DegradationController c(host, cfg);

  const std::string ref_base = solo(big, base_params(), zh_prompt, 40);
  const std::string ref_small = solo(small, c.params_for(Rung::kSmallerModel), "Once upon a time", 20);

  // A request that ran entirely before any step.
  {
    std::promise<RequestResult> d;
    ServiceRequest r = greedy(zh_prompt, 40);
    r.on_finish = [&](const RequestResult& res) { d.set_value(res); };
    EXPECT_EQ(c.submit(std::move(r)).version, "big");
    EXPECT_EQ(d.get_future().get().text, ref_base);
  }
  // A request streaming while the ladder steps down to rung 4.
  Running a;
  start_slow(c, a, zh_prompt, 40);
  while (a.tokens < 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  c.set_signals({2, 0, false});
  ASSERT_TRUE(c.wait_settled(std::chrono::seconds(20)));
  EXPECT_EQ(c.rung(), Rung::kSmallerModel);
  EXPECT_LT(a.tokens, 40) << "the steps happened while it streamed";
  const RequestResult ra = a.result.get();
  EXPECT_EQ(ra.finish_reason, FinishReason::kLength) << "no step before the last ends a running request";
  EXPECT_EQ(ra.text, ref_base) << "admitted before the steps: served to the end by the base service";
  EXPECT_EQ(host.current_version(), "small");
  // stories260K's head_dim (8) takes no Q8_0 KV: the smaller model keeps F16 (tiny-zh's 32
  // did take it at rung 3: checked through params_for below).
  EXPECT_EQ(host.current_params().context.kv_type, TensorType::F16);
  EXPECT_EQ(c.params_for(Rung::kInt8Kv).context.kv_type, TensorType::Q8_0);
  // Rung 1 moved decode to the efficiency placement (a lower priority); the base has none.
  EXPECT_EQ(c.params_for(Rung::kFewerThreads).context.placement.nice, kEfficiencyDecodeNice);
  EXPECT_TRUE(c.params_for(Rung::kNormal).context.placement.empty());
  EXPECT_EQ(host.current_params().context.n_ctx, 128);
  EXPECT_EQ(host.current_params().context.n_threads, 1);
  const double planned_small = c.metrics_json().at("planned_bytes").as_number();
  {
    std::promise<RequestResult> d;
    ServiceRequest r = greedy("Once upon a time", 20);
    r.on_finish = [&](const RequestResult& res) { d.set_value(res); };
    EXPECT_EQ(c.submit(std::move(r)).version, "small");
    EXPECT_EQ(d.get_future().get().text, ref_small);
  }

  // Critical: a running request survives rung 5 (refuse new) and is ended by rung 6.
  Running b;
  start_slow(c, b, "Once upon a time", 100);
  while (b.tokens < 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  c.set_signals({3, 0, false});
  ASSERT_TRUE(c.wait_settled(std::chrono::seconds(20)));
  EXPECT_EQ(c.rung(), Rung::kRefuseNew);
  try {
    c.submit(greedy("x", 4));
    ADD_FAILURE() << "rung 5 refuses new requests";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDegraded);
    EXPECT_NE(std::string(e.what()).find("degraded: memory pressure critical"), std::string::npos) << e.what();
  }
  EXPECT_EQ(b.result.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout) << "still running at rung 5";
  c.set_signals({4, 0, false});
  const RequestResult rb = b.result.get();
  EXPECT_EQ(rb.finish_reason, FinishReason::kError);
  EXPECT_EQ(rb.error_code, ErrorCode::kDegraded);
  EXPECT_NE(rb.error.find("memory pressure free now"), std::string::npos) << rb.error;
  EXPECT_FALSE(rb.text.empty());
  EXPECT_LT(rb.stats.completion_tokens, 100);
  ASSERT_TRUE(c.wait_settled(std::chrono::seconds(20)));
  EXPECT_EQ(c.rung(), Rung::kEndRunning);

  // The pressure eases: back up, one rung per hold, in reverse order.
  c.set_signals({0, 0, false});
  ASSERT_TRUE(c.wait_settled(std::chrono::seconds(30)));
  EXPECT_EQ(c.rung(), Rung::kNormal);
  EXPECT_EQ(host.current_version(), "big");
  EXPECT_EQ(host.current_params().context.kv_type, TensorType::F16);
  EXPECT_EQ(host.current_params().context.n_ctx, 256);
  {
    std::promise<RequestResult> d;
    ServiceRequest r = greedy(zh_prompt, 40);
    r.on_finish = [&](const RequestResult& res) { d.set_value(res); };
    c.submit(std::move(r));
    EXPECT_EQ(d.get_future().get().text, ref_base) << "after recovery the base configuration serves again";
  }
  const Json m = c.metrics_json();
  EXPECT_LT(planned_small, m.at("planned_bytes").as_number()) << "the smaller configuration costs less by the formula";
  for (const char* rung : {"fewer_threads", "shorter_context", "int8_kv", "smaller_model", "refuse_new", "end_running"}) {
    EXPECT_EQ(m.at("rungs").at(rung).at("entered").as_int(), 1) << rung;
    EXPECT_EQ(m.at("rungs").at(rung).at("left").as_int(), 1) << rung;
  }
  EXPECT_EQ(m.at("refused_requests").as_int(), 1);
  EXPECT_EQ(m.at("ended_requests").as_int(), 1);
  EXPECT_EQ(m.at("apply_failures").as_int(), 0);
  std::printf("  metrics: %s\n", m.dump().c_str());
}

// Rung 3 narrows F16 / F32 K and V to Q8_0 but never widens a 4-bit one: K Q4_0 / V F16 becomes
// K Q4_0 / V Q8_0, and K = V = Q4_0 stays as it is.
TEST(DegradationController, Int8KvNeverWidensAQ4_0Cache) {
  const std::string zh = test::shared_model("tiny-zh-poems.gguf");
  ServiceParams p = base_params();
  p.context.kv_type = TensorType::Q4_0;
  p.context.kv_type_v = TensorType::F16;
  ModelHost host(zh, "zh", p);
  DegradationConfig cfg;
  cfg.base_model_path = zh;
  cfg.base_version = "zh";
  DegradationController c(host, cfg);
  const ContextParams int8 = c.params_for(Rung::kInt8Kv).context;
  EXPECT_EQ(int8.kv_k(), TensorType::Q4_0);
  EXPECT_EQ(int8.kv_v(), TensorType::Q8_0);
  EXPECT_EQ(c.params_for(Rung::kShorterContext).context.kv_v(), TensorType::F16);
}

}  // namespace
}  // namespace edgellm
