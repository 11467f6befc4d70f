// CPU feature detection for kernel dispatch. On x86 a feature counts only when both the CPU
// reports it (cpuid) and the OS saves the register state it needs (xgetbv: YMM for AVX2, ZMM and
// opmask for AVX-512). On ARM64 Linux/HarmonyOS the kernel's hwcaps are authoritative.
#pragma once

namespace edgellm::kernels {

struct CpuFeatures {
  // x86
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool bmi2 = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512dq = false;
  bool avx512vnni = false;
  bool avx512vbmi = false;  // vpermt2b (cpuid 7.0 ecx bit 1)
  bool avx_vnni = false;   // VEX-encoded vpdpbusd ymm (cpuid 7.1 eax bit 4); only the int8 peak probe uses it
  bool os_ymm = false;  // XCR0 has SSE and AVX state enabled
  bool os_zmm = false;  // XCR0 additionally has opmask and both ZMM state components
  bool amx_tile = false;  // cpuid 7.0 edx bit 24
  bool amx_int8 = false;  // cpuid 7.0 edx bit 25: tdpbssd and its signed / unsigned variants
  // XCR0 has the tile configuration and tile data state (bits 17, 18) and the kernel granted
  // this process the tile data (Linux arch_prctl ARCH_REQ_XCOMP_PERM, asked once at detection;
  // without it the first tile instruction raises SIGILL).
  bool os_amx = false;
  // ARM64
  bool neon = false;
  bool fp16 = false;     // half-precision arithmetic (HWCAP_FPHP and HWCAP_ASIMDHP)
  bool dotprod = false;  // SDOT/UDOT (HWCAP_ASIMDDP)
  bool i8mm = false;     // SMMLA/USMMLA (HWCAP2_I8MM)

  // What the per-ISA kernel files are compiled for (see CMakeLists.txt flags).
  bool has_avx2_kernels() const { return os_ymm && avx2 && fma && f16c && bmi2; }
  bool has_avx512_kernels() const {
    return has_avx2_kernels() && os_zmm && avx512f && avx512bw && avx512vl && avx512dq && avx512vnni;
  }
  // The int8-weighted attention V sum (kernels/x86/avx512_vbmi): Ice Lake, Sapphire Rapids and
  // later, Zen 4 / 5.
  bool has_avx512_vbmi_kernels() const { return has_avx512_kernels() && avx512vbmi; }
  // The AMX prefill matmuls (kernels/x86/amx): Sapphire Rapids and later Xeons.
  bool has_amx_kernels() const { return has_avx512_kernels() && amx_tile && amx_int8 && os_amx; }
};

// Detected once; later calls return the cached result.
const CpuFeatures& cpu_features();

}  // namespace edgellm::kernels
