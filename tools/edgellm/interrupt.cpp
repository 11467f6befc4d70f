#include "interrupt.h"

#include <csignal>

namespace edgellm::cli {
namespace {

std::atomic<bool> g_interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the SIGINT handler needs a lock-free flag");

extern "C" void edgellm_cli_on_sigint(int sig) {
  g_interrupted.store(true);
  std::signal(sig, SIG_DFL);
}

}  // namespace

std::atomic<bool>* interrupt_flag() { return &g_interrupted; }

SigintScope::SigintScope(bool clear_flag, bool also_sigterm) : also_sigterm_(also_sigterm) {
  if (clear_flag) g_interrupted.store(false);
  previous_ = std::signal(SIGINT, edgellm_cli_on_sigint);
  if (previous_ == SIG_ERR) previous_ = SIG_DFL;
  if (also_sigterm_) {
    previous_term_ = std::signal(SIGTERM, edgellm_cli_on_sigint);
    if (previous_term_ == SIG_ERR) previous_term_ = SIG_DFL;
  }
}

SigintScope::~SigintScope() {
  std::signal(SIGINT, previous_);
  if (also_sigterm_) std::signal(SIGTERM, previous_term_);
}

}  // namespace edgellm::cli
