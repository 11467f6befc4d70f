#include "tools/bench/service_request.h"

#include <condition_variable>
#include <mutex>

#include "core/error.h"
#include "service/inference_service.h"

namespace edgellm::bench {

ServiceRun run_greedy_request(InferenceService& service, const std::vector<int32_t>& prompt, int32_t n_gen) {
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  ServiceRun run;
  RequestResult result;
  ServiceRequest r;
  r.tokens = prompt;
  r.sampling.temperature = 0;
  r.generation.max_tokens = n_gen;
  r.generation.ignore_eog = true;
  r.deadline_ms = 0;
  r.on_token = [&](const TokenEvent& ev) {
    if (ev.token >= 0) run.tokens.push_back(ev.token);  // scheduler thread; read after on_finish
    return true;
  };
  r.on_finish = [&](const RequestResult& res) {
    std::lock_guard<std::mutex> lock(mutex);
    result = res;
    done = true;
    cv.notify_all();
  };
  service.submit(std::move(r));
  std::unique_lock<std::mutex> lock(mutex);
  cv.wait(lock, [&] { return done; });
  if (result.finish_reason == FinishReason::kError) throw Error(result.error_code, result.error);
  run.stats = result.stats;
  return run;
}

}  // namespace edgellm::bench
