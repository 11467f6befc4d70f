// Restores the active kernel ISA when a test that pins ISAs (kernels::set_active_isa) ends,
// however it ends.
#pragma once

#include "kernels/kernels.h"

namespace edgellm::test {

class IsaGuard {
 public:
  IsaGuard() : saved_(kernels::active_isa()) {}
  ~IsaGuard() { kernels::set_active_isa(saved_); }
  IsaGuard(const IsaGuard&) = delete;
  IsaGuard& operator=(const IsaGuard&) = delete;

 private:
  kernels::Isa saved_;
};

}  // namespace edgellm::test
