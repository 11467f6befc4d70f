// install_avx2: the AVX2 entries of the kernel table, from kernel_list.h (entries not set here
// stay scalar).
#include <type_traits>

#include "kernels/kernel_table.h"
#include "kernels/x86/avx2/avx2_kernels.h"

namespace edgellm::kernels {

void install_avx2(KernelTable& t) {
#define EDGELLM_KERNEL_LIST_INSTALL avx2
#include "kernels/x86/avx2/kernel_list.h"
}

}  // namespace edgellm::kernels
