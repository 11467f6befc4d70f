// What the service, runtime and server tests share when they build an InferenceService (or a
// ModelHost over one) and drive requests through it: the test parameters, greedy requests, an
// Outcome that collects what one request streamed and how it ended, a counter of finished
// requests, and the solo reference — the same request run alone with generate() on a fresh
// Context without the prefix cache, an independent driver of the same engine.
//
// Thread safety: an Outcome's callbacks run on a scheduler thread and write under its mutex; the
// test reads its fields after a wait_*() has returned true (the mutex orders the writes before),
// or through the locked accessors while the request still runs.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/context.h"
#include "model/model.h"
#include "service/inference_service.h"
#include "service/request.h"

namespace edgellm {
class Tokenizer;
}

namespace edgellm::test {

// The model shared/models/<name> (stories260K.gguf, tiny-zh-poems.gguf), loaded once per process
// and shared by every service a test makes (each owns a reference).
std::shared_ptr<const Model> shared_service_model(const std::string& name);

// ServiceParams of the tests: n_ctx positions, `parallel` sequences, `queued` waiting requests.
ServiceParams service_params(int32_t n_ctx, int32_t parallel, int32_t queued, TensorType kv_type = TensorType::F16);

// Greedy (temperature 0), no deadline, end-of-generation ignored unless stop_at_eog.
ServiceRequest greedy_request(std::string prompt, int32_t max_tokens, bool stop_at_eog = false);
ServiceRequest greedy_request(std::vector<int32_t> tokens, int32_t max_tokens, bool stop_at_eog = false);

// Counts the requests of several Outcomes that finished.
class Finishes {
 public:
  void add();
  // Waits until at least n requests finished; false on timeout.
  bool wait(int n, std::chrono::milliseconds limit = std::chrono::seconds(120));
  int count();

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int finished_ = 0;
};

// What one request streamed and how it ended.
struct Outcome {
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<int32_t> tokens;  // sampled ids, in order
  std::string streamed;         // every text piece, in order
  int token_events = 0;
  int finals = 0;
  RequestResult result;
  // Places in one process-wide sequence of callbacks (every Outcome draws from it): when this
  // request's first token and its on_finish came, relative to other requests' (-1: not yet).
  // Callbacks of one service all run on its scheduler thread, so the order is the real one.
  int64_t first_token_order = -1;
  int64_t finish_order = -1;

  // Sets r's on_token / on_finish to fill this Outcome; `hook(index)` runs inside on_token (after
  // the event is recorded, without the lock) and its result is on_token's; `finishes` (optional)
  // counts the request when it ends. Returns r.
  ServiceRequest& attach(ServiceRequest& r, std::function<bool(int)> hook = {}, Finishes* finishes = nullptr);
  bool wait_final(std::chrono::milliseconds limit = std::chrono::seconds(30));
  // At least n token events, or the end.
  bool wait_tokens(int n, std::chrono::milliseconds limit = std::chrono::seconds(30));
  int events();
};

// Polls `done` (every millisecond) until it holds or `limit` passes: waiting on an observable
// state with a deadline, never a fixed sleep. True when it held.
bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds limit = std::chrono::seconds(30));

// Greedy sampling (temperature 0; penalties, bias and the rest at their defaults).
inline SamplerParams greedy_sampling() {
  SamplerParams s;
  s.temperature = 0;
  return s;
}

// The solo reference: `prompt` run alone with generate() on a fresh Context (F32 KV, no prefix
// cache) with the request's own sampling and GenerationParams (greedy, 40 tokens by default).
struct SoloParams {
  int32_t n_ctx = 256;
  SamplerParams sampling = greedy_sampling();
  GenerationParams generation = [] {
    GenerationParams g;
    g.max_tokens = 40;
    return g;
  }();
};
struct SoloRun {
  std::vector<int32_t> tokens;
  FinishReason finish_reason = FinishReason::kError;
  int32_t context_shifts = 0;
};
SoloRun solo_greedy(const Model& model, const Tokenizer* tok, const std::vector<int32_t>& prompt, const SoloParams& p);

}  // namespace edgellm::test
