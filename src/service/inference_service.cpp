#include "service/inference_service.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <exception>
#include <limits>
#include <utility>

#include "chat/chat_prompt.h"
#include "core/log.h"
#include "engine/batch.h"
#include "engine/sampler.h"
#include "generation/chat_session.h"
#include "generation/sequence_generator.h"
#include "grammar/compiled_grammar.h"
#include "kv/kv_cache.h"
#include "kv/session_file.h"
#include "platform/elapsed_ms.h"
#include "platform/memory_stats.h"
#include "service/request_grammar.h"
#include "service/live_request.h"
#include "service/request_limits.h"
#include "service/sequence_speculation.h"
#include "tokenizer/tokenizer.h"

namespace edgellm {

namespace {

constexpr int32_t kWarmupTokens = 8;

}  // namespace


std::unique_ptr<InferenceService> InferenceService::open(const std::string& model_path, const ServiceParams& params) {
  std::shared_ptr<const Model> model = Model::load(model_path, params.load);
  return std::make_unique<InferenceService>(std::move(model), params);
}

InferenceService::InferenceService(std::shared_ptr<const Model> model, const ServiceParams& params)
    : params_(params), model_(std::move(model)), queue_(static_cast<size_t>(std::max(0, params.max_queued)) + static_cast<size_t>(std::max(1, params.context.n_seq_max))) {
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
  ctx_ = std::make_unique<Context>(*model_, cp);
  ctx_params_ = ctx_->params();
  fingerprint_ = ctx_->model_fingerprint();
  kv_params_ = std::make_unique<const KvCacheParams>(ctx_->kv_cache().params());
  ctx_->set_abort_check(AbortCheck{&InferenceService::abort_check, this});
  for (int32_t s = ctx_params_.n_seq_max - 1; s >= 0; --s) free_seqs_.push_back(s);
  metrics_.max_queued = params_.max_queued;
  metrics_.n_parallel = ctx_params_.n_seq_max;
  metrics_.kv_blocks_total = ctx_->kv_blocks_total();
  metrics_.kv_block_tokens = ctx_params_.kv_block_tokens;
  metrics_.kv_pool_bytes = ctx_->kv_cache().pool().total_bytes();
  thread_ = std::thread([this] { run(); });
  log_message(LogLevel::kInfo, "service: started (" + std::to_string(ctx_params_.n_seq_max) + " sequences of " +
                                   std::to_string(ctx_params_.n_ctx) + " positions, " +
                                   std::to_string(ctx_->kv_blocks_total()) + " KV blocks, queue " +
                                   std::to_string(params_.max_queued) + ", chat template " + description + ")");
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
    r->spec_off_reason = check_speculation(request);
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

// ------------------------------------------------------------------------ scheduler thread

Clock::time_point InferenceService::next_deadline_locked() const {
  Clock::time_point t = Clock::time_point::max();
  queue_.for_each([&](const Live& r) { t = std::min(t, r.deadline); });
  for (const auto& r : running_) t = std::min(t, r->deadline);
  if (blocked_) t = std::min(t, blocked_->deadline);
  return t;
}

bool InferenceService::has_work_locked(Clock::time_point now) const {
  if (stopping_ || !cancels_.empty() || !cancelled_queued_.empty() || !trims_.empty()) return true;
  if (next_deadline_locked() <= now) return true;
  if (paused_) return false;
  if (!running_.empty() || !warmups_.empty() || blocked_ != nullptr) return true;
  return !queue_.empty() && !free_seqs_.empty();
}

void InferenceService::run() {
  thread_id_.store(std::this_thread::get_id());
  for (;;) {
    std::vector<RequestId> cancels;
    std::vector<std::unique_ptr<Live>> cancelled_queued;
    std::deque<std::unique_ptr<Live>> expired_queued;
    std::vector<std::function<void(size_t)>> trims;
    std::vector<std::function<void(bool, const std::string&)>> warmups;
    bool stop = false;
    bool paused = false;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      for (;;) {
        const Clock::time_point now = Clock::now();
        if (has_work_locked(now)) break;
        paused_idle_ = paused_;  // between steps with nothing to do: paused, nothing runs until resume()
        const Clock::time_point wake_at = next_deadline_locked();
        if (wake_at == Clock::time_point::max()) {
          wake_.wait(lock);
        } else {
          wake_.wait_until(lock, wake_at);
        }
      }
      // Everything that can interrupt a forward is consumed here, so the flag is re-armed only
      // by what arrives after this point.
      interrupt_.store(false, std::memory_order_relaxed);
      stop = stopping_;
      paused = paused_;
      paused_idle_ = paused;  // this pass does housekeeping only when paused: no step
      cancels.swap(cancels_);
      cancelled_queued.swap(cancelled_queued_);
      trims.swap(trims_);
      if (!paused || stop) warmups.swap(warmups_);
      const Clock::time_point now = Clock::now();
      expired_queued = queue_.remove_if([&](const Live& r) { return stop || r.deadline <= now; });
      for (auto& r : expired_queued) live_[r->id] = Where::kScheduler;
    }

    for (auto& r : cancelled_queued) finish(std::move(r), FinishReason::kCancelled);
    const Clock::time_point now = Clock::now();
    for (auto& r : expired_queued) {
      finish(std::move(r), stop ? FinishReason::kCancelled : FinishReason::kTimeout);
    }
    // Cancellations and deadlines of the requests the scheduler holds.
    auto cancelled = [&](RequestId id) { return std::find(cancels.begin(), cancels.end(), id) != cancels.end(); };
    if (blocked_ && (stop || cancelled(blocked_->id) || blocked_->deadline <= now)) {
      const FinishReason why = stop || cancelled(blocked_->id) ? FinishReason::kCancelled : FinishReason::kTimeout;
      finish(std::move(blocked_), why);
    }
    for (size_t i = running_.size(); i-- > 0;) {
      Live& r = *running_[i];
      if (stop || cancelled(r.id)) {
        finish_running(i, FinishReason::kCancelled);
      } else if (r.deadline <= now) {
        finish_running(i, FinishReason::kTimeout);
      }
    }
    for (auto& done : trims) {
      const size_t bytes = ctx_->trim();
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ++metrics_.trims;
        metrics_.trimmed_bytes += bytes;
      }
      log_message(LogLevel::kInfo, "service: trim released " + std::to_string(bytes >> 10) + " KiB");
      done(bytes);
    }
    if (stop) {
      for (auto& done : warmups) done(false, "the service is shutting down");
      publish_gauges();
      return;
    }
    run_warmups(warmups);
    if (paused) {
      publish_gauges();
      continue;
    }
    admit();
    publish_gauges();
    if (!running_.empty()) step();
  }
}

InferenceService::KvGauges InferenceService::kv_gauges() const {
  KvGauges g;
  const KvCache& kv = ctx_->kv_cache();
  g.used = kv.pool().n_in_use();
  g.cached = kv.pool().n_cached();
  g.evictions = kv.pool().evictions();
  int64_t slots = 0;
  int64_t held = 0;
  for (const auto& r : running_) {
    slots += static_cast<int64_t>(kv.block_table(r->seq).size()) * ctx_params_.kv_block_tokens;
    held += kv.seq_length(r->seq);
  }
  g.fragmentation = slots > 0 ? static_cast<double>(slots - held) / static_cast<double>(slots) : 0.0;
  return g;
}

void InferenceService::publish_gauges() {
  const KvGauges kv = kv_gauges();
  std::lock_guard<std::mutex> lock(mutex_);
  set_gauges_locked(kv);
}

void InferenceService::set_gauges_locked(const KvGauges& kv) {
  held_ = static_cast<int32_t>(running_.size()) + (blocked_ ? 1 : 0);
  blocked_count_ = blocked_ ? 1 : 0;
  kv_ = kv;
}

void InferenceService::run_warmups(std::vector<std::function<void(bool, const std::string&)>>& waiters) {
  if (waiters.empty()) return;
  bool ran = false;
  std::string why;
  const size_t available = available_memory_bytes();
  if (!running_.empty() || blocked_ || free_seqs_.empty()) {
    why = "requests are already running (the model is warm)";
  } else if (available != 0 && available < params_.warmup_min_free_bytes) {
    why = "only " + std::to_string(available >> 20) + " MiB of memory available, below the warm-up threshold of " +
          std::to_string(params_.warmup_min_free_bytes >> 20) + " MiB";
  } else {
    const int32_t seq = free_seqs_.back();
    const int32_t n = std::min<int32_t>(kWarmupTokens, ctx_params_.n_ctx);
    const int32_t token = tokenizer_->bos() >= 0 ? tokenizer_->bos() : 0;
    Batch batch;
    for (int32_t i = 0; i < n; ++i) batch.add(seq, token, i, i + 1 == n);
    step_deadline_ = Clock::time_point::max();
    try {
      ctx_->decode(batch);
      ran = true;
    } catch (const std::exception& e) {
      why = std::string("the warm-up forward failed: ") + e.what();
    }
    ctx_->seq_clear(seq);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    metrics_.warmups += ran ? waiters.size() : 0;
    metrics_.warmups_skipped += ran ? 0 : waiters.size();
  }
  log_message(ran ? LogLevel::kInfo : LogLevel::kWarn, ran ? "service: warm-up done" : "service: warm-up skipped: " + why);
  for (auto& done : waiters) done(ran, why);
}

bool InferenceService::prepare(Live& r) {
  // Tokenize (once: a request blocked on KV keeps its ids) and check that it can ever fit.
  try {
    if (!r.prepared) {
      std::vector<std::string> stop = r.req.generation.stop;
      if (!r.req.tokens.empty()) {
        r.prompt = r.req.tokens;
      } else if (!r.req.messages.is_null()) {
        Json extra = Json::object();
        if (!r.req.tools.is_null()) extra.set("tools", r.req.tools);
        r.prompt = chat_prompt_tokens(*template_, *tokenizer_, r.req.messages, extra);
        stop = chat_stop_strings(*template_, *tokenizer_, std::move(stop));
      } else {
        r.prompt = tokenizer_->encode(r.req.prompt, r.req.add_special, r.req.parse_special);
      }
      r.req.generation.stop = std::move(stop);
      r.prepared = true;
    }
    const int64_t n_ctx = ctx_params_.n_ctx;
    const int64_t n_prompt = static_cast<int64_t>(r.prompt.size());
    if (n_prompt == 0) throw Error(ErrorCode::kInvalidArgument, "the prompt tokenizes to no tokens");
    if (n_prompt >= n_ctx) {
      throw Error(ErrorCode::kContextFull, "the prompt has " + std::to_string(n_prompt) +
                                               " tokens; the context holds " + std::to_string(n_ctx) +
                                               " positions and the answer needs at least one");
    }
    const int64_t answer = r.req.generation.max_tokens < 0 ? n_ctx : r.req.generation.max_tokens;
    r.reserved_blocks = ctx_->kv_blocks_for(std::min<int64_t>(n_ctx, n_prompt + answer));
    if (r.reserved_blocks > ctx_->kv_blocks_total()) {
      throw Error(ErrorCode::kOutOfMemory, "out of KV memory: the request needs " + std::to_string(r.reserved_blocks) +
                                               " KV blocks (prompt + max_tokens); the whole pool has " +
                                               std::to_string(ctx_->kv_blocks_total()) +
                                               " (lower max_tokens or raise the KV budget)");
    }
    return true;
  } catch (const Error& e) {
    r.error_code = e.code();
    r.error_message = e.what();
    log_message(LogLevel::kWarn, "service: request " + std::to_string(r.id) + " refused: " + e.what());
    return false;
  } catch (const std::exception& e) {
    r.error_code = ErrorCode::kInternal;
    r.error_message = e.what();
    log_message(LogLevel::kError, "service: request " + std::to_string(r.id) + " failed to start: " + e.what());
    return false;
  }
}

void InferenceService::admit() {
  for (;;) {
    if (free_seqs_.empty()) return;
    std::unique_ptr<Live> r = std::move(blocked_);
    if (!r) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (queue_.empty()) return;
      r = queue_.pop();
      live_[r->id] = Where::kScheduler;
      ++held_;  // counted as held from here, so submit() never sees it neither queued nor held
    }
    if (!prepare(*r)) {
      const ErrorCode code = r->error_code;
      const std::string why = std::move(r->error_message);
      finish(std::move(r), FinishReason::kError, code, why);
      continue;
    }
    const int32_t seq = free_seqs_.back();
    const int64_t total = ctx_->kv_blocks_total();
    // A session's positions are new blocks: checked before they are loaded, with no credit.
    const bool with_session = !r->req.session_in.empty();
    if (with_session && (finished_requests_ < blocked_retry_after_ || committed_blocks() + r->reserved_blocks > total)) {
      blocked_retry_after_ = finished_requests_ + 1;
      blocked_ = std::move(r);  // waits for running requests to release their blocks
      return;
    }
    try {
      if (with_session) ctx_->load_session(seq, r->req.session_in, &r->prompt);  // the saved positions that start the prompt
      r->cached_tokens = ctx_->seq_reuse_prefix(seq, r->prompt, static_cast<int32_t>(r->prompt.size()) - 1);
    } catch (const Error& e) {
      ctx_->seq_clear(seq);
      const ErrorCode code = e.code();
      const std::string why = e.what();
      finish(std::move(r), FinishReason::kError, code, why);
      continue;
    }
    // The prefix is mapped (no block allocated): count what every sequence, this one included,
    // may still take. Blocks shared with running requests are counted once, so requests with a
    // common system prompt run side by side where their full reservations would not fit.
    r->seq = seq;
    if (committed_blocks(r.get()) > total) {
      r->seq = -1;
      ctx_->seq_clear(seq);  // the mapped blocks go back to the cache
      blocked_retry_after_ = finished_requests_ + 1;
      blocked_ = std::move(r);  // waits for running requests to release their blocks
      return;
    }
    try {
      // Built once the request is admitted: it feeds the prompt to the sampler's penalty window.
      // The generator sees the whole prompt; the prefix the KV cache already holds (full blocks
      // of earlier requests) counts as prefilled.
      r->gen = std::make_unique<SequenceGenerator>(*r->sampler, tokenizer_.get(), model_->hparams().n_vocab,
                                                   ctx_params_.n_ctx, 0, r->prompt, r->req.generation);
      r->gen->prefill_advanced(r->cached_tokens);
    } catch (const Error& e) {
      r->seq = -1;
      ctx_->seq_clear(seq);
      const ErrorCode code = e.code();
      const std::string why = e.what();
      finish(std::move(r), FinishReason::kError, code, why);
      continue;
    }
    if (r->req.generation.speculation.mode == SpeculationMode::kNgram && r->spec_off_reason.empty()) {
      r->spec = std::make_unique<SequenceSpeculation>(r->req.generation.speculation);
      r->spec->append(r->prompt);
    }
    if (with_session) std::string().swap(r->req.session_in);
    free_seqs_.pop_back();
    r->admitted = Clock::now();
    running_.push_back(std::move(r));
    publish_gauges();
  }
}

int64_t InferenceService::committed_blocks(const Live* candidate) const {
  // Two upper bounds on the blocks the running sequences can ever hold at once; the smaller
  // one counts (each holds from any state, so admitting against the smaller never overcommits).
  // 1. Their reservations: every block in use is in some table, and a table never exceeds its
  //    reservation (prompt + max_tokens, at most n_ctx, in blocks).
  // 2. Sharing kept: the blocks in use now, each once however many tables hold it, plus
  //    - growth: blocks each table may still gain, up to its reservation;
  //    - copies: blocks a sequence copies without growing its table. A shared partial last
  //      block is copied on its next write (a prompt that ends on a block boundary maps that
  //      block and recomputes its last position). A context shift copies the shared blocks it
  //      moves rows into (kv_cache.h, seq_drop): a block with r references, s of them from
  //      context-shift sequences, yields at most min(s, r - 1) copies (the last holder copies
  //      nothing).
  //    Requests with a common system prompt then run side by side where their reservations
  //    alone would not fit.
  const KvCache& kv = ctx_->kv_cache();
  const BlockPool& pool = kv.pool();
  const int32_t T = kv.params().block_tokens;
  int64_t reserved = 0;
  int64_t sharing = pool.n_in_use();
  std::vector<int32_t> shift_shared;  // shared blocks in context-shift tables, once per table
  const auto count = [&](const Live& r) {
    reserved += r.reserved_blocks;
    const std::vector<int32_t>& table = kv.block_table(r.seq);
    sharing += std::max<int64_t>(0, r.reserved_blocks - static_cast<int64_t>(table.size()));
    if (table.empty()) return;
    if (r.req.generation.context_shift) {
      for (const int32_t b : table) {
        if (pool.refcount(b) > 1) shift_shared.push_back(b);
      }
    } else if (kv.seq_length(r.seq) % T != 0 && pool.refcount(table.back()) > 1) {
      sharing += 1;
    }
  };
  for (const auto& rp : running_) count(*rp);
  if (candidate != nullptr) count(*candidate);
  std::sort(shift_shared.begin(), shift_shared.end());
  for (size_t i = 0; i < shift_shared.size();) {
    size_t j = i;
    while (j < shift_shared.size() && shift_shared[j] == shift_shared[i]) ++j;
    sharing += std::min<int64_t>(static_cast<int64_t>(j - i), pool.refcount(shift_shared[i]) - 1);
    i = j;
  }
  return std::min(reserved, sharing);
}

void InferenceService::finish_running(size_t index, FinishReason reason, ErrorCode code, const std::string& error) {
  std::unique_ptr<Live> r = std::move(running_[index]);
  running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(index));
  if (!r->gen->finished()) {
    const StepOutput out = r->gen->finish(reason, error);
    (void)deliver(*r, out);  // the text the filters held back, for length and timeout
  }
  r->error_code = code;
  finish(std::move(r), reason, code, error);
}

void InferenceService::finish(std::unique_ptr<Live> r, FinishReason reason, ErrorCode code, const std::string& error) {
  const Clock::time_point now = Clock::now();
  RequestResult res;
  res.id = r->id;
  res.finish_reason = reason;
  res.error_code = code;
  RequestStats& st = res.stats;
  st.sanitized_chars = static_cast<int32_t>(r->sanitized_chars);
  st.total_ms = ms_between(r->submitted, now);
  st.queue_ms = r->admitted != Clock::time_point{} ? ms_between(r->submitted, r->admitted) : st.total_ms;
  if (r->gen) {
    const GenerationResult& g = r->gen->result();
    res.finish_reason = g.finish_reason;
    res.text = g.text;
    res.stop_string = g.stop_string;
    st.prompt_tokens = g.timings.prompt_tokens;
    st.cached_tokens = r->cached_tokens;
    st.completion_tokens = static_cast<int32_t>(g.tokens.size());
    st.prefill_ms = g.timings.prefill_seconds * 1e3;
    st.decode_ms = g.timings.decode_seconds * 1e3;
    st.prefill_tokens_per_second =
        g.timings.prefill_seconds > 0 ? (st.prompt_tokens - st.cached_tokens) / g.timings.prefill_seconds : 0.0;
    st.decode_tokens_per_second = g.timings.decode_tokens_per_second();
    if (r->first_token != Clock::time_point{}) st.ttft_ms = ms_between(r->submitted, r->first_token);
  }
  st.speculation = r->spec_stats;
  st.speculation_off_reason = r->spec_off_reason;
  if (res.finish_reason == FinishReason::kError) res.error = error.empty() ? std::string("error") : error;
  if (r->seq >= 0) {
    if (r->req.session_out && res.finish_reason != FinishReason::kError) {
      try {
        res.session = ctx_->save_session(r->seq);
      } catch (const std::exception& e) {
        log_message(LogLevel::kError, std::string("service: saving the session failed: ") + e.what());
      }
    }
    st.kv_blocks = static_cast<int32_t>(ctx_->kv_cache().block_table(r->seq).size());
    ctx_->seq_clear(r->seq);
    free_seqs_.push_back(r->seq);
    ++finished_requests_;
    r->seq = -1;
  }
  st.peak_rss_bytes = read_process_memory().peak_bytes;
  const KvGauges kv = kv_gauges();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    live_.erase(r->id);
    metrics_.add_finished(res);
    set_gauges_locked(kv);  // a metrics() call from on_finish already sees this request gone
  }
  if (r->req.on_finish) {
    try {
      r->req.on_finish(res);
    } catch (const std::exception& e) {
      log_message(LogLevel::kError, std::string("service: a finish callback threw: ") + e.what());
    } catch (...) {
      log_message(LogLevel::kError, "service: a finish callback threw");
    }
  }
}

}  // namespace edgellm
