// install_dotprod: the SDOT entries of the kernel table, from kernel_list.h; everything else is
// inherited from the NEON table below it.
#include <type_traits>

#include "kernels/arm/arm_kernels.h"
#include "kernels/kernel_table.h"

namespace edgellm::kernels {

void install_dotprod(KernelTable& t) {
#define EDGELLM_KERNEL_LIST_INSTALL dotprod
#include "kernels/arm/dotprod/kernel_list.h"
}

}  // namespace edgellm::kernels
