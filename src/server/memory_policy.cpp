#include "server/memory_policy.h"

#include <cstdlib>  // defines __GLIBC__ with glibc
#include <mutex>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace edgellm::server {

void use_serving_allocator_policy() {
#if defined(__GLIBC__)
  static std::once_flag once;
  // Setting it also turns off the dynamic adjustment (mallopt(3)).
  std::call_once(once, [] { ::mallopt(M_MMAP_THRESHOLD, 256 << 10); });
#endif
}

void release_free_memory() {
#if defined(__GLIBC__)
  ::malloc_trim(0);
#endif
}

}  // namespace edgellm::server
