// The AMX kernels' per-thread buffer (amx_driver.h: thread_buffer): one for every format, so a
// model with several packed types keeps one buffer per thread, sized for its largest matrix.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "kernels/x86/amx/amx_driver.h"

namespace edgellm::kernels::amx {
namespace {

struct Buffer {
  uint8_t* data = nullptr;
  size_t bytes = 0;
  ~Buffer() { std::free(data); }
};
thread_local Buffer t_buffer;

}  // namespace

uint8_t* thread_buffer(size_t want) {
  if (want <= t_buffer.bytes) return t_buffer.data;
  std::free(t_buffer.data);
  t_buffer.bytes = (want + 63) / 64 * 64;
  t_buffer.data = static_cast<uint8_t*>(std::aligned_alloc(64, t_buffer.bytes));
  if (t_buffer.data == nullptr) t_buffer.bytes = 0;
  return t_buffer.data;
}

}  // namespace edgellm::kernels::amx
