// The EmbeddingService: the InferenceService's counterpart for embedding and rerank requests.
// One model, one Embedder (engine/embedder.h), one scheduler thread that owns it; callers on any
// thread only enqueue (submit, cancel, pause, ...). Same machinery as generation: a bounded
// waiting queue (full: BUSY at once), priorities, deadlines (the queue wait included), cancel,
// pause / resume / trim / warm-up, a forward abandoned between layers when a request of it is
// cancelled or times out, metrics. Requests of an embedder and of a generator in one process
// (two Runtimes) share the process's thread pool, whose jobs are serialised: their forwards
// take turns on the big cores instead of preempting one another.
//
// One step of the scheduler (embedding_service.cpp):
//   housekeeping   cancellations, deadlines (finish reason timeout, no partial output), trims;
//                  while paused nothing else runs
//   admission      waiting requests in priority order (FIFO within one), while the admitted
//                  ones leave less than a forward's worth of tokens: inputs tokenized and framed
//                  ([CLS] ... [SEP]; query-document pairs), truncated or refused as asked; a
//                  request whose inputs cannot be run ends with an error
//   batch          the next inputs of the admitted requests, in order, up to n_batch tokens (and
//                  n_seq_max sequences for decoders): several requests share one forward, a
//                  long request spans several steps
//   forward        Embedder::run (each input pooled, scored and normalised as its request asks)
//   finish         requests whose inputs are all done get on_finish (no lock held)
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/embedder.h"
#include "model/model.h"
#include "service/embedding_metrics.h"
#include "service/embedding_request.h"
#include "service/request_limits.h"
#include "service/request_queue.h"

namespace edgellm {

class Tokenizer;

struct EmbeddingServiceParams {
  EmbedderParams embedder;  // n_ctx (longest input), n_batch (tokens per forward), threads
  ModelLoadParams load;
  int32_t max_queued = 8;  // requests that may wait beyond the admitted ones; one more -> BUSY
  size_t warmup_min_free_bytes = size_t{128} << 20;  // warm-up skipped below this MemAvailable
  InputPolicy input_policy = InputPolicy::kRefuse;   // invalid UTF-8 / control characters
};

class EmbeddingService {
 public:
  // Loads the model (on the calling thread), builds the Embedder and starts the scheduler.
  // Throws Error (kIo, kInvalidFile, kUnsupported, kInvalidArgument, kOutOfMemory).
  static std::unique_ptr<EmbeddingService> open(const std::string& model_path, const EmbeddingServiceParams& params);
  EmbeddingService(std::shared_ptr<const Model> model, const EmbeddingServiceParams& params);
  ~EmbeddingService();  // shutdown()
  EmbeddingService(const EmbeddingService&) = delete;
  EmbeddingService& operator=(const EmbeddingService&) = delete;

  // Checks the request (request_limits.h: check_embedding_request; rerank needs a model with a
  // classification head) and queues it. Throws Error(kInvalidArgument) naming what is wrong,
  // kUnsupported (rerank on an embedding model), kBusy (queue full), kCancelled (shut down). On
  // success on_finish runs exactly once. Any thread, the callbacks included.
  RequestId submit(EmbeddingRequest request);

  // Ends a waiting or admitted request with finish reason cancelled (on_finish follows on the
  // scheduler thread; a forward it is part of is abandoned). False for an unknown or finished id.
  bool cancel(RequestId id);
  // pause(): the forward in flight is abandoned (redone after resume()); nothing runs, deadlines
  // and cancellations still end requests. Any thread.
  void pause();
  void resume();
  bool paused() const;
  // Frees the Embedder's scratch between two steps; done(bytes) on the scheduler thread.
  void trim(std::function<void(size_t bytes)> done = {});
  // A short forward in the background (skipped when requests run or memory is low).
  void warmup(std::function<void(bool ran, const std::string& why)> done = {});
  EmbeddingMetrics metrics() const;
  // Cancels every request (each gets on_finish), stops and joins the scheduler. Idempotent.
  // Throws Error(kInvalidArgument) from the scheduler thread (it would wait for itself).
  void shutdown();
  bool on_scheduler_thread() const { return std::this_thread::get_id() == thread_id_.load(); }

  // Immutable after construction: safe from any thread.
  const Model& model() const { return *model_; }
  std::shared_ptr<const Model> shared_model() const { return model_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const EmbeddingServiceParams& params() const { return params_; }
  int32_t n_ctx() const { return n_ctx_; }
  int32_t n_batch() const { return n_batch_; }
  int32_t dims() const;                 // floats per vector (n_embd)
  PoolingType default_pooling() const;  // the model's (kUnspecified resolved)
  bool can_rerank() const;              // the model has a classification head

 private:
  struct Live;
  enum class Where { kQueued, kScheduler };

  void run();
  bool has_work_locked(std::chrono::steady_clock::time_point now) const;
  std::chrono::steady_clock::time_point next_deadline_locked() const;
  void admit();
  bool prepare(Live& r);  // tokenizes; false: finished with an error
  void step();
  void run_warmups(std::vector<std::function<void(bool, const std::string&)>>& waiters);
  void finish(std::unique_ptr<Live> r, FinishReason reason, ErrorCode code = ErrorCode::kInternal,
              const std::string& error = {});
  void publish_gauges();
  static bool abort_check(void* self);

  EmbeddingServiceParams params_;
  std::shared_ptr<const Model> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<Embedder> embedder_;  // scheduler thread only (after construction)
  int32_t n_ctx_ = 0, n_batch_ = 0, n_seq_max_ = 0;

  // ---- shared with callers, under mutex_
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  RequestQueue<Live> queue_;
  std::unordered_map<RequestId, Where> live_;
  std::vector<RequestId> cancels_;
  std::vector<std::unique_ptr<Live>> cancelled_queued_;
  std::vector<std::function<void(size_t)>> trims_;
  std::vector<std::function<void(bool, const std::string&)>> warmups_;
  RequestId next_id_ = 1;
  bool paused_ = false;
  bool stopping_ = false;
  EmbeddingMetrics metrics_;
  int32_t running_count_ = 0;

  // ---- scheduler thread only
  std::vector<std::unique_ptr<Live>> running_;  // admitted, in admission order
  std::chrono::steady_clock::time_point step_deadline_;

  std::atomic<bool> interrupt_{false};
  std::atomic<std::thread::id> thread_id_{};
  std::thread thread_;
  std::mutex shutdown_mutex_;
};

}  // namespace edgellm
