#include "support/service_fixture.h"

#include <atomic>
#include <map>
#include <thread>

#include "engine/sampler.h"
#include "generation/generate.h"
#include "support/test_env.h"
#include "tokenizer/tokenizer.h"

namespace edgellm::test {

std::shared_ptr<const Model> shared_service_model(const std::string& name) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const Model>> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  std::shared_ptr<const Model>& m = loaded[name];
  if (!m) m = Model::load(shared_model(name));
  return m;
}

ServiceParams service_params(int32_t n_ctx, int32_t parallel, int32_t queued, TensorType kv_type) {
  ServiceParams p;
  p.context.n_ctx = n_ctx;
  p.context.n_seq_max = parallel;
  p.context.kv_type = kv_type;
  p.max_queued = queued;
  return p;
}

namespace {
ServiceRequest greedy_base(int32_t max_tokens, bool stop_at_eog) {
  ServiceRequest r;
  r.sampling = greedy_sampling();
  r.generation.max_tokens = max_tokens;
  r.generation.ignore_eog = !stop_at_eog;
  r.deadline_ms = 0;
  return r;
}
}  // namespace

ServiceRequest greedy_request(std::string prompt, int32_t max_tokens, bool stop_at_eog) {
  ServiceRequest r = greedy_base(max_tokens, stop_at_eog);
  r.prompt = std::move(prompt);
  return r;
}

ServiceRequest greedy_request(std::vector<int32_t> tokens, int32_t max_tokens, bool stop_at_eog) {
  ServiceRequest r = greedy_base(max_tokens, stop_at_eog);
  r.tokens = std::move(tokens);
  return r;
}

void Finishes::add() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++finished_;
  cv_.notify_all();
}

bool Finishes::wait(int n, std::chrono::milliseconds limit) {
  std::unique_lock<std::mutex> lock(mutex_);
  return cv_.wait_for(lock, limit, [&] { return finished_ >= n; });
}

int Finishes::count() {
  std::lock_guard<std::mutex> lock(mutex_);
  return finished_;
}

namespace {
std::atomic<int64_t> g_callback_order{0};
}  // namespace

ServiceRequest& Outcome::attach(ServiceRequest& r, std::function<bool(int)> hook, Finishes* finishes) {
  r.on_token = [this, hook = std::move(hook)](const TokenEvent& ev) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (ev.token >= 0) tokens.push_back(ev.token);
      if (ev.token >= 0 && first_token_order < 0) first_token_order = g_callback_order.fetch_add(1);
      streamed += ev.text;
      ++token_events;
      cv.notify_all();  // under the lock: the waiter may destroy this Outcome once it sees the change
    }
    return hook ? hook(ev.index) : true;
  };
  r.on_finish = [this, finishes](const RequestResult& res) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      ++finals;
      result = res;
      finish_order = g_callback_order.fetch_add(1);
      cv.notify_all();
    }
    if (finishes != nullptr) finishes->add();
  };
  return r;
}

bool Outcome::wait_final(std::chrono::milliseconds limit) {
  std::unique_lock<std::mutex> lock(mutex);
  return cv.wait_for(lock, limit, [&] { return finals > 0; });
}

bool Outcome::wait_tokens(int n, std::chrono::milliseconds limit) {
  std::unique_lock<std::mutex> lock(mutex);
  return cv.wait_for(lock, limit, [&] { return token_events >= n || finals > 0; });
}

int Outcome::events() {
  std::lock_guard<std::mutex> lock(mutex);
  return token_events;
}

bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

SoloRun solo_greedy(const Model& model, const Tokenizer* tok, const std::vector<int32_t>& prompt, const SoloParams& p) {
  ContextParams cp;
  cp.n_ctx = p.n_ctx;
  cp.kv_type = TensorType::F32;
  Context ctx(model, cp);
  Sampler sampler(p.sampling, model.hparams().n_vocab);
  const GenerationResult r = generate(ctx, sampler, tok, prompt, p.generation);
  return {r.tokens, r.finish_reason, r.context_shifts};
}

}  // namespace edgellm::test
