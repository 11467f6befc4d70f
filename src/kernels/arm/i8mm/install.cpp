// install_i8mm: the SMMLA entries of the kernel table, from kernel_list.h; everything else is
// inherited from the dotprod table below it.
#include <type_traits>

#include "kernels/arm/arm_kernels.h"
#include "kernels/kernel_table.h"

namespace edgellm::kernels {

void install_i8mm(KernelTable& t) {
#define EDGELLM_KERNEL_LIST_INSTALL i8mm
#include "kernels/arm/i8mm/kernel_list.h"
}

}  // namespace edgellm::kernels
