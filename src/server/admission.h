// Shares of a limited resource, taken before a request's body is read and held until its
// response is out (Route::admission): the bytes of request bodies in memory at once, and the
// requests of one kind running at once. A share is a token; dropping the last copy gives it back.
//
// Thread-safety: every function from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>

namespace edgellm::server {

class Admission {
 public:
  // capacity: units (bytes, or requests when each takes 1) in use at once.
  explicit Admission(uint64_t capacity) : state_(std::make_shared<State>(capacity)) {}

  // A token for `units`, or nullptr when they do not fit next to the tokens out now (or exceed
  // the capacity). Never blocks.
  std::shared_ptr<void> try_take(uint64_t units = 1);

  uint64_t in_use() const;
  uint64_t capacity() const { return state_->capacity; }

 private:
  struct State {
    explicit State(uint64_t c) : capacity(c) {}
    const uint64_t capacity;
    std::mutex mutex;
    uint64_t used = 0;
  };
  // Tokens keep the state alive, so one may outlive the Admission that made it.
  std::shared_ptr<State> state_;
};

}  // namespace edgellm::server
