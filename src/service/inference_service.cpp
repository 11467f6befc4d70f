// The InferenceService's face to its callers (inference_service.h): construction, submit (the
// request limits, grammars and sessions checked on the caller's thread, then a queue push),
// cancel, pause / resume, trim, warm-up, metrics and shutdown. Every call only enqueues; the
// scheduler thread does the work: its loop in inference_scheduler.cpp, admission in
// inference_admission.cpp, the step in inference_step.cpp, a request's end in
// inference_finish.cpp.
#include "service/inference_service.h"

#include <algorithm>
#include <utility>

#include "chat/chat_prompt.h"
#include "core/log.h"
#include "engine/memory_plan.h"
#include "engine/sampler.h"
#include "generation/draft_model_drafter.h"
#include "grammar/compiled_grammar.h"
#include "kv/kv_cache.h"
#include "kv/session_file.h"
#include "platform/memory_stats.h"
#include "service/live_request.h"
#include "service/request_grammar.h"
#include "service/request_limits.h"
#include "service/sequence_speculation.h"
#include "tokenizer/tokenizer.h"

namespace edgellm {

std::unique_ptr<InferenceService> InferenceService::open(const std::string& model_path, const ServiceParams& params) {
  std::shared_ptr<const Model> model = Model::load(model_path, params.load);
  return std::make_unique<InferenceService>(std::move(model), params);
}

InferenceService::InferenceService(std::shared_ptr<const Model> model, const ServiceParams& params,
                                   std::shared_ptr<const Model> draft_model)
    : params_(params), model_(std::move(model)), draft_model_(std::move(draft_model)), queue_(static_cast<size_t>(std::max(0, params.max_queued)) + static_cast<size_t>(std::max(1, params.context.n_seq_max))) {
  require(model_ != nullptr, ErrorCode::kInvalidArgument, "service: no model");
  require(params_.max_queued >= 0 && params_.max_queued <= 1 << 16, ErrorCode::kInvalidArgument,
          "service: max_queued " + std::to_string(params_.max_queued) + " is outside [0, 65536]");
  ContextParams cp = params_.context;
  require(cp.n_seq_max >= 1 && cp.n_seq_max <= 256, ErrorCode::kInvalidArgument,
          "service: n_parallel (n_seq_max) " + std::to_string(cp.n_seq_max) + " is outside [1, 256]");
  require(params_.step_tokens > cp.n_seq_max && params_.step_tokens <= 1 << 16, ErrorCode::kInvalidArgument,
          "service: step_tokens " + std::to_string(params_.step_tokens) +
              " must exceed n_parallel (one decode token each plus prefill) and be at most 65536");
  require(params_.spec_max_batch_tokens >= 0 && params_.spec_max_batch_tokens <= params_.step_tokens,
          ErrorCode::kInvalidArgument, [&] {
            return "service: spec_max_batch_tokens " + std::to_string(params_.spec_max_batch_tokens) +
                   " is outside [0, step_tokens]";
          });
  cp.n_batch = std::max(cp.n_batch, params_.step_tokens);
  tokenizer_ = Tokenizer::from_gguf(model_->gguf());
  require(tokenizer_->n_vocab() == model_->hparams().n_vocab, ErrorCode::kInvalidFile,
          "service: the vocabulary has " + std::to_string(tokenizer_->n_vocab()) + " tokens but the model " +
              std::to_string(model_->hparams().n_vocab));
  grammars_ = std::make_unique<RequestGrammars>(*tokenizer_);
  std::string description;
  std::string warning;
  template_ = std::make_unique<ChatTemplate>(
      select_chat_template(model_->gguf(), *tokenizer_, params_.chat_template, &description, &warning));
  if (!warning.empty()) log_message(LogLevel::kInfo, "service: " + warning);
  // Classify's scratch sequences (classify_job.h) beside the requests' ones. The pool stays the
  // size n_seq_max alone gives (its blocks come from the same budget), so it is computed here
  // and handed over as bytes.
  const ContextParams requested = cp;
  {
    ContextParams sized = resolved_context_params(*model_, cp);
    const KvCacheParams kp = kv_cache_params(model_->hparams(), sized);
    cp.kv_budget_bytes = static_cast<size_t>(kv_pool_blocks(sized, kp)) * KvCache::block_bytes(kp);
    cp.kv_budget_fraction = 0;
  }
  cp.n_seq_max += kClassifyScratchSeqs;
  ctx_ = std::make_unique<Context>(*model_, cp);
  ctx_params_ = ctx_->params();
  ctx_params_.n_seq_max = requested.n_seq_max;  // the requests' sequences (scratch ones not counted)
  ctx_params_.kv_budget_fraction = requested.kv_budget_fraction;
  if (requested.kv_budget_bytes == 0 && requested.kv_budget_fraction == 0) ctx_params_.kv_budget_bytes = 0;
  fingerprint_ = ctx_->model_fingerprint();
  kv_params_ = std::make_unique<const KvCacheParams>(ctx_->kv_cache().params());
  ctx_->set_abort_check(AbortCheck{&InferenceService::abort_check, this});
  if (draft_model_ == nullptr && !params_.draft_model_path.empty()) {
    try {
      draft_model_ = Model::load(params_.draft_model_path, params_.load);
    } catch (const Error& e) {
      throw Error(e.code(), "service: draft model '" + params_.draft_model_path + "': " + e.what());
    }
  }
  if (draft_model_ != nullptr) {
    const std::string name = params_.draft_model_path.empty() ? std::string("(given)") : params_.draft_model_path;
    try {
      check_same_vocabulary(*draft_model_, *model_);
    } catch (const Error& e) {
      throw Error(e.code(), "service: draft model '" + name + "': " + e.what());
    }
    // One per sequence slot, each with its own KV sequence of n_ctx at the draft model's shape
    // (memory_plan.h draft_context_params: what the planner counts, n_seq_max times).
    for (int32_t s = 0; s < ctx_params_.n_seq_max; ++s) {
      drafters_.push_back(std::make_unique<DraftModelDrafter>(*draft_model_, *ctx_));
      draft_context_bytes_ += drafters_.back()->allocated_bytes();
    }
  }
  for (int32_t s = ctx_params_.n_seq_max - 1; s >= 0; --s) free_seqs_.push_back(s);
  metrics_.max_queued = params_.max_queued;
  metrics_.n_parallel = ctx_params_.n_seq_max;
  metrics_.kv_blocks_total = ctx_->kv_blocks_total();
  metrics_.kv_block_tokens = ctx_params_.kv_block_tokens;
  metrics_.kv_pool_bytes = ctx_->kv_cache().pool().total_bytes();
  metrics_.draft_context_bytes = draft_context_bytes_;
  thread_ = std::thread([this] { run(); });
  log_message(LogLevel::kInfo, "service: started (" + std::to_string(ctx_params_.n_seq_max) + " sequences of " +
                                   std::to_string(ctx_params_.n_ctx) + " positions, " +
                                   std::to_string(ctx_->kv_blocks_total()) + " KV blocks, queue " +
                                   std::to_string(params_.max_queued) + ", chat template " + description +
                                   (draft_model_ ? ", a draft model per sequence" : "") + ")");
}

InferenceService::~InferenceService() {
  try {
    shutdown();
  } catch (...) {
    // Destroyed from its own callback: cannot join itself. Detach rather than terminate; the
    // C ABI refuses this case before it gets here.
    if (thread_.joinable()) thread_.detach();
  }
}

bool InferenceService::abort_check(void* self) {
  auto* s = static_cast<InferenceService*>(self);
  return s->interrupt_.load(std::memory_order_relaxed) || Clock::now() >= s->step_deadline_;
}

int32_t InferenceService::check_session(std::string_view bytes) const {
  // fingerprint_, kv_params_ and the model are immutable after construction: no lock needed.
  const SessionView session = decode_session(bytes, fingerprint_, *kv_params_);
  check_session_tokens(session, model_->hparams().n_vocab);
  return static_cast<int32_t>(session.tokens.size());
}

RequestId InferenceService::submit(ServiceRequest request) {
  auto r = std::make_unique<Live>();
  r->submitted = Clock::now();
  try {
    const int32_t n_vocab = model_->hparams().n_vocab;
    r->sanitized_chars = check_request(request, n_vocab, params_.input_policy);
    grammars_->compile(request);  // a grammar given as text, for this model version's vocabulary
    if (request.generation.grammar != nullptr) {
      const int32_t grammar_vocab = request.generation.grammar->vocabulary().size();
      require(grammar_vocab == n_vocab, ErrorCode::kInvalidArgument, [&] {
        return "request: the grammar was compiled for a vocabulary of " + std::to_string(grammar_vocab) +
               " tokens but the model has " + std::to_string(n_vocab);
      });
    }
    if (!request.session_in.empty()) check_session(request.session_in);
    r->spec_off_reason = check_speculation(request, draft_model_ != nullptr);
    r->sampler = std::make_unique<Sampler>(request.sampling, n_vocab);
  } catch (const Error&) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++metrics_.invalid_requests;
    throw;
  }
  if (request.deadline_ms > 0) {
    r->deadline = r->submitted + std::chrono::milliseconds(request.deadline_ms);
  }
  const Priority priority = request.priority;
  r->req = std::move(request);
  return enqueue(std::move(r), priority);
}

RequestId InferenceService::submit_classify(ClassifyRequest request, std::function<void(ClassifyOutcome&)> on_finish) {
  auto r = std::make_unique<Live>();
  r->submitted = Clock::now();
  try {
    r->classify = std::make_unique<ClassifyJob>(make_classify_job(std::move(request), *tokenizer_, *template_,
                                                                  params_.input_policy, ctx_params_.n_ctx,
                                                                  ctx_params_.kv_block_tokens));
  } catch (const Error&) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++metrics_.invalid_requests;
    throw;
  }
  r->classify->on_finish = std::move(on_finish);
  if (r->classify->request.deadline_ms > 0) {
    r->deadline = r->submitted + std::chrono::milliseconds(r->classify->request.deadline_ms);
  }
  return enqueue(std::move(r), Priority::kInteractive);
}

RequestId InferenceService::enqueue(std::unique_ptr<Live> r, Priority priority) {
  RequestId id = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) throw Error(ErrorCode::kCancelled, "the service is shut down");
    // Waiting = beyond what free sequences take at once: queued requests a free sequence will
    // admit in the next step do not wait. A request the scheduler holds for KV blocks waits
    // (and then no sequence is free for the queue).
    const int64_t running = held_ - blocked_count_;
    const int64_t free_slots = blocked_count_ > 0 ? 0 : std::max<int64_t>(0, ctx_params_.n_seq_max - running);
    const int64_t waiting = static_cast<int64_t>(queue_.size()) + blocked_count_ - free_slots;
    if (waiting >= params_.max_queued) {
      ++metrics_.busy_rejections;
      throw Error(ErrorCode::kBusy, "busy: " + std::to_string(params_.max_queued) +
                                        " requests are already waiting; try again later");
    }
    id = next_id_++;
    r->id = id;
    live_.emplace(id, Where::kQueued);
    try {
      queue_.push(priority, r);
    } catch (...) {
      live_.erase(id);  // nothing queued, no callback: as the caller is told
      throw;
    }
    ++metrics_.requests_submitted;
  }
  wake_.notify_one();
  return id;
}

bool InferenceService::cancel(RequestId id) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(id);
    if (it == live_.end()) return false;
    if (it->second == Where::kQueued) {
      for (auto& r : queue_.remove_if([id](const Live& r) { return r.id == id; })) {
        cancelled_queued_.push_back(std::move(r));
      }
      it->second = Where::kScheduler;  // the scheduler delivers its on_finish
    } else {
      cancels_.push_back(id);
      interrupt_.store(true, std::memory_order_relaxed);
    }
  }
  wake_.notify_one();
  return true;
}

void InferenceService::pause() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    paused_ = true;
    interrupt_.store(true, std::memory_order_relaxed);
  }
  wake_.notify_one();
}

void InferenceService::resume() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    paused_ = false;
    paused_idle_ = false;
  }
  wake_.notify_one();
}

bool InferenceService::paused() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return paused_;
}

void InferenceService::trim(std::function<void(size_t)> done) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    trims_.push_back(done ? std::move(done) : [](size_t) {});
  }
  wake_.notify_one();
}

void InferenceService::warmup(std::function<void(bool, const std::string&)> done) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    warmups_.push_back(done ? std::move(done) : [](bool, const std::string&) {});
  }
  wake_.notify_one();
}

ServiceMetrics InferenceService::metrics() const {
  ServiceMetrics m;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    m = metrics_;
    m.waiting = static_cast<int32_t>(queue_.size()) + blocked_count_;
    m.running = held_ - blocked_count_;
    m.kv_blocks_used = kv_.used;
    m.kv_blocks_cached = kv_.cached;
    m.kv_blocks_free = m.kv_blocks_total - kv_.used - kv_.cached;
    m.kv_evictions = kv_.evictions;
    m.kv_fragmentation = kv_.fragmentation;
    m.paused = paused_;
    m.paused_idle = paused_idle_;
  }
  const ProcessMemory pm = read_process_memory();
  m.rss_bytes = pm.rss_bytes;
  m.peak_rss_bytes = pm.peak_bytes;
  // The Context's parameters are fixed at construction and its placement log is thread-safe.
  const ContextParams& cp = ctx_->params();
  m.n_threads = cp.n_threads;
  m.n_threads_batch = cp.n_threads_batch;
  m.decode_placement = cp.placement.to_string();
  m.prefill_placement = cp.placement_batch.to_string();
  const PlacementLog::Snapshot pl = ctx_->placement_log();
  m.thread_affinity_failed = pl.affinity_failed;
  m.thread_priority_denied = pl.nice_denied;
  m.thread_note = pl.note;
  return m;
}

void InferenceService::shutdown() {
  if (on_scheduler_thread()) {
    throw Error(ErrorCode::kInvalidArgument,
                "the service cannot be shut down from its own callback (it would wait for itself)");
  }
  std::lock_guard<std::mutex> once(shutdown_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    interrupt_.store(true, std::memory_order_relaxed);
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

}  // namespace edgellm
