#include "tools/eval/task_runner.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>

#include "core/error.h"
#include "service/inference_service.h"
#include "tools/eval/classification.h"

namespace edgellm::eval {

ModelRun run_cases(const std::string& model_path, const std::vector<EvalCase>& cases,
                   const GenerationSettings& settings,
                   const std::function<void(size_t index, const CaseOutput& output)>& on_done) {
  using Clock = std::chrono::steady_clock;
  require(settings.parallel >= 1, ErrorCode::kInvalidArgument, "parallel must be >= 1");
  ServiceParams sp;
  sp.context = settings.context;
  sp.context.n_seq_max = settings.parallel;
  sp.load = settings.load;
  sp.step_tokens = settings.step_tokens;
  // Every case is queued up front: the queue bound is the service's BUSY guard for apps.
  sp.max_queued = static_cast<int32_t>(std::min<size_t>(cases.size(), size_t{1} << 20));

  ModelRun run;
  run.model_path = model_path;
  run.outputs.resize(cases.size());
  const auto t_load = Clock::now();
  std::unique_ptr<InferenceService> service = InferenceService::open(model_path, sp);
  run.load_seconds = std::chrono::duration<double>(Clock::now() - t_load).count();

  // Shared between this thread and the scheduler thread's on_finish callbacks.
  std::mutex mutex;
  std::condition_variable cv;
  size_t done = 0;
  std::vector<RequestId> ids;
  ids.reserve(cases.size());
  const auto t0 = Clock::now();
  for (size_t i = 0; i < cases.size(); ++i) {
    const EvalCase& c = cases[i];
    ServiceRequest r;
    if (c.messages.is_null()) {
      r.prompt = c.prompt;
      r.add_special = true;
      r.parse_special = true;  // as `edgellm run`: "<|im_start|>" in a prompt is that control token
    } else {
      r.messages = c.messages;
    }
    r.sampling = settings.sampling;
    r.generation.max_tokens = c.max_tokens.value_or(settings.max_tokens);
    r.generation.stop = c.stop.value_or(settings.stop);
    r.deadline_ms = 0;  // an evaluation waits for every case however loaded the machine is
    r.priority = Priority::kBackground;
    r.on_finish = [&, i](const RequestResult& res) {
      CaseOutput out;
      out.text = res.text;
      out.finish_reason = res.finish_reason;
      out.error = res.finish_reason == FinishReason::kError ? res.error : std::string();
      out.prompt_tokens = res.stats.prompt_tokens;
      out.completion_tokens = res.stats.completion_tokens;
      if (on_done) on_done(i, out);
      std::lock_guard<std::mutex> lock(mutex);
      run.outputs[i] = std::move(out);
      run.peak_rss_bytes = std::max(run.peak_rss_bytes, res.stats.peak_rss_bytes);
      ++done;
      cv.notify_all();
    };
    try {
      ids.push_back(service->submit(std::move(r)));
    } catch (const Error& e) {
      // Refused at submit (e.g. a role the template does not know): the case fails, the run goes on.
      std::lock_guard<std::mutex> lock(mutex);
      run.outputs[i].finish_reason = FinishReason::kError;
      run.outputs[i].error = e.what();
      ++done;
    }
  }
  bool cancelled = false;
  {
    std::unique_lock<std::mutex> lock(mutex);
    while (done < cases.size()) {
      // The cancel flag is set from a signal handler, which cannot notify: poll it.
      cv.wait_for(lock, std::chrono::milliseconds(100));
      if (!cancelled && settings.cancel != nullptr && settings.cancel->load()) {
        cancelled = true;
        lock.unlock();
        for (const RequestId id : ids) service->cancel(id);
        lock.lock();
      }
    }
  }
  // Accuracy cases with labels: the label by its likelihood, one case at a time through the
  // service (InferenceService::submit_classify; the service is idle now: every generation has
  // finished), so cases that share their instruction reuse its KV from the prefix cache.
  for (size_t i = 0; i < cases.size() && !cancelled; ++i) {
    const EvalCase& c = cases[i];
    if (c.metric != Metric::kAccuracy || c.labels.empty()) continue;
    std::optional<ClassifyRequest> request = classify_request(c);
    if (!request) continue;
    CaseOutput& out = run.outputs[i];
    if (out.finish_reason == FinishReason::kError) continue;  // the case failed already
    request->deadline_ms = 0;  // an evaluation waits as long as a case takes
    try {
      auto answer = std::make_shared<std::promise<ClassifyOutcome>>();
      std::future<ClassifyOutcome> got = answer->get_future();
      const RequestId id = service->submit_classify(
          std::move(*request), [answer](ClassifyOutcome& o) { answer->set_value(std::move(o)); });
      while (got.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
        if (settings.cancel != nullptr && settings.cancel->load()) (void)service->cancel(id);
      }
      const ClassifyOutcome o = got.get();
      if (o.result.finish_reason == FinishReason::kError) throw Error(o.error_code, o.error);
      cancelled = o.result.finish_reason == FinishReason::kCancelled;
      if (!cancelled) out.classified_label = o.result.label;
    } catch (const Error& e) {
      // A request the classify refuses (a label over the context, ...): the case fails, the run goes on.
      out.finish_reason = FinishReason::kError;
      out.error = std::string("classify: ") + e.what();
    }
  }
  run.generate_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  service->shutdown();
  require(!cancelled, ErrorCode::kCancelled, "evaluation cancelled");
  for (const CaseOutput& o : run.outputs) {
    run.prompt_tokens += o.prompt_tokens;
    run.completion_tokens += o.completion_tokens;
    if (o.finish_reason == FinishReason::kError) ++run.errors;
  }
  return run;
}

}  // namespace edgellm::eval
