// The waiting queue of the service: requests accepted but not yet admitted to a sequence. Its
// capacity is a hard bound (max_queued + n_parallel); the service answers BUSY before it is
// reached (inference_service.cpp: submit). Full is BUSY at once, never a wait.
// Order: priority (interactive first), then arrival. Not thread-safe: the service guards it.
#pragma once

#include <cstddef>
#include <deque>
#include <memory>

#include "service/request.h"

namespace edgellm {

template <typename T>
class RequestQueue {
 public:
  explicit RequestQueue(size_t capacity) : capacity_(capacity) {}

  size_t size() const { return interactive_.size() + background_.size(); }
  bool empty() const { return size() == 0; }
  bool full() const { return size() >= capacity_; }
  size_t capacity() const { return capacity_; }

  // False (and `item` untouched) when full.
  bool push(Priority priority, std::unique_ptr<T>& item) {
    if (full()) return false;
    (priority == Priority::kInteractive ? interactive_ : background_).push_back(std::move(item));
    return true;
  }
  // The next to admit (null when empty); stays queued.
  T* front() const {
    if (!interactive_.empty()) return interactive_.front().get();
    return background_.empty() ? nullptr : background_.front().get();
  }
  std::unique_ptr<T> pop() {
    std::deque<std::unique_ptr<T>>& q = !interactive_.empty() ? interactive_ : background_;
    std::unique_ptr<T> item = std::move(q.front());
    q.pop_front();
    return item;
  }
  // Removes and returns every item for which pred(item) holds, in queue order.
  template <typename Pred>
  std::deque<std::unique_ptr<T>> remove_if(Pred pred) {
    std::deque<std::unique_ptr<T>> out;
    for (auto* q : {&interactive_, &background_}) {
      for (auto it = q->begin(); it != q->end();) {
        if (pred(**it)) {
          out.push_back(std::move(*it));
          it = q->erase(it);
        } else {
          ++it;
        }
      }
    }
    return out;
  }
  template <typename Fn>
  void for_each(Fn fn) const {
    for (const auto& p : interactive_) fn(*p);
    for (const auto& p : background_) fn(*p);
  }

 private:
  size_t capacity_;
  std::deque<std::unique_ptr<T>> interactive_;
  std::deque<std::unique_ptr<T>> background_;
};

}  // namespace edgellm
