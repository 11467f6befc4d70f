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
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/atomic_file.h"
#include "core/error.h"
#include "device/power_mode.h"
#include "runtime/degradation_controller.h"
#include "runtime/degradation_ladder.h"
#include "runtime/model_host.h"
#include "runtime/pressure_signals.h"
#include "support/service_fixture.h"
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
  ServiceParams p = test::service_params(256, 4, 4);
  p.context.n_threads = 2;
  return p;
}

ServiceRequest greedy(const std::string& prompt, int max_tokens) {
  return test::greedy_request(prompt, max_tokens);
}

std::string solo(const std::string& path, const ServiceParams& p, const std::string& prompt, int max_tokens) {
  auto svc = InferenceService::open(path, p);
  std::promise<std::string> done;
  ServiceRequest r = greedy(prompt, max_tokens);
  r.on_finish = [&](const RequestResult& res) { done.set_value(res.text); };
  svc->submit(std::move(r));
  return done.get_future().get();
}

// A request that stops in its third token's callback until the test opens the gate: it is
// certainly still running (on the service that admitted it) while the ladder steps.
struct Gated {
  std::mutex mutex;
  std::condition_variable cv;
  bool arrived = false, open = false;
  int tokens = 0;  // token events so far (the scheduler thread writes, under the mutex)
  std::promise<RequestResult> done;
  std::future<RequestResult> result = done.get_future();

  bool wait_arrived() {
    std::unique_lock<std::mutex> lock(mutex);
    return cv.wait_for(lock, std::chrono::seconds(30), [&] { return arrived; });
  }
  void release() {
    std::lock_guard<std::mutex> lock(mutex);
    open = true;
    cv.notify_all();
  }
  int count() {
    std::lock_guard<std::mutex> lock(mutex);
    return tokens;
  }
};

void start_gated(DegradationController& c, Gated& g, const std::string& prompt, int max_tokens) {
  ServiceRequest r = greedy(prompt, max_tokens);
  r.on_token = [&g](const TokenEvent& ev) {
    std::unique_lock<std::mutex> lock(g.mutex);
    ++g.tokens;
    if (ev.index == 2) {
      g.arrived = true;
      g.cv.notify_all();
      g.cv.wait(lock, [&] { return g.open; });  // the test opens it after its checks (no deadline needed here:
                                                // every path of the test opens it)
    }
    return true;
  };
  r.on_finish = [&g](const RequestResult& res) { g.done.set_value(res); };
  (void)c.submit(std::move(r));
}

// What one rung's live service is: read in DegradationConfig::on_step, right after the rung's
// configuration took over, from the host's current service, and one request through it: a
// prompt longer than the shortened context.
struct Live {
  Rung rung = Rung::kNormal;
  std::string version;
  int32_t n_ctx = 0, n_threads = 0;
  TensorType kv_k = TensorType::F32, kv_v = TensorType::F32;
  uint64_t pool_bytes = 0;
  int32_t n_seq = 0;
  FinishReason long_prompt = FinishReason::kError;
  ErrorCode long_prompt_code = ErrorCode::kInternal;
};

// The KV pool of n_seq sequences of n_ctx positions of a model in K / V types, by hand: blocks of
// 16 positions, each holding a K and a V row of head_dim values per layer and KV head.
uint64_t pool_bytes_by_hand(const HParams& hp, int32_t n_seq, int32_t n_ctx, TensorType k, TensorType v) {
  const auto row = [&](TensorType t) {
    return t == TensorType::F16 ? uint64_t{2} * static_cast<uint64_t>(hp.head_dim)
                                : uint64_t{34} * static_cast<uint64_t>(hp.head_dim) / 32;  // Q8_0: 34 bytes per 32
  };
  return static_cast<uint64_t>(n_seq) * static_cast<uint64_t>((n_ctx + 15) / 16) * 16 *
         static_cast<uint64_t>(hp.n_layer) * static_cast<uint64_t>(hp.n_head_kv) * (row(k) + row(v));
}

TEST(DegradationController, DownAndBackUpWhileStreaming) {
  const std::string big = test::shared_model("tiny-zh-poems.gguf");
  const std::string small = test::shared_model("stories260K.gguf");
  const std::string zh_prompt = "春眠不觉晓";
  // 151 tokens for tiny-zh-poems (one per character, and BOS): fits the base context (256), not a
  // halved one (128); stories260K spells it in far more byte tokens.
  std::string long_prompt;
  for (int i = 0; i < 30; ++i) long_prompt += "床前明月光";
  // Two requests held at their third token (below); declared before the host so that they
  // outlive its services, and opened on every way out of the test before those shut down.
  Gated a, b;
  ModelHost host(big, "big", base_params());
  DegradationConfig cfg;
  cfg.base_model_path = big;
  cfg.base_version = "big";
  cfg.smaller_models = {{small, "small"}};
  cfg.recover_ms = 150;
  cfg.tick_ms = 20;
  std::mutex live_mutex;
  std::vector<Live> live;  // one per configuration step, in order
  DegradationController* controller = nullptr;
  cfg.on_step = [&](const DegradationLadder::Step& step) {
    if (static_cast<int>(step.to) > static_cast<int>(Rung::kSmallerModel)) return;  // rungs 5, 6: no configuration
    Live l;
    l.rung = step.to;
    l.version = host.current_version();
    const std::shared_ptr<InferenceService> svc = host.current_service();
    l.n_ctx = svc->context_params().n_ctx;
    l.n_threads = svc->context_params().n_threads;
    l.kv_k = svc->context_params().kv_k();
    l.kv_v = svc->context_params().kv_v();
    l.n_seq = svc->context_params().n_seq_max;
    l.pool_bytes = svc->metrics().kv_pool_bytes;
    std::promise<RequestResult> done;
    ServiceRequest r = greedy(long_prompt, 4);
    r.on_finish = [&](const RequestResult& res) { done.set_value(res); };
    (void)controller->submit(std::move(r));
    const RequestResult res = done.get_future().get();
    l.long_prompt = res.finish_reason;
    l.long_prompt_code = res.error_code;
    std::lock_guard<std::mutex> lock(live_mutex);
    live.push_back(l);
  };
  DegradationController c(host, cfg);
  controller = &c;
  struct OpenGates {
    Gated& a;
    Gated& b;
    ~OpenGates() {
      a.release();
      b.release();
    }
  } open_gates{a, b};

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
  // A request streaming (held at its third token) while the ladder steps down, one rung at a
  // time: power-save (rung 1), then memory moderate (rung 2), then memory high (rungs 3 and 4).
  start_gated(c, a, zh_prompt, 40);
  ASSERT_TRUE(a.wait_arrived());
  for (const PressureSignals& s :
       {PressureSignals{0, 0, true}, PressureSignals{1, 0, false}, PressureSignals{2, 0, false}}) {
    c.set_signals(s);
    ASSERT_TRUE(c.wait_settled(std::chrono::seconds(20)));
  }
  EXPECT_EQ(c.rung(), Rung::kSmallerModel);
  EXPECT_EQ(a.count(), 3) << "still held at its third token: the steps happened while it streamed";
  a.release();
  const RequestResult ra = a.result.get();
  EXPECT_EQ(ra.finish_reason, FinishReason::kLength) << "no step before the last ends a running request";
  EXPECT_EQ(ra.text, ref_base) << "admitted before the steps: served to the end by the base service";
  EXPECT_EQ(host.current_version(), "small");
  // Rung 1 moved decode to the efficiency placement (a lower priority); the base has none.
  EXPECT_EQ(c.params_for(Rung::kFewerThreads).context.placement.nice, kEfficiencyDecodeNice);
  EXPECT_TRUE(c.params_for(Rung::kNormal).context.placement.empty());
  const double planned_small = c.metrics_json().at("planned_bytes").as_number();
  {
    std::promise<RequestResult> d;
    ServiceRequest r = greedy("Once upon a time", 20);
    r.on_finish = [&](const RequestResult& res) { d.set_value(res); };
    EXPECT_EQ(c.submit(std::move(r)).version, "small");
    EXPECT_EQ(d.get_future().get().text, ref_small);
  }

  // Critical: a running request (held at its third token) survives rung 5 (refuse new) and is
  // ended by rung 6.
  start_gated(c, b, "Once upon a time", 100);
  ASSERT_TRUE(b.wait_arrived());
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
  ASSERT_TRUE(c.wait_settled(std::chrono::seconds(20)));
  EXPECT_EQ(c.rung(), Rung::kEndRunning);
  b.release();
  const RequestResult rb = b.result.get();
  EXPECT_EQ(rb.finish_reason, FinishReason::kError);
  EXPECT_EQ(rb.error_code, ErrorCode::kDegraded);
  EXPECT_NE(rb.error.find("memory pressure free now"), std::string::npos) << rb.error;
  EXPECT_FALSE(rb.text.empty());
  EXPECT_EQ(rb.stats.completion_tokens, 3) << "ended at the first step after its third token";

  // The pressure eases: back up, one rung per hold, in reverse order.
  c.set_signals({0, 0, false});
  ASSERT_TRUE(c.wait_settled(std::chrono::seconds(30)));
  EXPECT_EQ(c.rung(), Rung::kNormal);
  EXPECT_EQ(host.current_version(), "big");
  {
    std::promise<RequestResult> d;
    ServiceRequest r = greedy(zh_prompt, 40);
    r.on_finish = [&](const RequestResult& res) { d.set_value(res); };
    c.submit(std::move(r));
    EXPECT_EQ(d.get_future().get().text, ref_base) << "after recovery the base configuration serves again";
  }

  const HParams big_hp = Model::load(big)->hparams(), small_hp = Model::load(small)->hparams();
  // Each configuration as its live service had it: down 1, 2, 3, 4; up 4 (from rung 5: nothing
  // rebuilt), 3, 2, 1, 0. The int8-KV rung is seen live twice: on the big model going down and
  // after the swap back going up.
  std::lock_guard<std::mutex> lock(live_mutex);
  const std::vector<Rung> order = {Rung::kFewerThreads,   Rung::kShorterContext, Rung::kInt8Kv,
                                   Rung::kSmallerModel,   Rung::kSmallerModel,   Rung::kInt8Kv,
                                   Rung::kShorterContext, Rung::kFewerThreads,   Rung::kNormal};
  ASSERT_EQ(live.size(), order.size());
  for (size_t i = 0; i < live.size(); ++i) {
    const Live& l = live[i];
    SCOPED_TRACE("step " + std::to_string(i) + " to " + rung_name(l.rung));
    EXPECT_EQ(l.rung, order[i]);
    const int r = static_cast<int>(l.rung);
    const bool small_model = l.rung == Rung::kSmallerModel;
    EXPECT_EQ(l.version, small_model ? "small" : "big");
    EXPECT_EQ(l.n_threads, r >= 1 ? 1 : 2);
    EXPECT_EQ(l.n_ctx, r >= 2 ? 128 : 256);
    // int8 KV where the model's head_dim allows it: tiny-zh-poems (32) does, stories260K (8) not.
    const TensorType kv = r >= 3 && !small_model ? TensorType::Q8_0 : TensorType::F16;
    EXPECT_EQ(l.kv_k, kv);
    EXPECT_EQ(l.kv_v, kv);
    EXPECT_EQ(l.pool_bytes, pool_bytes_by_hand((small_model ? small_hp : big_hp), l.n_seq, l.n_ctx, kv, kv));
    if (r >= 2) {
      EXPECT_EQ(l.long_prompt, FinishReason::kError);
      EXPECT_EQ(l.long_prompt_code, ErrorCode::kContextFull) << "a prompt longer than the shortened context";
    } else {
      EXPECT_EQ(l.long_prompt, FinishReason::kLength) << "the same prompt fits the full context";
    }
    std::printf("  live at %-15s %-5s n_ctx %3d, %d threads, KV %s/%s, pool %7llu bytes, long prompt: %s\n",
                rung_name(l.rung), l.version.c_str(), l.n_ctx, l.n_threads, tensor_type_name(l.kv_k),
                tensor_type_name(l.kv_v), static_cast<unsigned long long>(l.pool_bytes),
                l.long_prompt == FinishReason::kError ? error_code_name(l.long_prompt_code) : "served");
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
