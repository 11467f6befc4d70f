// The hand-over between one request's service callbacks (scheduler thread) and the HTTP worker
// thread that answers its client. The scheduler only appends and notifies (never blocks on the
// network); the worker waits, takes what arrived and writes it out. When the worker finds the
// client gone it calls abandon(): the next on_token returns false, which cancels the request in
// the service at that step (the worker also calls InferenceService::cancel for requests that
// have not produced a token yet).
//
// Thread-safety: every member function may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "service/request.h"

namespace edgellm::server {

class CompletionChannel {
 public:
  // ---- producer side (the service's callbacks)
  bool on_token(const TokenEvent& ev);
  void on_finish(const RequestResult& result);

  // ---- consumer side (the HTTP worker)
  struct Batch {
    std::string text;        // text that arrived since the last take
    int32_t tokens = 0;      // sampled tokens among those events
    // Milliseconds from the request's first sampled token to the last one taken so far (this
    // batch's or an earlier one's): TokenEvent::decode_ms, the generator's own clock. Why: a
    // batch can carry many tokens (the writer was slower than the model), so a client timing the
    // chunks it receives cannot tell the decode rate; this can.
    double decode_ms = 0;
    std::vector<float> probabilities;  // their TokenEvent::probability (when requested)
    bool finished = false;   // `result` is valid
    RequestResult result;
  };
  // Waits until something arrived or `timeout` passed, then takes it (possibly nothing).
  Batch take(std::chrono::milliseconds timeout);
  // Waits until the first token event or the end (the request is admitted and prefilled).
  // False when `timeout` passed first.
  bool wait_started(std::chrono::milliseconds timeout);

  void abandon() { abandoned_.store(true); }
  bool abandoned() const { return abandoned_.load(); }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::string text_;
  int32_t tokens_ = 0;
  double decode_ms_ = 0;
  std::vector<float> probabilities_;
  bool started_ = false;
  bool finished_ = false;
  bool result_taken_ = false;
  RequestResult result_;
  std::atomic<bool> abandoned_{false};
};

}  // namespace edgellm::server
