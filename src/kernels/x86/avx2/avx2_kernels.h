// Internal: the AVX2 (+FMA, F16C, BMI2) kernels that install_avx2() puts into the table, declared
// from their list (kernel_list.h) with the types of their table fields.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/kernel_table.h"

namespace edgellm::kernels::avx2 {

#define EDGELLM_KERNEL_LIST_DECLARE
#include "kernels/x86/avx2/kernel_list.h"

}  // namespace edgellm::kernels::avx2
