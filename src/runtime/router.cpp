#include "runtime/router.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <utility>

#include "core/error.h"
#include "core/log.h"

namespace edgellm {
namespace {

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

// Local failures the cloud may take over: the device, not the request, was the problem.
bool device_failure(ErrorCode code) {
  return code == ErrorCode::kContextFull || code == ErrorCode::kOutOfMemory || code == ErrorCode::kDegraded;
}

}  // namespace

// One routed request, from submit to its on_finish. Fields marked (lock) are shared with
// submit() / cancel() under mutex_; the rest belong to the router thread.
struct Router::Op {
  enum class Stage { kStarting, kLocal, kSummary, kCloud };
  uint64_t id = 0;
  ServiceRequest req;  // the caller's request and callbacks
  RouteMode mode = RouteMode::kAuto;
  RouterParams params;  // as they were at submit
  Clock::time_point start;

  Stage stage = Stage::kStarting;               // (lock)
  uint64_t inner = 0;                           // (lock) local / summary request in flight, 0 until known
  bool cancel_requested = false;                // (lock)
  bool finished = false;                        // (lock) on_finish delivered or being delivered
  uint64_t cloud_call = 0;                      // (lock) the call awaited (a late reply of another is dropped)
  Clock::time_point cloud_deadline = Clock::time_point::max();  // (lock)

  bool local_ran = false;       // a local result is in `local`
  bool local_ok = false;        // ... and it is an answer (not an error)
  RequestResult local;
  Confidence conf;
  bool scored = false;
  std::string reason;
  std::string tier;
  bool large_tried = false;
  Json cloud_messages;  // null until the summary (or its absence) decided them
};

struct Router::Event {
  enum class Kind { kStartCloud, kLocalDone, kSummaryDone, kCloudReply, kCancel, kWake } kind = Kind::kWake;
  std::shared_ptr<Op> op;
  RequestResult result;
  std::vector<float> probs;
  int32_t streamed = 0;
  uint64_t call = 0;
  CloudReply reply;
};

struct Router::Shared {
  std::mutex mutex;
  std::condition_variable wake;
  std::deque<Event> events;
};

Router::Router(Local local, RouterParams params)
    : local_(std::move(local)),
      shared_(std::make_shared<Shared>()),
      mutex_(shared_->mutex),
      wake_(shared_->wake),
      events_(shared_->events),
      params_(std::move(params)) {
  thread_ = std::thread([this] { run(); });
}

Router::~Router() { shutdown(); }

void Router::set_params(RouterParams params) {
  require(params.cloud_threshold >= 0 && params.cloud_threshold <= params.local_threshold &&
              params.local_threshold <= 1.0,
          ErrorCode::kInvalidArgument, "router: need 0 <= cloud_threshold <= local_threshold <= 1");
  require(params.verbatim_turns >= 1 && params.verbatim_turns <= 1000, ErrorCode::kInvalidArgument,
          "router: verbatim_turns must be in [1, 1000]");
  require(params.cloud_timeout_ms >= 1 && params.cloud_timeout_ms <= 600000, ErrorCode::kInvalidArgument,
          "router: cloud_timeout_ms must be in [1, 600000]");
  require(params.summary_max_tokens >= 1 && params.summary_max_tokens <= 4096, ErrorCode::kInvalidArgument,
          "router: summary_max_tokens must be in [1, 4096]");
  std::lock_guard<std::mutex> lock(mutex_);
  params_ = std::move(params);
}

RouterParams Router::params() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return params_;
}

RouterCounters Router::counters() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counters_;
}

uint64_t Router::submit(ServiceRequest request) {
  auto op = std::make_shared<Op>();
  op->mode = request.route;
  op->start = Clock::now();
  if (op->mode == RouteMode::kCloud) local_.validate(request);  // the local path checks the others
  // The cloud is a chat endpoint and holds no KV: raw prompts and session continuations are
  // answered here, with the cloud only as the failure fallback of a chat.
  if (request.messages.is_null()) {
    op->mode = RouteMode::kLocal;
    op->reason = "not a chat request";
  } else if (!request.session_id.empty() && op->mode != RouteMode::kLocal) {
    op->mode = RouteMode::kLocal;
    op->reason = "continues a session (the cloud holds none of its KV)";
  }
  op->req = std::move(request);
  op->id = local_.new_id();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    require(!stopping_, ErrorCode::kCancelled, "the runtime is shutting down");
    op->params = params_;
    ops_[op->id] = op;
  }
  if (op->mode == RouteMode::kCloud) {
    op->reason = "route is cloud";
    post(Event{Event::Kind::kStartCloud, op});
    return op->id;
  }
  try {
    start_local(op, op->mode == RouteMode::kLocal);
  } catch (const Error& e) {
    const bool take = e.code() == ErrorCode::kDegraded && op->params.cloud_on_failure &&
                      op->params.cloud_allowed() && !op->req.messages.is_null();
    if (!take) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ops_.erase(op->id);
      }
      wake_.notify_all();  // a shutdown may wait for ops_ to empty
      throw;
    }
    op->reason = std::string("the local model refused it (") + e.what() + ")";
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++counters_.failure_fallbacks;
    }
    post(Event{Event::Kind::kStartCloud, op});
  }
  return op->id;
}

// Submits the local run of `op` (its answer, or the fallback of a failed cloud call). Throws
// what the local path throws. Called on the submitting thread or the router thread.
void Router::start_local(const std::shared_ptr<Op>& op, bool stream) {
  // What the callbacks collect; handed to the router thread with the result.
  struct Collected {
    std::vector<float> probs;
    int32_t streamed = 0;
  };
  auto collected = std::make_shared<Collected>();
  ServiceRequest lr;
  lr.prompt = op->req.prompt;
  lr.messages = op->req.messages;
  lr.tokens = op->req.tokens;
  lr.add_special = op->req.add_special;
  lr.parse_special = op->req.parse_special;
  lr.sampling = op->req.sampling;
  lr.max_tokens = op->req.max_tokens;
  lr.stop = op->req.stop;
  lr.ignore_eog = op->req.ignore_eog;
  lr.context_shift = op->req.context_shift;
  lr.n_keep = op->req.n_keep;
  lr.deadline_ms = op->req.deadline_ms;
  lr.priority = op->req.priority;
  lr.session_in = op->req.session_in;
  lr.session_out = op->req.session_out;
  lr.session_id = op->req.session_id;
  lr.route = RouteMode::kOff;
  lr.token_probability = !stream;
  const uint64_t id = op->id;
  if (stream) {
    lr.on_token = [collected, id, user = op->req.on_token](const TokenEvent& e) {
      ++collected->streamed;
      if (!user) return true;
      TokenEvent mine = e;
      mine.id = id;
      return user(mine);
    };
  } else {
    lr.on_token = [collected](const TokenEvent& e) {
      if (e.token >= 0 && e.probability >= 0) collected->probs.push_back(e.probability);
      return true;
    };
  }
  lr.on_finish = [shared = shared_, op, collected](const RequestResult& r) {
    Event e{Event::Kind::kLocalDone, op};
    e.result = r;
    e.probs = std::move(collected->probs);
    e.streamed = collected->streamed;
    post_to(shared, std::move(e));
  };
  {
    std::lock_guard<std::mutex> lock(mutex_);
    op->stage = Op::Stage::kLocal;
    op->inner = 0;
  }
  const uint64_t inner = local_.submit(std::move(lr));
  bool cancel_now = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (op->stage == Op::Stage::kLocal && op->inner == 0) op->inner = inner;
    cancel_now = op->cancel_requested;
  }
  if (cancel_now) local_.cancel(inner);
}

bool Router::cancel(uint64_t id) {
  std::shared_ptr<Op> op;
  uint64_t inner = 0;
  bool waiting_for_cloud = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = ops_.find(id);
    if (it == ops_.end() || it->second->finished) return false;
    op = it->second;
    op->cancel_requested = true;
    inner = op->inner;
    waiting_for_cloud = op->stage == Op::Stage::kCloud || op->stage == Op::Stage::kStarting;
  }
  if (inner != 0 && !waiting_for_cloud) {
    local_.cancel(inner);  // its result comes back through the router thread
  } else if (waiting_for_cloud) {
    post(Event{Event::Kind::kCancel, op});
  }
  // else: start_local is still submitting; it cancels once it knows the id.
  return true;
}

void Router::shutdown() {
  std::lock_guard<std::mutex> once(shutdown_mutex_);
  std::vector<std::shared_ptr<Op>> local_ops;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
    for (auto& [id, op] : ops_) {
      op->cancel_requested = true;
      if (op->inner != 0 && (op->stage == Op::Stage::kLocal || op->stage == Op::Stage::kSummary)) local_ops.push_back(op);
    }
  }
  // Local runs end through the local runtime (cancelled), the rest on the router thread.
  for (const auto& op : local_ops) local_.cancel(op->inner);
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Router::post(Event e) { post_to(shared_, std::move(e)); }

void Router::post_to(const std::shared_ptr<Shared>& shared, Event e) {
  {
    std::lock_guard<std::mutex> lock(shared->mutex);
    shared->events.push_back(std::move(e));
  }
  shared->wake.notify_all();
}

void Router::run() {
  thread_id_.store(std::this_thread::get_id());
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    // The earliest cloud deadline among the calls awaited.
    Clock::time_point next = Clock::time_point::max();
    for (const auto& [id, op] : ops_) {
      if (op->stage == Op::Stage::kCloud && op->cloud_call != 0) next = std::min(next, op->cloud_deadline);
    }
    if (events_.empty()) {
      if (stopping_) {
        // Whatever is not running locally ends now; local runs end through their results.
        std::vector<std::shared_ptr<Op>> left;
        bool local_pending = false;
        for (const auto& [id, op] : ops_) {
          if (op->finished) continue;
          if (op->stage == Op::Stage::kLocal || op->stage == Op::Stage::kSummary) {
            local_pending = true;  // cancelled: its result comes (start_local cancels an id it learns late)
          } else {
            left.push_back(op);
          }
        }
        if (!left.empty()) {
          lock.unlock();
          for (const auto& op : left) finish_cancelled(op);
          lock.lock();
          continue;
        }
        if (!local_pending) return;
        wake_.wait(lock);
        continue;
      }
      if (next == Clock::time_point::max()) {
        wake_.wait(lock);
      } else {
        wake_.wait_until(lock, next);
      }
    }
    std::vector<Event> batch;
    while (!events_.empty()) {
      batch.push_back(std::move(events_.front()));
      events_.pop_front();
    }
    // Calls past their deadline.
    const Clock::time_point now = Clock::now();
    for (const auto& [id, op] : ops_) {
      if (op->stage == Op::Stage::kCloud && op->cloud_call != 0 && op->cloud_deadline <= now) {
        Event e{Event::Kind::kCloudReply, op};
        e.call = op->cloud_call;  // handle() clears it: a later reply of this call is dropped
        e.reply.error = "no answer within " + std::to_string(op->params.cloud_timeout_ms) + " ms";
        batch.push_back(std::move(e));
        op->cloud_deadline = Clock::time_point::max();
      }
    }
    lock.unlock();
    for (Event& e : batch) {
      try {
        handle(e);
      } catch (const std::exception& ex) {
        // A bug, not a request failure: the request still gets its on_finish.
        log_message(LogLevel::kError, std::string("router: ") + ex.what());
        RequestResult r;
        r.finish_reason = FinishReason::kError;
        r.error_code = ErrorCode::kInternal;
        r.error = std::string("router: ") + ex.what();
        if (e.op) deliver(e.op, std::move(r), false);
      }
    }
    lock.lock();
  }
}

void Router::handle(Event& e) {
  const std::shared_ptr<Op>& op = e.op;
  if (!op) return;
  bool finished = false, cancel_requested = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    finished = op->finished;
    cancel_requested = op->cancel_requested;
    if (e.kind == Event::Kind::kLocalDone || e.kind == Event::Kind::kSummaryDone) op->inner = 0;
    if (e.kind == Event::Kind::kCloudReply) {
      if (e.call == 0 || e.call != op->cloud_call) return;  // a reply to a call given up on
      op->cloud_call = 0;
      op->cloud_deadline = Clock::time_point::max();
    }
  }
  if (finished) return;
  switch (e.kind) {
    case Event::Kind::kStartCloud:
      if (cancel_requested) return finish_cancelled(op);
      if (!op->params.cloud_allowed()) {
        if (op->params.privacy) {
          std::lock_guard<std::mutex> lock(mutex_);
          ++counters_.privacy_blocks;
        }
        op->reason += op->params.privacy ? "; privacy mode: the cloud is never called" : "; no cloud configured";
        try {
          start_local(op, false);
        } catch (const Error& ex) {
          RequestResult r;
          r.finish_reason = FinishReason::kError;
          r.error_code = ex.code();
          r.error = ex.what();
          deliver(op, std::move(r), false);
        }
        return;
      }
      return go_cloud(op, "small");
    case Event::Kind::kLocalDone:
      return after_local(op, std::move(e.result), std::move(e.probs), e.streamed);
    case Event::Kind::kSummaryDone: {
      if (cancel_requested) return finish_cancelled(op);
      const ContextSplit split = split_context(op->req.messages, op->params.verbatim_turns);
      if (e.result.finish_reason == FinishReason::kError || e.result.text.empty()) {
        op->reason += "; the summary of older turns failed, only the recent turns were sent";
        op->cloud_messages = split.recent;
      } else {
        op->cloud_messages = with_summary(split.recent, e.result.text);
      }
      return call_cloud(op);
    }
    case Event::Kind::kCloudReply:
      if (cancel_requested) return finish_cancelled(op);
      return after_cloud(op, e.reply);
    case Event::Kind::kCancel:
      return finish_cancelled(op);
    case Event::Kind::kWake:
      return;
  }
}

void Router::after_local(const std::shared_ptr<Op>& op, RequestResult result, std::vector<float> probs,
                         int32_t streamed) {
  bool cancel_requested = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    cancel_requested = op->cancel_requested;
  }
  op->local_ran = true;
  op->local_ok = result.finish_reason != FinishReason::kError && result.finish_reason != FinishReason::kCancelled;
  if (result.finish_reason == FinishReason::kCancelled || cancel_requested) {
    result.route.route = "local";
    result.route.reason = op->reason.empty() ? "cancelled" : op->reason + "; cancelled";
    return deliver(op, std::move(result), false);
  }
  if (result.finish_reason == FinishReason::kError) {
    op->local = result;
    // A session's request too: its failed local run stored nothing, and the cloud gets the whole
    // conversation (the request holds it), as a refusal at submit already does (submit()).
    const bool fallback = device_failure(result.error_code) && streamed == 0 && op->params.cloud_on_failure &&
                          op->mode != RouteMode::kCloud && !op->req.messages.is_null();
    if (fallback && op->params.cloud_allowed()) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ++counters_.failure_fallbacks;
      }
      op->reason = "the local run failed (" + result.error + ")";
      const bool large = result.error_code == ErrorCode::kContextFull && !op->params.cloud_model_large.empty();
      return go_cloud(op, large ? "large" : "small");
    }
    if (fallback && op->params.privacy) {
      std::lock_guard<std::mutex> lock(mutex_);
      ++counters_.privacy_blocks;
      op->reason = "the local run failed; privacy mode: the cloud is never called";
    } else if (op->reason.empty()) {
      op->reason = "the local run failed";
    }
    result.route.route = "local";
    result.route.reason = op->reason;
    return deliver(op, std::move(result), op->mode == RouteMode::kCloud);
  }
  op->local = std::move(result);
  if (op->mode != RouteMode::kAuto) {
    // kLocal: the answer streamed already. kCloud: the cloud could not answer (op->reason).
    if (op->reason.empty()) op->reason = "route is local";
    return deliver_local(op);
  }
  op->conf = confidence_of(probs);
  op->scored = true;
  const Route route = route_for(op->conf, op->params.local_threshold, op->params.cloud_threshold);
  op->reason = route == Route::kLocal ? "confident" : route == Route::kCloud ? "low confidence" : "between the thresholds";
  if (route == Route::kCloud) {
    if (op->params.cloud_allowed()) return go_cloud(op, "small");
    if (op->params.privacy) {
      std::lock_guard<std::mutex> lock(mutex_);
      ++counters_.privacy_blocks;
    }
    op->reason += op->params.privacy ? "; privacy mode: the cloud is never called" : "; no cloud configured";
  }
  op->local.route.route = route_name(route == Route::kLocalLowConfidence ? route : Route::kLocal);
  op->local.route.retry_in_cloud = route == Route::kLocalLowConfidence && op->params.cloud_allowed();
  deliver_local(op);
}

void Router::go_cloud(const std::shared_ptr<Op>& op, const std::string& tier) {
  op->tier = tier;
  if (!op->cloud_messages.is_null()) return call_cloud(op);
  const ContextSplit split = split_context(op->req.messages, op->params.verbatim_turns);
  if (split.older.size() == 0) {
    op->cloud_messages = split.recent;
    return call_cloud(op);
  }
  // Older turns travel as a summary the local model writes (greedy, bounded).
  ServiceRequest sum;
  Json sm = Json::array();
  Json sys = Json::object();
  sys.set("role", "system");
  sys.set("content", kSummaryInstruction);
  sm.push_back(std::move(sys));
  Json user = Json::object();
  user.set("role", "user");
  user.set("content", transcript_of(split.older));
  sm.push_back(std::move(user));
  sum.messages = std::move(sm);
  sum.sampling.temperature = 0;
  sum.max_tokens = op->params.summary_max_tokens;
  sum.deadline_ms = op->req.deadline_ms;
  sum.route = RouteMode::kOff;
  sum.on_finish = [shared = shared_, op](const RequestResult& r) {
    Event e{Event::Kind::kSummaryDone, op};
    e.result = r;
    post_to(shared, std::move(e));
  };
  {
    std::lock_guard<std::mutex> lock(mutex_);
    op->stage = Op::Stage::kSummary;
    op->inner = 0;
  }
  try {
    const uint64_t inner = local_.submit(std::move(sum));
    bool cancel_now = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (op->stage == Op::Stage::kSummary && op->inner == 0) op->inner = inner;
      cancel_now = op->cancel_requested;
    }
    if (cancel_now) local_.cancel(inner);
  } catch (const Error& e) {
    op->reason += std::string("; the summary of older turns could not run (") + e.what() + "), only the recent turns were sent";
    op->cloud_messages = split.recent;
    call_cloud(op);
  }
}

void Router::call_cloud(const std::shared_ptr<Op>& op) {
  static std::atomic<uint64_t> next_call{1};
  const uint64_t call_id = next_call.fetch_add(1);
  CloudSampling s;
  s.max_tokens = op->req.max_tokens > 0 ? op->req.max_tokens : -1;
  s.temperature = op->req.sampling.temperature;
  s.top_p = op->req.sampling.top_p < 1.0f ? op->req.sampling.top_p : -1;
  s.stop = op->req.stop;
  CloudCall call;
  call.tier = op->tier;
  call.model = op->tier == "large" ? op->params.cloud_model_large : op->params.cloud_model;
  call.body = cloud_request_body(call.model, op->cloud_messages, s);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    op->stage = Op::Stage::kCloud;
    op->cloud_call = call_id;
    op->cloud_deadline = Clock::now() + std::chrono::milliseconds(op->params.cloud_timeout_ms);
  }
  wake_.notify_all();  // the loop re-reads the deadlines
  std::weak_ptr<Op> weak = op;
  std::weak_ptr<Shared> shared = shared_;
  auto done = [shared, weak, call_id](CloudReply reply) {
    std::shared_ptr<Op> o = weak.lock();
    std::shared_ptr<Shared> s = shared.lock();
    if (!o || !s) return;  // the request ended and was forgotten, or the router is gone
    Event e{Event::Kind::kCloudReply, std::move(o)};
    e.call = call_id;
    e.reply = std::move(reply);
    post_to(s, std::move(e));
  };
  try {
    op->params.transport->send(std::move(call), std::move(done));
  } catch (const std::exception& ex) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (op->cloud_call != call_id) return;
      op->cloud_call = 0;
      op->cloud_deadline = Clock::time_point::max();
    }
    cloud_failed(op, std::string("the transport failed: ") + ex.what());
  }
}

void Router::after_cloud(const std::shared_ptr<Op>& op, const CloudReply& reply) {
  std::string why;
  if (reply.status == 200) {
    try {
      const CloudAnswer a = parse_cloud_answer(reply.body);
      RequestResult r;
      r.finish_reason = a.length ? FinishReason::kLength : FinishReason::kStop;
      r.text = a.text;
      r.stats.prompt_tokens = a.prompt_tokens;
      r.stats.completion_tokens = a.completion_tokens;
      r.model_version = "cloud:" + (op->tier == "large" ? op->params.cloud_model_large : op->params.cloud_model);
      r.route.route = route_name(Route::kCloud);
      r.route.reason = op->reason + "; answered by the cloud";
      r.route.tier = op->tier;
      return deliver(op, std::move(r), true);
    } catch (const Error& e) {
      why = e.what();
    }
  } else if (reply.status != 0) {
    why = "HTTP " + std::to_string(reply.status);
    if (!reply.body.empty()) why += ": " + reply.body.substr(0, 200);
  } else {
    why = reply.error.empty() ? "no answer" : reply.error;
  }
  cloud_failed(op, why);
}

void Router::cloud_failed(const std::shared_ptr<Op>& op, const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++counters_.cloud_failures;
  }
  if (op->tier == "small" && !op->params.cloud_model_large.empty() && !op->large_tried) {
    op->large_tried = true;
    op->reason += "; the small cloud tier failed (" + why + ")";
    op->tier = "large";
    return call_cloud(op);
  }
  op->reason += "; offline: " + why;
  op->tier.clear();
  if (op->local_ok) return deliver_local(op);
  if (op->local_ran) {
    RequestResult r = op->local;  // the local failure that sent it to the cloud
    r.route.route = "local";
    r.route.reason = op->reason;
    return deliver(op, std::move(r), false);
  }
  try {
    start_local(op, false);  // kCloud: the local model answers after all
  } catch (const Error& e) {
    RequestResult r;
    r.finish_reason = FinishReason::kError;
    r.error_code = e.code();
    r.error = e.what();
    r.route.route = "local";
    r.route.reason = op->reason;
    deliver(op, std::move(r), false);
  }
}

void Router::deliver_local(const std::shared_ptr<Op>& op) {
  RequestResult r = op->local;
  if (r.route.route.empty()) r.route.route = "local";
  r.route.reason = op->reason;
  // kLocal streamed its tokens; the other modes held them back for the decision.
  deliver(op, std::move(r), op->mode != RouteMode::kLocal);
}

void Router::finish_cancelled(const std::shared_ptr<Op>& op) {
  RequestResult r;
  r.finish_reason = FinishReason::kCancelled;
  r.route.reason = op->reason.empty() ? "cancelled" : op->reason + "; cancelled";
  deliver(op, std::move(r), false);
}

void Router::deliver(const std::shared_ptr<Op>& op, RequestResult result, bool text_event) {
  result.id = op->id;
  if (op->scored) {
    result.route.score = op->conf.score;
    result.route.mean_p = op->conf.mean;
    result.route.min_p = op->conf.min;
  }
  result.route.latency_ms = ms_since(op->start);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (op->finished) return;
    op->finished = true;
    ops_.erase(op->id);
    const std::string& route = result.route.route;
    if (route == "cloud") {
      ++counters_.cloud;
    } else if (route == "local-low-confidence") {
      ++counters_.low_confidence;
    } else if (route == "local") {
      ++counters_.local;
    }
    if (op->scored) {
      ++counters_.scored;
      counters_.score_sum += op->conf.score;
    }
    counters_.latency_ms_sum += result.route.latency_ms;
  }
  wake_.notify_all();  // shutdown waits for ops_ to empty
  try {
    if (text_event && !result.text.empty() && op->req.on_token) {
      TokenEvent ev;
      ev.id = op->id;
      ev.token = -1;
      ev.text = result.text;
      ev.index = 0;
      (void)op->req.on_token(ev);
    }
    if (op->req.on_finish) op->req.on_finish(result);
  } catch (const std::exception& e) {
    log_message(LogLevel::kError, std::string("router: a callback threw: ") + e.what());
  } catch (...) {
    log_message(LogLevel::kError, "router: a callback threw");
  }
}

Json Router::metrics_json() const {
  const RouterCounters c = counters();
  const RouterParams p = params();
  Json j = Json::object();
  j.set("cloud", p.cloud_allowed());
  j.set("privacy", p.privacy);
  j.set("local_threshold", p.local_threshold);
  j.set("cloud_threshold", p.cloud_threshold);
  j.set("routed_local", c.local);
  j.set("routed_low_confidence", c.low_confidence);
  j.set("routed_cloud", c.cloud);
  j.set("cloud_failures", c.cloud_failures);
  j.set("privacy_blocks", c.privacy_blocks);
  j.set("failure_fallbacks", c.failure_fallbacks);
  j.set("mean_score", c.scored > 0 ? c.score_sum / static_cast<double>(c.scored) : 0.0);
  const uint64_t n = c.local + c.low_confidence + c.cloud;
  j.set("mean_latency_ms", n > 0 ? c.latency_ms_sum / static_cast<double>(n) : 0.0);
  return j;
}

std::string Router::metrics_prometheus() const {
  const RouterCounters c = counters();
  std::string s;
  auto counter = [&](const char* name, const char* help, uint64_t v) {
    s += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " counter\n" + name + " " +
         std::to_string(v) + "\n";
  };
  s += "# HELP edgellm_routed_total Routed requests by the route that answered.\n"
       "# TYPE edgellm_routed_total counter\n";
  s += "edgellm_routed_total{route=\"local\"} " + std::to_string(c.local) + "\n";
  s += "edgellm_routed_total{route=\"local-low-confidence\"} " + std::to_string(c.low_confidence) + "\n";
  s += "edgellm_routed_total{route=\"cloud\"} " + std::to_string(c.cloud) + "\n";
  counter("edgellm_route_cloud_failures_total", "Cloud calls that failed or timed out.", c.cloud_failures);
  counter("edgellm_route_privacy_blocks_total", "Cloud routes privacy mode refused.", c.privacy_blocks);
  counter("edgellm_route_failure_fallbacks_total", "Failed local runs sent to the cloud.", c.failure_fallbacks);
  return s;
}

}  // namespace edgellm
