#include "service/embedding_service.h"

#include <algorithm>
#include <deque>
#include <exception>
#include <utility>

#include "core/log.h"
#include "engine/pooling.h"
#include "platform/elapsed_ms.h"
#include "platform/memory_stats.h"
#include "tokenizer/tokenizer.h"

namespace edgellm {

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

struct EmbeddingService::Live {
  RequestId id = 0;
  EmbeddingRequest req;
  Clock::time_point submitted;
  Clock::time_point deadline = Clock::time_point::max();
  Clock::time_point admitted;
  std::vector<EmbedInput> inputs;  // tokenized at admission
  std::vector<size_t> offsets;     // each input's first float in `out`
  std::vector<float> out;          // every output, in input order
  size_t next = 0;                 // inputs handed to forwards that completed
  int64_t pending_tokens = 0;      // tokens of inputs [next, end)
  PoolingType pooling = PoolingType::kUnspecified;
  EmbeddingResult result;
};

std::unique_ptr<EmbeddingService> EmbeddingService::open(const std::string& model_path,
                                                         const EmbeddingServiceParams& params) {
  std::shared_ptr<const Model> model = Model::load(model_path, params.load);
  return std::make_unique<EmbeddingService>(std::move(model), params);
}

EmbeddingService::EmbeddingService(std::shared_ptr<const Model> model, const EmbeddingServiceParams& params)
    : params_(params), model_(std::move(model)), queue_(static_cast<size_t>(std::max(0, params.max_queued)) + 1) {
  require(model_ != nullptr, ErrorCode::kInvalidArgument, "embedding service: no model");
  require(params_.max_queued >= 0 && params_.max_queued <= 1 << 16, ErrorCode::kInvalidArgument,
          "embedding service: max_queued " + std::to_string(params_.max_queued) + " is outside [0, 65536]");
  tokenizer_ = Tokenizer::from_gguf(model_->gguf());
  require(tokenizer_->n_vocab() == model_->hparams().n_vocab, ErrorCode::kInvalidFile,
          "embedding service: the vocabulary has " + std::to_string(tokenizer_->n_vocab()) + " tokens but the model " +
              std::to_string(model_->hparams().n_vocab));
  embedder_ = std::make_unique<Embedder>(*model_, params_.embedder);
  embedder_->set_abort_check(AbortCheck{&EmbeddingService::abort_check, this});
  n_ctx_ = embedder_->n_ctx();
  n_batch_ = embedder_->n_batch();
  n_seq_max_ = embedder_->n_seq_max();
  metrics_.max_queued = params_.max_queued;
  metrics_.n_batch = n_batch_;
  metrics_.n_ctx = n_ctx_;
  metrics_.dims = model_->hparams().n_embd;
  thread_ = std::thread([this] { run(); });
  log_message(LogLevel::kInfo, "embedding service: started (" + model_->hparams().arch + ", inputs of up to " +
                                   std::to_string(n_ctx_) + " tokens, " + std::to_string(n_batch_) +
                                   " tokens per forward, pooling " + pooling_type_name(default_pooling()) +
                                   (can_rerank() ? ", reranker" : "") + ", queue " +
                                   std::to_string(params_.max_queued) + ")");
}

EmbeddingService::~EmbeddingService() {
  try {
    shutdown();
  } catch (...) {
    if (thread_.joinable()) thread_.detach();  // destroyed from its own callback: cannot join itself
  }
}

int32_t EmbeddingService::dims() const {
  return model_->hparams().n_embd;
}
PoolingType EmbeddingService::default_pooling() const {
  return resolve_pooling(model_->hparams(), PoolingType::kUnspecified);
}
bool EmbeddingService::can_rerank() const {
  return model_->cls_out().present();
}

bool EmbeddingService::abort_check(void* self) {
  auto* s = static_cast<EmbeddingService*>(self);
  return s->interrupt_.load(std::memory_order_relaxed) || Clock::now() >= s->step_deadline_;
}

RequestId EmbeddingService::submit(EmbeddingRequest request) {
  auto r = std::make_unique<Live>();
  r->submitted = Clock::now();
  try {
    (void)check_embedding_request(request, model_->hparams().n_vocab, params_.input_policy);
    if (request.task == EmbeddingTask::kRerank) {
      require(can_rerank(), ErrorCode::kUnsupported,
              "rerank: this model has no classification head (cls.output): load a reranker (a cross-encoder)");
    }
  } catch (const Error&) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++metrics_.invalid_requests;
    throw;
  }
  if (request.deadline_ms > 0) r->deadline = r->submitted + std::chrono::milliseconds(request.deadline_ms);
  const Priority priority = request.priority;
  r->req = std::move(request);
  RequestId id = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) throw Error(ErrorCode::kCancelled, "the embedding service is shut down");
    // The queue holds the next request to be admitted plus up to max_queued more.
    if (static_cast<int64_t>(queue_.size()) > params_.max_queued) {
      ++metrics_.busy_rejections;
      throw Error(ErrorCode::kBusy, "busy: " + std::to_string(params_.max_queued) +
                                        " embedding requests are already waiting; try again later");
    }
    id = next_id_++;
    r->id = id;
    live_.emplace(id, Where::kQueued);
    if (!queue_.push(priority, r)) {
      live_.erase(id);
      ++metrics_.busy_rejections;
      throw Error(ErrorCode::kBusy, "busy: the embedding queue is full; try again later");
    }
    ++metrics_.requests_submitted;
  }
  wake_.notify_one();
  return id;
}

bool EmbeddingService::cancel(RequestId id) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(id);
    if (it == live_.end()) return false;
    if (it->second == Where::kQueued) {
      for (auto& r : queue_.remove_if([id](const Live& r) { return r.id == id; })) {
        cancelled_queued_.push_back(std::move(r));
      }
      it->second = Where::kScheduler;
    } else {
      cancels_.push_back(id);
      interrupt_.store(true, std::memory_order_relaxed);
    }
  }
  wake_.notify_one();
  return true;
}

void EmbeddingService::pause() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    paused_ = true;
    interrupt_.store(true, std::memory_order_relaxed);
  }
  wake_.notify_one();
}

void EmbeddingService::resume() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    paused_ = false;
  }
  wake_.notify_one();
}

bool EmbeddingService::paused() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return paused_;
}

void EmbeddingService::trim(std::function<void(size_t)> done) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    trims_.push_back(done ? std::move(done) : [](size_t) {});
  }
  wake_.notify_one();
}

void EmbeddingService::warmup(std::function<void(bool, const std::string&)> done) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    warmups_.push_back(done ? std::move(done) : [](bool, const std::string&) {});
  }
  wake_.notify_one();
}

EmbeddingMetrics EmbeddingService::metrics() const {
  EmbeddingMetrics m;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    m = metrics_;
    m.waiting = static_cast<int32_t>(queue_.size());
    m.running = running_count_;
    m.paused = paused_;
  }
  const ProcessMemory pm = read_process_memory();
  m.rss_bytes = pm.rss_bytes;
  m.peak_rss_bytes = pm.peak_bytes;
  return m;
}

void EmbeddingService::shutdown() {
  if (on_scheduler_thread()) {
    throw Error(ErrorCode::kInvalidArgument,
                "the embedding service cannot be shut down from its own callback (it would wait for itself)");
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

Clock::time_point EmbeddingService::next_deadline_locked() const {
  Clock::time_point t = Clock::time_point::max();
  queue_.for_each([&](const Live& r) { t = std::min(t, r.deadline); });
  for (const auto& r : running_) t = std::min(t, r->deadline);
  return t;
}

bool EmbeddingService::has_work_locked(Clock::time_point now) const {
  if (stopping_ || !cancels_.empty() || !cancelled_queued_.empty() || !trims_.empty()) return true;
  if (next_deadline_locked() <= now) return true;
  if (paused_) return false;
  return !running_.empty() || !warmups_.empty() || !queue_.empty();
}

void EmbeddingService::publish_gauges() {
  std::lock_guard<std::mutex> lock(mutex_);
  running_count_ = static_cast<int32_t>(running_.size());
}

void EmbeddingService::run() {
  thread_id_.store(std::this_thread::get_id());
  for (;;) {
    std::vector<RequestId> cancels;
    std::vector<std::unique_ptr<Live>> cancelled_queued;
    std::deque<std::unique_ptr<Live>> expired_queued;
    std::vector<std::function<void(size_t)>> trims;
    std::vector<std::function<void(bool, const std::string&)>> warmups;
    bool stop = false, paused = false;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      for (;;) {
        if (has_work_locked(Clock::now())) break;
        const Clock::time_point wake_at = next_deadline_locked();
        if (wake_at == Clock::time_point::max()) {
          wake_.wait(lock);
        } else {
          wake_.wait_until(lock, wake_at);
        }
      }
      // What can interrupt a forward is consumed here; the flag is re-armed only by later events.
      interrupt_.store(false, std::memory_order_relaxed);
      stop = stopping_;
      paused = paused_;
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
    for (auto& r : expired_queued) finish(std::move(r), stop ? FinishReason::kCancelled : FinishReason::kTimeout);
    for (size_t i = running_.size(); i-- > 0;) {
      const Live& r = *running_[i];
      const bool cancelled = stop || std::find(cancels.begin(), cancels.end(), r.id) != cancels.end();
      if (cancelled || r.deadline <= now) {
        std::unique_ptr<Live> done = std::move(running_[i]);
        running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(i));
        finish(std::move(done), cancelled ? FinishReason::kCancelled : FinishReason::kTimeout);
      }
    }
    for (auto& done : trims) {
      const size_t bytes = embedder_->trim();
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ++metrics_.trims;
        metrics_.trimmed_bytes += bytes;
      }
      log_message(LogLevel::kInfo, "embedding service: trim released " + std::to_string(bytes >> 10) + " KiB");
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

void EmbeddingService::run_warmups(std::vector<std::function<void(bool, const std::string&)>>& waiters) {
  if (waiters.empty()) return;
  bool ran = false;
  std::string why;
  const size_t available = available_memory_bytes();
  if (!running_.empty()) {
    why = "requests are already running (the model is warm)";
  } else if (available != 0 && available < params_.warmup_min_free_bytes) {
    why = "only " + std::to_string(available >> 20) + " MiB of memory available, below the warm-up threshold of " +
          std::to_string(params_.warmup_min_free_bytes >> 20) + " MiB";
  } else {
    step_deadline_ = Clock::time_point::max();
    try {
      const EmbedInput in =
          text_input(*tokenizer_, "warm up the embedding model", std::min(n_ctx_, 8), Truncation::kEnd);
      std::vector<float> out;
      const PoolingType p = default_pooling() == PoolingType::kRank ? PoolingType::kMean : default_pooling();
      embedder_->embed({in}, p, 2, out);
      ran = true;
    } catch (const std::exception& e) {
      why = std::string("the warm-up forward failed: ") + e.what();
    }
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    metrics_.warmups += ran ? waiters.size() : 0;
    metrics_.warmups_skipped += ran ? 0 : waiters.size();
  }
  for (auto& done : waiters) done(ran, why);
}

bool EmbeddingService::prepare(Live& r) {
  try {
    const EmbeddingRequest& q = r.req;
    EmbeddingResult& res = r.result;
    res.task = q.task;
    const auto add = [&](EmbedInput in, bool cut) {
      res.input_tokens.push_back(static_cast<int32_t>(in.tokens.size()));
      res.truncated.push_back(cut ? 1 : 0);
      res.prompt_tokens += static_cast<int64_t>(in.tokens.size());
      r.pending_tokens += static_cast<int64_t>(in.tokens.size());
      r.inputs.push_back(std::move(in));
    };
    bool cut = false;
    if (q.task == EmbeddingTask::kRerank) {
      r.pooling = PoolingType::kRank;
      for (const std::string& doc : q.documents) {
        EmbedInput in = pair_input(*tokenizer_, q.query, doc, n_ctx_, q.truncation, &cut);
        add(std::move(in), cut);
      }
    } else {
      r.pooling = resolve_pooling(model_->hparams(), q.pooling);
      for (const std::string& text : q.texts) {
        EmbedInput in = text_input(*tokenizer_, text, n_ctx_, q.truncation, &cut);
        add(std::move(in), cut);
      }
      for (const std::vector<int32_t>& tokens : q.token_inputs) {
        EmbedInput in = token_input(tokens, n_ctx_, q.truncation, &cut);
        add(std::move(in), cut);
      }
    }
    res.pooling = r.pooling;
    res.dims = q.task == EmbeddingTask::kRerank ? 0 : model_->hparams().n_embd;
    size_t floats = 0;
    for (const EmbedInput& in : r.inputs) {
      r.offsets.push_back(floats);
      floats += embedder_->output_floats(in, r.pooling);
    }
    r.out.assign(floats, 0.0f);
    std::vector<std::string>().swap(r.req.texts);  // the tokens are what runs now
    std::vector<std::vector<int32_t>>().swap(r.req.token_inputs);
    std::vector<std::string>().swap(r.req.documents);
    return true;
  } catch (const Error& e) {
    r.result.error_code = e.code();
    r.result.error = e.what();
    return false;
  } catch (const std::exception& e) {
    r.result.error_code = ErrorCode::kInternal;
    r.result.error = e.what();
    return false;
  }
}

void EmbeddingService::admit() {
  int64_t pending = 0;
  for (const auto& r : running_) pending += r->pending_tokens;
  while (pending < n_batch_) {
    std::unique_ptr<Live> r;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (queue_.empty()) return;
      r = queue_.pop();
      live_[r->id] = Where::kScheduler;
      ++running_count_;  // held from here, so metrics never see it neither waiting nor running
    }
    r->admitted = Clock::now();
    if (!prepare(*r)) {
      const ErrorCode code = r->result.error_code;
      const std::string why = r->result.error;
      log_message(LogLevel::kWarn, "embedding service: request " + std::to_string(r->id) + " refused: " + why);
      finish(std::move(r), FinishReason::kError, code, why);
      continue;
    }
    pending += r->pending_tokens;
    running_.push_back(std::move(r));
  }
}

void EmbeddingService::step() {
  // The next inputs in admission order (interactive requests were admitted first), up to one
  // forward's worth of tokens and sequences.
  struct Part {
    Live* r;
    size_t count;  // inputs of r in this forward, from r->next
  };
  std::vector<Part> parts;
  std::vector<Embedder::Job> jobs;
  int64_t tokens = 0;
  Clock::time_point deadline = Clock::time_point::max();
  bool full = false;
  for (auto& rp : running_) {
    Live& r = *rp;
    size_t k = r.next;
    while (k < r.inputs.size()) {
      const auto n = static_cast<int64_t>(r.inputs[k].tokens.size());
      if (!jobs.empty() && (tokens + n > n_batch_ || static_cast<int32_t>(jobs.size()) >= n_seq_max_)) {
        full = true;
        break;
      }
      jobs.push_back({&r.inputs[k], r.pooling, r.req.normalize, r.out.data() + r.offsets[k]});
      tokens += n;
      ++k;
    }
    if (k > r.next) {
      parts.push_back({&r, k - r.next});
      deadline = std::min(deadline, r.deadline);
    }
    if (full) break;
  }
  if (jobs.empty()) return;

  step_deadline_ = deadline;
  const Clock::time_point t0 = Clock::now();
  try {
    embedder_->run(jobs.data(), jobs.size());
  } catch (const Error& e) {
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (e.code() == ErrorCode::kCancelled) {  // abandoned between layers: housekeeping decides
      std::lock_guard<std::mutex> lock(mutex_);
      ++metrics_.aborted_forwards;
      metrics_.forward_seconds += seconds;
      return;
    }
    log_message(LogLevel::kError, std::string("embedding service: forward failed: ") + e.what());
    for (size_t i = running_.size(); i-- > 0;) {
      const Live* r = running_[i].get();
      if (std::none_of(parts.begin(), parts.end(), [&](const Part& p) { return p.r == r; })) continue;
      std::unique_ptr<Live> done = std::move(running_[i]);
      running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(i));
      finish(std::move(done), FinishReason::kError, e.code(), e.what());
    }
    return;
  } catch (const std::exception& e) {
    log_message(LogLevel::kError, std::string("embedding service: forward failed: ") + e.what());
    while (!running_.empty()) {
      std::unique_ptr<Live> done = std::move(running_.back());
      running_.pop_back();
      finish(std::move(done), FinishReason::kError, ErrorCode::kInternal, e.what());
    }
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++metrics_.forwards;
    metrics_.forward_tokens += static_cast<uint64_t>(tokens);
    metrics_.forward_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
  }
  for (const Part& p : parts) {
    p.r->next += p.count;
    for (size_t k = p.r->next - p.count; k < p.r->next; ++k) {
      p.r->pending_tokens -= static_cast<int64_t>(p.r->inputs[k].tokens.size());
    }
    ++p.r->result.forwards;
  }
  for (size_t i = running_.size(); i-- > 0;) {
    if (running_[i]->next < running_[i]->inputs.size()) continue;
    std::unique_ptr<Live> done = std::move(running_[i]);
    running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(i));
    finish(std::move(done), FinishReason::kStop);
  }
}

void EmbeddingService::finish(std::unique_ptr<Live> r, FinishReason reason, ErrorCode code, const std::string& error) {
  if (!r) return;
  const Clock::time_point now = Clock::now();
  EmbeddingResult& res = r->result;
  res.id = r->id;
  res.finish_reason = reason;
  res.total_ms = ms_between(r->submitted, now);
  res.queue_ms = r->admitted != Clock::time_point{} ? ms_between(r->submitted, r->admitted) : res.total_ms;
  if (reason == FinishReason::kStop) {
    if (res.task == EmbeddingTask::kRerank) {
      const auto n_out = static_cast<size_t>(model_->hparams().n_cls_out);
      res.scores.reserve(r->inputs.size());
      for (size_t i = 0; i < r->inputs.size(); ++i) res.scores.push_back(r->out[i * n_out]);
    } else {
      res.vectors = std::move(r->out);
    }
  } else {
    res.error_code = code;
    if (reason == FinishReason::kError) res.error = error.empty() ? std::string("error") : error;
  }
  std::vector<float>().swap(r->out);
  std::vector<EmbedInput>().swap(r->inputs);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    live_.erase(r->id);
    metrics_.add_finished(res);
    running_count_ = static_cast<int32_t>(running_.size());
  }
  if (r->req.on_finish) {
    try {
      r->req.on_finish(res);
    } catch (const std::exception& e) {
      log_message(LogLevel::kError, std::string("embedding service: a finish callback threw: ") + e.what());
    } catch (...) {
      log_message(LogLevel::kError, "embedding service: a finish callback threw");
    }
  }
}

}  // namespace edgellm
