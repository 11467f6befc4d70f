// Internal: the per-ISA int8 peak probe loops (kernels/int8_peak.h describes them). Declared
// here without any STL so the SIMD files that define them include nothing they could
// instantiate with their ISA's instructions (kernels/README.md, rule for SIMD files).
#pragma once

#include <cstdint>

namespace edgellm::kernels {

#if defined(EDGELLM_ARCH_X86)
namespace avx512 {
void int8_peak_vpdpbusd(const uint8_t* a, const uint8_t* b, int64_t iterations, int32_t* out);
}
namespace amx {
void int8_peak_tdpbssd(const uint8_t* a, const uint8_t* b, int64_t iterations, int32_t* out);
}
namespace avx2 {
void int8_peak_maddubs(const uint8_t* a, const uint8_t* b, int64_t iterations, int32_t* out);
void int8_peak_avx_vnni(const uint8_t* a, const uint8_t* b, int64_t iterations, int32_t* out);
}
#elif defined(EDGELLM_ARCH_ARM64)
namespace dotprod {
void int8_peak_sdot(const uint8_t* a, const uint8_t* b, int64_t iterations, int32_t* out);
}
namespace i8mm {
void int8_peak_smmla(const uint8_t* a, const uint8_t* b, int64_t iterations, int32_t* out);
}
#endif

}  // namespace edgellm::kernels
