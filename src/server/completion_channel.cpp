#include "server/completion_channel.h"

namespace edgellm::server {

bool CompletionChannel::on_token(const TokenEvent& ev) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    text_.append(ev.text);
    if (ev.token >= 0) {
      ++tokens_;
      decode_ms_ = ev.decode_ms;
    }
    if (ev.token >= 0 && ev.probability >= 0) probabilities_.push_back(ev.probability);
    started_ = true;
  }
  cv_.notify_all();
  return !abandoned_.load();
}

void CompletionChannel::on_finish(const RequestResult& result) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    result_ = result;
    finished_ = true;
    started_ = true;
  }
  cv_.notify_all();
}

CompletionChannel::Batch CompletionChannel::take(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait_for(lock, timeout, [&] { return !text_.empty() || tokens_ > 0 || (finished_ && !result_taken_); });
  Batch b;
  b.text.swap(text_);
  b.tokens = tokens_;
  tokens_ = 0;
  b.decode_ms = decode_ms_;
  b.probabilities.swap(probabilities_);
  if (finished_ && !result_taken_) {
    b.finished = true;
    b.result = std::move(result_);
    result_taken_ = true;
  }
  return b;
}

bool CompletionChannel::wait_started(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  return cv_.wait_for(lock, timeout, [&] { return started_; });
}

}  // namespace edgellm::server
