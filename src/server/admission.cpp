#include "server/admission.h"

namespace edgellm::server {
namespace {

struct Token {
  Token(std::shared_ptr<void> state, uint64_t* used, std::mutex* mutex, uint64_t units)
      : state(std::move(state)), used(used), mutex(mutex), units(units) {}
  ~Token() {
    std::lock_guard<std::mutex> lock(*mutex);
    *used -= units;
  }
  Token(const Token&) = delete;
  Token& operator=(const Token&) = delete;

  std::shared_ptr<void> state;  // keeps *used and *mutex alive
  uint64_t* used;
  std::mutex* mutex;
  uint64_t units;
};

}  // namespace

std::shared_ptr<void> Admission::try_take(uint64_t units) {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (units > state_->capacity || state_->used > state_->capacity - units) return nullptr;
    state_->used += units;
  }
  return std::make_shared<Token>(state_, &state_->used, &state_->mutex, units);
}

uint64_t Admission::in_use() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->used;
}

}  // namespace edgellm::server
