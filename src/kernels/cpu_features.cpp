#include "kernels/cpu_features.h"

#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

namespace edgellm::kernels {
namespace {

#if defined(__x86_64__) || defined(__i386__)

// XGETBV without needing -mxsave for this translation unit.
uint64_t read_xcr0() {
  uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

CpuFeatures detect() {
  CpuFeatures f;
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return f;
  const bool osxsave = (ecx >> 27) & 1u;
  const bool avx = (ecx >> 28) & 1u;
  f.fma = (ecx >> 12) & 1u;
  f.f16c = (ecx >> 29) & 1u;
  if (osxsave && avx) {
    const uint64_t xcr0 = read_xcr0();
    f.os_ymm = (xcr0 & 0x6u) == 0x6u;      // bit 1 SSE, bit 2 AVX (upper YMM halves)
    f.os_zmm = (xcr0 & 0xE6u) == 0xE6u;    // + bit 5 opmask, 6 ZMM0-15 upper, 7 ZMM16-31
  }
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) {
    f.avx2 = (ebx >> 5) & 1u;
    f.bmi2 = (ebx >> 8) & 1u;
    f.avx512f = (ebx >> 16) & 1u;
    f.avx512dq = (ebx >> 17) & 1u;
    f.avx512bw = (ebx >> 30) & 1u;
    f.avx512vl = (ebx >> 31) & 1u;
    f.avx512vnni = (ecx >> 11) & 1u;
    f.avx512vbmi = (ecx >> 1) & 1u;
  }
  // Sub-leaf 1 reads as zeros on CPUs that do not have it.
  if (__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) {
    f.avx_vnni = f.os_ymm && ((eax >> 4) & 1u);
  }
  return f;
}

#elif defined(__aarch64__)

CpuFeatures detect() {
  CpuFeatures f;
  f.neon = true;  // Advanced SIMD is mandatory in ARMv8-A
#if defined(__linux__)
  // Bit numbers from the Linux arm64 uapi hwcap.h (fixed ABI), spelled out so that older libc
  // headers without the newer macros still build.
  constexpr unsigned long kHwcapFphp = 1ul << 9;
  constexpr unsigned long kHwcapAsimdhp = 1ul << 10;
  constexpr unsigned long kHwcapAsimddp = 1ul << 20;
  constexpr unsigned long kHwcap2I8mm = 1ul << 13;
  const unsigned long hw = getauxval(AT_HWCAP);
  const unsigned long hw2 = getauxval(AT_HWCAP2);
  f.fp16 = (hw & kHwcapFphp) && (hw & kHwcapAsimdhp);
  f.dotprod = (hw & kHwcapAsimddp) != 0;
  f.i8mm = (hw2 & kHwcap2I8mm) != 0;
#endif
  return f;
}

#else

CpuFeatures detect() { return CpuFeatures{}; }

#endif

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

}  // namespace edgellm::kernels
