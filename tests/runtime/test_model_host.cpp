// service/model_host.h, the hot swap: 4 client threads send 200 greedy requests while the model
// is switched from stories260K (version "1") to tiny-zh-poems (version "2") half way. No request
// fails; every result equals the solo reference output of exactly the version that claims it
// (an independent run of that model on a fresh service); both versions served; after the swap
// drains, the old file is no longer in /proc/self/maps. A swap to a file that does not load
// changes nothing; reconfigure() keeps the model mapped once.
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <future>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "runtime/model_host.h"
#include "support/service_fixture.h"
#include "support/test_env.h"

namespace edgellm {
namespace {

const std::vector<std::string> kPrompts = {"Once upon a time", "The little dog", "Lily was", "He saw a big"};

ServiceParams params() {
  ServiceParams p = test::service_params(128, 4, 4);
  p.context.n_threads = 1;
  return p;
}

ServiceRequest request(size_t prompt) {
  return test::greedy_request(kPrompts[prompt], 8, /*stop_at_eog=*/true);
}

// Greedy outputs of a model run alone on its own service: the reference.
std::vector<std::string> solo(const std::string& path) {
  auto svc = InferenceService::open(path, params());
  std::vector<std::string> out;
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    std::promise<std::string> p;
    ServiceRequest r = request(i);
    r.on_finish = [&](const RequestResult& res) { p.set_value(res.text); };
    svc->submit(std::move(r));
    out.push_back(p.get_future().get());
  }
  return out;
}

std::string copy_to(const std::string& src, const std::string& dst) {
  std::ifstream in(src, std::ios::binary);
  std::ofstream out(dst, std::ios::binary);
  out << in.rdbuf();
  return dst;
}

bool mapped(const std::string& path) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find(path) != std::string::npos) return true;
  }
  return false;
}

TEST(ModelHost, HotSwapUnderLoad) {
  const std::string a = copy_to(test::shared_model("stories260K.gguf"), test::temp_dir() + "/v1.gguf");
  const std::string b = copy_to(test::shared_model("tiny-zh-poems.gguf"), test::temp_dir() + "/v2.gguf");
  const std::map<std::string, std::vector<std::string>> reference = {{"1", solo(a)}, {"2", solo(b)}};
  ASSERT_NE(reference.at("1"), reference.at("2"));

  ModelHost host(a, "1", params());
  EXPECT_TRUE(mapped(a));
  struct Outcome {
    std::string version, text;
    size_t prompt = 0;
    FinishReason reason = FinishReason::kError;
  };
  constexpr int kClients = 4, kPerClient = 50;
  std::vector<std::vector<Outcome>> outcomes(kClients);
  std::atomic<int> finished{0};
  std::atomic<int> busy{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      for (int i = 0; i < kPerClient; ++i) {
        const size_t prompt = static_cast<size_t>(c + i) % kPrompts.size();
        std::promise<RequestResult> done;
        ServiceRequest r = request(prompt);
        r.on_finish = [&](const RequestResult& res) { done.set_value(res); };
        ModelHost::Submitted s;
        for (;;) {
          try {
            s = host.submit(std::move(r));
            break;
          } catch (const Error& e) {
            ASSERT_EQ(e.code(), ErrorCode::kBusy) << e.what();
            ++busy;
            r = request(prompt);
            r.on_finish = [&](const RequestResult& res) { done.set_value(res); };
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
          }
        }
        const RequestResult res = done.get_future().get();
        outcomes[static_cast<size_t>(c)].push_back({s.version, res.text, prompt, res.finish_reason});
        ++finished;
      }
    });
  }
  // Half way through the load (a deadline, not a sleep: the clients may be slow on a loaded machine).
  const bool half = test::wait_until([&] { return finished >= kClients * kPerClient / 2; }, std::chrono::seconds(120));
  EXPECT_TRUE(half) << finished << " requests finished";
  host.swap_model(b, "2", params());
  EXPECT_EQ(host.current_version(), "2");
  for (auto& t : clients) t.join();

  std::map<std::string, int> per_version;
  for (const auto& client : outcomes) {
    for (const auto& o : client) {
      ++per_version[o.version];
      EXPECT_TRUE(o.reason == FinishReason::kLength || o.reason == FinishReason::kStop)
          << finish_reason_name(o.reason);
      ASSERT_TRUE(reference.count(o.version)) << o.version;
      EXPECT_EQ(o.text, reference.at(o.version)[o.prompt]) << "version " << o.version << " prompt " << o.prompt;
    }
  }
  EXPECT_EQ(per_version["1"] + per_version["2"], kClients * kPerClient);
  EXPECT_GT(per_version["1"], 0);
  EXPECT_GT(per_version["2"], 0);
  std::printf("  200 requests: %d on version 1, %d on version 2, %d BUSY retries\n", per_version["1"],
              per_version["2"], busy.load());
  ASSERT_TRUE(host.wait_drained(std::chrono::seconds(30)));
  EXPECT_FALSE(mapped(a)) << "the old model's mapping is released after its last request";
  EXPECT_TRUE(mapped(b));
  EXPECT_EQ(host.live_versions(), std::vector<std::string>{"2"});

  // A file that does not load: nothing changes.
  const std::string junk = test::temp_dir() + "/junk.gguf";
  std::ofstream(junk) << "GGUF but not really";
  EXPECT_THROW(host.swap_model(junk, "3", params()), Error);
  EXPECT_EQ(host.current_version(), "2");

  // New parameters over the same mapping (the degradation ladder's actuator).
  ServiceParams q8 = params();
  q8.context.kv_type = TensorType::Q8_0;
  q8.context.n_ctx = 64;
  host.reconfigure(q8);
  EXPECT_EQ(host.current_version(), "2");
  EXPECT_EQ(host.current_params().context.n_ctx, 64);
  std::promise<RequestResult> done;
  ServiceRequest r = request(0);
  r.on_finish = [&](const RequestResult& res) { done.set_value(res); };
  host.submit(std::move(r));
  EXPECT_EQ(done.get_future().get().finish_reason, FinishReason::kLength);
  ASSERT_TRUE(host.wait_drained(std::chrono::seconds(30)));
  EXPECT_TRUE(mapped(b));
}

// Callbacks see the host's id; cancel() works from the request's own first token callback,
// which may run before submit() has returned.
TEST(ModelHost, IdsAndCancelFromTheCallback) {
  ModelHost host(test::shared_model("stories260K.gguf"), "1", params());
  for (int i = 0; i < 20; ++i) {
    std::promise<RequestResult> done;
    std::atomic<uint64_t> seen{0};
    ServiceRequest r = request(0);
    r.generation.max_tokens = 100;
    r.generation.ignore_eog = true;
    r.on_token = [&](const TokenEvent& e) {
      seen = e.id;
      EXPECT_TRUE(host.cancel(e.id));
      return true;
    };
    r.on_finish = [&](const RequestResult& res) { done.set_value(res); };
    const auto s = host.submit(std::move(r));
    const RequestResult res = done.get_future().get();
    EXPECT_EQ(res.id, s.id);
    EXPECT_EQ(seen.load(), s.id);
    EXPECT_EQ(res.finish_reason, FinishReason::kCancelled);
    EXPECT_LT(res.stats.completion_tokens, 100);
    EXPECT_FALSE(host.cancel(s.id)) << "finished";
  }
}

TEST(ModelHost, DestroyWithRequestsInFlight) {
  std::atomic<int> finals{0};
  {
    ModelHost host(test::shared_model("stories260K.gguf"), "1", params());
    for (int i = 0; i < 6; ++i) {
      ServiceRequest r = request(0);
      r.generation.max_tokens = 200;
      r.on_finish = [&](const RequestResult&) { ++finals; };
      try {
        host.submit(std::move(r));
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kBusy);
        ++finals;  // not accepted: counted so the total is 6
      }
    }
    host.swap_model(test::shared_model("stories260K.gguf"), "2", params());
  }
  EXPECT_EQ(finals, 6);
}

}  // namespace
}  // namespace edgellm
