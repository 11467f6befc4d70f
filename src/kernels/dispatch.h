// Internal: the active kernel table (see kernel_table.h). kernels.cpp validates arguments and
// calls through active_table(); tests pin ISAs through kernels::set_active_isa.
#pragma once

#include "kernels/kernel_table.h"
#include "kernels/kernels.h"

namespace edgellm::kernels {

// The table of the active ISA. First use selects the ISA (EDGELLM_ISA or the best supported)
// and throws Error if EDGELLM_ISA names an unknown or unsupported ISA.
const KernelTable& active_table();

}  // namespace edgellm::kernels
