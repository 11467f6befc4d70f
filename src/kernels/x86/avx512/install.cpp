// install_avx512: the AVX-512 entries of the kernel table, from kernel_list.h. Entries not set
// here keep the AVX2 version (the AVX-512 table starts as a copy of the AVX2 table).
#include <type_traits>

#include "kernels/kernel_table.h"
#include "kernels/x86/avx512/avx512_kernels.h"

namespace edgellm::kernels {

void install_avx512(KernelTable& t) {
#define EDGELLM_KERNEL_LIST_INSTALL avx512
#include "kernels/x86/avx512/kernel_list.h"
}

}  // namespace edgellm::kernels
