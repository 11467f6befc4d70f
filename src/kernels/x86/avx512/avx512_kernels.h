// Internal: the AVX-512 (F, BW, VL, DQ, VNNI) kernels that install_avx512() puts into the table,
// declared from their list (kernel_list.h) with the types of their table fields.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/kernel_table.h"

namespace edgellm::kernels::avx512 {

#define EDGELLM_KERNEL_LIST_DECLARE
#include "kernels/x86/avx512/kernel_list.h"

}  // namespace edgellm::kernels::avx512
