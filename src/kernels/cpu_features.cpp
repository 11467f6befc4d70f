#include "kernels/cpu_features.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
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

// Linux keeps the 8 KiB of AMX tile data out of a process's register state until the process
// asks for it (arch/x86/include/uapi/asm/prctl.h: ARCH_REQ_XCOMP_PERM = 0x1023; XTILEDATA is
// state component 18). The permission is process-wide and stays granted, and it has a cost for
// the whole process: signal frames grow by the tile state, so the kernel refuses it while any
// thread has an alternate signal stack too small for that, and refuses such stacks afterwards.
// So it is not asked for when EDGELLM_ISA pins an ISA below AMX (the pin then reports no AMX,
// as dispatch.cpp's pins do for every ISA above them).
bool request_amx_permission() {
#if defined(__linux__) && defined(__x86_64__)
  const char* pin = std::getenv("EDGELLM_ISA");
  if (pin != nullptr && *pin != '\0' && std::strcmp(pin, "amx") != 0) return false;
  constexpr long kArchReqXcompPerm = 0x1023;
  constexpr long kXfeatureXtiledata = 18;
  const int saved_errno = errno;  // a refusal is an answer here, not an error for the caller
  const bool granted = syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  errno = saved_errno;
  return granted;
#else
  return false;
#endif
}

CpuFeatures detect() {
  CpuFeatures f;
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return f;
  uint64_t xcr0 = 0;
  const bool osxsave = (ecx >> 27) & 1u;
  const bool avx = (ecx >> 28) & 1u;
  f.fma = (ecx >> 12) & 1u;
  f.f16c = (ecx >> 29) & 1u;
  if (osxsave && avx) {
    xcr0 = read_xcr0();
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
    f.amx_tile = (edx >> 24) & 1u;
    f.amx_int8 = (edx >> 25) & 1u;
  }
  constexpr uint64_t kTileState = (1ull << 17) | (1ull << 18);  // XTILECFG, XTILEDATA
  // Asked only where the AMX kernels could run (AMX-INT8 and the AVX-512 level they build on):
  // the permission changes the whole process, and a process that cannot use it should not pay.
  f.os_amx = f.amx_tile && f.amx_int8 && (xcr0 & kTileState) == kTileState && f.has_avx512_kernels() &&
             request_amx_permission();
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
