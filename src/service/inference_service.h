// The InferenceService: one model, one Context, one scheduler thread that owns the Context and
// serves many requests at once by continuous batching. Callers on any thread only enqueue
// (submit, cancel, pause, ...: each returns after a queue push); every forward pass, tokenizer
// run and callback happens on the scheduler thread.
//
// One step of the scheduler (the loop: inference_scheduler.cpp; admission:
// inference_admission.cpp; batch, forward and stream: inference_step.cpp; a request's end:
// inference_finish.cpp; the callers' calls: inference_service.cpp):
//   housekeeping   cancellations, deadlines (finish reason timeout with the partial text), trims;
//                  while paused nothing else runs (KV kept)
//   admission      waiting requests in priority order, while a sequence is free and the KV pool
//                  can reserve blocks for prompt + max_tokens: tokenize / render the template,
//                  build the sampler state; a request that cannot be served ends with an error
//   batch          one decode token for every running sequence (and a speculating sequence's
//                  drafts, inference_step.cpp), then chunks of pending prompts
//                  (interactive first, then the shortest remaining prompt first)
//                  up to step_tokens entries in all (long prompts are prefilled across steps
//                  while the other streams keep decoding)
//   forward        Context::decode, abandoned between layers when a request of the batch is
//                  cancelled or times out, the service pauses or shuts down (rolled back, redone)
//   stream         SequenceGenerator::step per sequence with logits (per verified row for a
//                  speculating one; rejected drafts' KV truncated) -> on_token; finished
//                  requests release their sequence and get on_finish
//
// KV admission reserves ceil(min(n_ctx, prompt + max_tokens) / block_tokens) blocks for each
// running request, so a running batch never runs out of blocks half way: a sequence's table
// never outgrows its reservation, so the blocks in use never exceed the sum of the reservations.
// Blocks shared through the prefix cache count once: a request is admitted when the smaller of
// that sum and (blocks in use + what each table may still gain + the copies context shifts and
// block-boundary prompts may make of shared blocks) fits the pool (committed_blocks). Cached
// blocks (prefix cache, refcount 0) are evicted by allocation and need no reservation. A
// request whose reservation exceeds the whole pool fails with kOutOfMemory; one that does not
// fit next to the running ones waits.
//
// Prefix cache: at admission the sequence maps the longest prefix of the prompt that the KV
// prefix cache holds (full blocks of any earlier or running request with the same leading
// tokens, kv_cache.h), at most prompt - 1 tokens (the last one is run for its logits), and only
// the rest is prefilled. RequestStats::cached_tokens reports it; the outputs are those of a full
// prefill (the cached K/V rows are the ones a prefill of the same tokens wrote).
//
// Draft model (ServiceParams::draft_model_path, or the constructor's draft_model): requests with
// speculation mode kDraft draft with it (docs/speculative-decoding.md "In the service"). The
// service keeps one DraftModelDrafter per sequence slot, created at construction: its own
// Context with one sequence of n_ctx positions at the draft model's shape (memory_plan.h
// draft_context_params; the planner counts n_seq_max of them). A slot's drafter keeps the KV of
// its last request, truncated to the common prefix when the next request in that slot starts
// (a per-slot prefix cache). Its forwards run on the scheduler thread, between the target's
// forwards, on the same thread pool: no lock, one owner.
//
// Classify (submit_classify, classify_job.h; inference_classify.cpp): a classify request waits
// in the same queue and is admitted in its turn; it runs between two steps in scratch sequences
// the Context keeps beside n_seq_max (kClassifyScratchSeqs; the KV pool is sized for n_seq_max
// alone), its prompt's prefix from the prefix cache, and leaves its prompt's full blocks there.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "chat/chat_template.h"
#include "engine/context.h"
#include "model/model.h"
#include "service/classify_job.h"
#include "service/request.h"
#include "service/request_limits.h"
#include "service/request_queue.h"
#include "service/service_metrics.h"

namespace edgellm {

class Tokenizer;
class DraftModelDrafter;
class RequestGrammars;
class Sampler;
class SequenceGenerator;
struct StepOutput;
struct KvCacheParams;

struct ServiceParams {
  // n_ctx (0: the model's, capped at 4096), n_seq_max = requests decoded at once (default 4
  // here), threads, KV type and budget. n_batch is raised to step_tokens when smaller.
  ContextParams context = default_context_params();
  ModelLoadParams load;
  int32_t max_queued = 3;        // requests that may wait for a sequence (beyond those a free
                                 // sequence takes at once); one more -> BUSY
  int32_t step_tokens = 256;     // most batch entries per step (decode tokens + prefill chunk)
  // Speculative decoding's batch-size back-off (ServiceRequest::generation.speculation): drafts join a step
  // only while its decode entries (one per decoding sequence plus the drafts so far) stay at most
  // this many, and never a step that also prefills; beyond it a wider forward costs real time
  // (docs/speculative-decoding.md "In the service" has the measured curve). 0: never draft.
  int32_t spec_max_batch_tokens = 8;
  // A draft model for speculation mode kDraft: a GGUF with the model's vocabulary, token for
  // token (check_same_vocabulary), loaded with `load` beside the model. "": none (requests in
  // mode kDraft are refused). The constructor's draft_model argument, when given, is used instead.
  std::string draft_model_path;
  size_t warmup_min_free_bytes = size_t{256} << 20;  // warm-up skipped below this MemAvailable
  std::string chat_template;     // built-in name or file; empty: the model's own (or a guess)
  InputPolicy input_policy = InputPolicy::kRefuse;  // invalid UTF-8 / control characters (request_limits.h)

  static ContextParams default_context_params() {
    ContextParams p;
    p.n_seq_max = 4;
    return p;
  }
};

class InferenceService {
 public:
  // Loads the model (on the calling thread: this is initialisation), creates the Context and
  // starts the scheduler thread. Throws Error (kIo, kInvalidFile, kUnsupported,
  // kInvalidArgument for bad parameters, kOutOfMemory).
  static std::unique_ptr<InferenceService> open(const std::string& model_path, const ServiceParams& params);
  // `draft_model`: the draft model (null: params.draft_model_path is loaded when not empty; a
  // model host reuses the mapping across reconfigurations). A draft model that cannot be loaded
  // or has another vocabulary throws (kInvalidArgument for the vocabulary) naming the file.
  InferenceService(std::shared_ptr<const Model> model, const ServiceParams& params,
                   std::shared_ptr<const Model> draft_model = nullptr);
  // shutdown().
  ~InferenceService();
  InferenceService(const InferenceService&) = delete;
  InferenceService& operator=(const InferenceService&) = delete;

  // Validates the request (input present and valid UTF-8, known roles, sampling values, stop
  // strings) and queues it. Throws Error(kInvalidArgument) naming what is wrong, Error(kBusy)
  // when the waiting queue is full, Error(kCancelled) after shutdown(). On success on_finish
  // will run exactly once. Any thread, including the callbacks.
  RequestId submit(ServiceRequest request);

  // Queues a classify request (classify_job.h): checked and tokenized here (Error
  // kInvalidArgument naming the field, or the prompt plus the longest label over n_ctx), then
  // the same queue as submit(): Error(kBusy) when the waiting queue is full, Error(kCancelled)
  // after shutdown(). request.deadline_ms counts from here (queue wait included); cancel(id)
  // ends it; shutdown() ends it with kCancelled. On success on_finish runs exactly once, on the
  // scheduler thread (never under a lock of the service). Any thread, including the callbacks
  // (which must not wait for the result: it is made on the thread that runs them).
  RequestId submit_classify(ClassifyRequest request, std::function<void(ClassifyOutcome&)> on_finish);

  // Checks session bytes (a ServiceRequest::session_in to be, e.g. one uploaded by another
  // device) against this service's model file, KV type and shape and vocabulary, exactly as
  // submit() does, without touching the cache: throws Error kInvalidFile (truncated, corrupted)
  // or kInvalidArgument (another model, KV type or shape) with a message that says which.
  // Returns the number of positions the session holds. Any thread.
  int32_t check_session(std::string_view bytes) const;

  // Ends a waiting or running request with finish reason cancelled (its on_finish follows on
  // the scheduler thread; a running request streams no token after the step in flight). False
  // when the id is unknown or already finished. Any thread.
  bool cancel(RequestId id);

  // pause(): the step in flight is abandoned (and redone after resume(), so outputs do not
  // change), nothing is scheduled, KV is kept; cancellations and deadlines still end requests.
  // resume() continues. Deadlines keep running while paused. Any thread. pause() returns at once;
  // metrics().paused_idle turns true when the scheduler has seen it (the step in flight ended).
  void pause();
  void resume();
  bool paused() const;

  // Releases the Context's scratch (and the KV pool's pages when no request holds KV) between
  // two steps; done(bytes released) runs on the scheduler thread. Any thread.
  void trim(std::function<void(size_t bytes)> done = {});

  // A short forward pass in the background so the first request does not pay for cold caches
  // and page faults. Skipped (done(false, why)) when MemAvailable is below
  // warmup_min_free_bytes, when requests are already running (the model is warm) or on
  // shutdown; done(true, "") after it ran. Deferred while paused. Any thread.
  void warmup(std::function<void(bool ran, const std::string& why)> done = {});

  // A snapshot of the aggregated metrics. Any thread.
  ServiceMetrics metrics() const;

  // Cancels every waiting and running request (each gets on_finish, reason cancelled), stops
  // and joins the scheduler thread. Idempotent. Throws Error(kInvalidArgument) when called from
  // the scheduler thread (a callback), which would wait for itself.
  void shutdown();

  bool on_scheduler_thread() const { return std::this_thread::get_id() == thread_id_.load(); }

  // Immutable after construction: safe from any thread. context_params().n_seq_max is the
  // requests decoded at once (the classify scratch sequences not counted).
  const Model& model() const { return *model_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const ChatTemplate& chat_template() const { return *template_; }
  const ContextParams& context_params() const { return ctx_params_; }
  const ServiceParams& params() const { return params_; }
  // The draft model (null: none) and the bytes its per-slot contexts allocated (KV, scratch,
  // logits; not its weights).
  const std::shared_ptr<const Model>& draft_model() const { return draft_model_; }
  size_t draft_context_bytes() const { return draft_context_bytes_; }

 private:
  struct Live;  // one accepted request, from submit to on_finish
  enum class Where { kQueued, kScheduler };

  RequestId enqueue(std::unique_ptr<Live> r, Priority priority);  // submit's queue push (BUSY, shutdown)
  void run();  // the scheduler thread
  bool has_work_locked(std::chrono::steady_clock::time_point now) const;
  std::chrono::steady_clock::time_point next_deadline_locked() const;
  void admit();
  // KV blocks the running requests, and `candidate` (its prefix mapped, not yet running) when
  // given, hold or may still take (admission: the comment at the top, docs/c-api.md "KV memory
  // and the prefix cache").
  int64_t committed_blocks(const Live* candidate = nullptr) const;
  bool prepare(Live& r);           // tokenizes, sizes the reservation; false: finished with an error
  // Runs an admitted classify job (inference_classify.cpp); false: it waits as blocked_ (KV
  // blocks, or its forward was abandoned: housekeeping decides), true: finished.
  bool run_classify(std::unique_ptr<Live>& r);
  void finish_classify(std::unique_ptr<Live> r, FinishReason reason, ErrorCode code, const std::string& error);
  void step();
  void run_warmups(std::vector<std::function<void(bool, const std::string&)>>& waiters);
  bool deliver(Live& r, const StepOutput& out);
  void finish(std::unique_ptr<Live> r, FinishReason reason, ErrorCode code = ErrorCode::kInternal,
              const std::string& error = {});
  void finish_running(size_t index, FinishReason reason, ErrorCode code = ErrorCode::kInternal,
                      const std::string& error = {});
  struct KvGauges {
    int32_t used = 0, cached = 0;
    uint64_t evictions = 0;
    double fragmentation = 0;
  };
  KvGauges kv_gauges() const;             // scheduler thread
  void publish_gauges();                  // takes mutex_
  void set_gauges_locked(const KvGauges& kv);  // mutex_ held
  static bool abort_check(void* self);

  ServiceParams params_;
  std::shared_ptr<const Model> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<RequestGrammars> grammars_;  // text constraints -> compiled, for this vocabulary
  std::unique_ptr<ChatTemplate> template_;
  std::unique_ptr<Context> ctx_;  // scheduler thread only (after construction)
  ContextParams ctx_params_;
  uint64_t fingerprint_ = 0;  // the model file's, to check sessions at submit (immutable)
  std::unique_ptr<const KvCacheParams> kv_params_;  // the same (immutable)
  std::shared_ptr<const Model> draft_model_;         // null: no draft model (immutable)
  size_t draft_context_bytes_ = 0;                   // immutable

  // ---- shared with callers, under mutex_
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  RequestQueue<Live> queue_;
  std::unordered_map<RequestId, Where> live_;      // accepted, no on_finish yet
  std::vector<RequestId> cancels_;                  // for requests the scheduler holds
  std::vector<std::unique_ptr<Live>> cancelled_queued_;  // taken out of the queue by cancel()
  std::vector<std::function<void(size_t)>> trims_;
  std::vector<std::function<void(bool, const std::string&)>> warmups_;
  RequestId next_id_ = 1;
  bool paused_ = false;
  bool paused_idle_ = false;  // paused_ seen by the scheduler between steps (set there, cleared by resume)
  bool stopping_ = false;
  ServiceMetrics metrics_;  // counters; gauges filled in by metrics()
  int32_t held_ = 0;        // requests the scheduler holds (running + blocked on KV)
  int32_t blocked_count_ = 0;
  KvGauges kv_;

  // ---- scheduler thread only
  std::vector<std::unique_ptr<Live>> running_;
  std::unique_ptr<Live> blocked_;  // admitted from the queue, waiting for KV blocks
  // Requests finished so far, and that count when blocked_ last failed to fit: a blocked request
  // with a session is retried only after a request finished (loading the session costs a copy
  // of all its rows; what it needs can only fit once blocks were released).
  uint64_t finished_requests_ = 0;
  uint64_t blocked_retry_after_ = 0;
  std::vector<int32_t> free_seqs_;
  // The draft model's drafter of each sequence slot (empty without a draft model), lent to the
  // request running in that slot (SequenceSpeculation).
  std::vector<std::unique_ptr<DraftModelDrafter>> drafters_;
  std::chrono::steady_clock::time_point step_deadline_;

  std::atomic<bool> interrupt_{false};  // abandon the forward in flight
  std::atomic<std::thread::id> thread_id_{};
  std::thread thread_;
  std::mutex shutdown_mutex_;  // one shutdown() at a time
};

}  // namespace edgellm
