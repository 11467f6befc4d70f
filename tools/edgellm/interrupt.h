// Ctrl-C handling shared by the long-running sub-commands (run, chat, quantize, perplexity).
// One process-wide flag: the first SIGINT sets it (the work in progress polls it and ends
// cleanly) and puts back the default disposition, so a second Ctrl-C kills the process.
#pragma once

#include <atomic>

namespace edgellm::cli {

// The flag the SIGINT handler sets; pass it as the `cancel` pointer of engine calls.
std::atomic<bool>* interrupt_flag();

// Installs the handler for its lifetime and restores the previous disposition on destruction
// (however the scope is left). clear_flag = true first resets the flag, so an earlier Ctrl-C
// (e.g. one cancelling a previous chat turn) does not cancel the new work. also_sigterm: SIGTERM
// (`kill PID`) sets the flag the same way, for work that must clean up (a large temporary file).
class SigintScope {
 public:
  explicit SigintScope(bool clear_flag = true, bool also_sigterm = false);
  ~SigintScope();
  SigintScope(const SigintScope&) = delete;
  SigintScope& operator=(const SigintScope&) = delete;

 private:
  void (*previous_)(int);
  void (*previous_term_)(int) = nullptr;
  bool also_sigterm_;
};

}  // namespace edgellm::cli
