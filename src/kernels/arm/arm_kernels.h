// Internal: the ARM64 kernels that install_neon / install_dotprod / install_i8mm put into the
// dispatch table (kernel_table.h), declared from their lists (<isa>/kernel_list.h) with the types
// of their table fields. Each namespace is compiled with its own -march flags (CMakeLists.txt):
// neon = armv8-a baseline, dotprod = armv8.2-a+dotprod+fp16, i8mm = armv8.6-a+dotprod+i8mm+fp16.
// Only dispatch.cpp calls the install functions, and only after cpu_features() confirmed the CPU
// has the extension.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/kernel_table.h"

namespace edgellm::kernels {

void install_neon(KernelTable& table);
void install_dotprod(KernelTable& table);
void install_i8mm(KernelTable& table);

namespace neon {
#define EDGELLM_KERNEL_LIST_DECLARE
#include "kernels/arm/neon/kernel_list.h"
}  // namespace neon

namespace dotprod {
#define EDGELLM_KERNEL_LIST_DECLARE
#include "kernels/arm/dotprod/kernel_list.h"
}  // namespace dotprod

namespace i8mm {
#define EDGELLM_KERNEL_LIST_DECLARE
#include "kernels/arm/i8mm/kernel_list.h"
}  // namespace i8mm

}  // namespace edgellm::kernels
