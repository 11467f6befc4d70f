// install_neon: the armv8-a baseline entries of the kernel table, from kernel_list.h; the dotprod
// and i8mm tables start from this one.
#include <type_traits>

#include "kernels/arm/arm_kernels.h"
#include "kernels/kernel_table.h"

namespace edgellm::kernels {

void install_neon(KernelTable& t) {
#define EDGELLM_KERNEL_LIST_INSTALL neon
#include "kernels/arm/neon/kernel_list.h"
}

}  // namespace edgellm::kernels
