#include "kernels/int8_peak.h"

#include "kernels/cpu_features.h"
#include "kernels/int8_peak_isa.h"

namespace edgellm::kernels {

std::vector<Int8PeakKernel> int8_peak_kernels() {
  std::vector<Int8PeakKernel> k;
  [[maybe_unused]] const CpuFeatures& f = cpu_features();
#if defined(EDGELLM_ARCH_X86)
  // Each kernel's file is built for its folder's whole ISA (CMakeLists.txt), so it runs only
  // where the engine's kernels of that ISA would.
  if (f.has_amx_kernels()) {
    k.push_back({"amx_int8", "tdpbssd (16x64 by 64x16 tiles)", Int8PeakSemantics::kSignedTile16x64, 1024, 1, 16384,
                 amx::int8_peak_tdpbssd});
  }
  if (f.has_avx512_kernels()) {
    k.push_back({"avx512_vnni", "vpdpbusd zmm", Int8PeakSemantics::kUnsignedSignedQuad, 64, 16, 64,
                 avx512::int8_peak_vpdpbusd});
  }
  if (f.has_avx2_kernels() && f.avx_vnni) {
    k.push_back({"avx_vnni", "vpdpbusd ymm (VEX)", Int8PeakSemantics::kUnsignedSignedQuad, 32, 12, 32,
                 avx2::int8_peak_avx_vnni});
  }
  if (f.has_avx2_kernels()) {
    k.push_back({"avx2", "vpmaddubsw+vpmaddwd+vpaddd ymm", Int8PeakSemantics::kUnsignedSignedQuad, 32, 8, 32,
                 avx2::int8_peak_maddubs});
  }
#elif defined(EDGELLM_ARCH_ARM64)
  if (f.i8mm && f.dotprod && f.fp16) {  // the i8mm folder is built for armv8.6-a+dotprod+i8mm+fp16
    k.push_back({"i8mm", "smmla", Int8PeakSemantics::kSignedMatrix2x8, 16, 16, 32, i8mm::int8_peak_smmla});
  }
  if (f.dotprod && f.fp16) {  // the dotprod folder: armv8.2-a+dotprod+fp16
    k.push_back({"dotprod", "sdot", Int8PeakSemantics::kSignedQuad, 16, 16, 16, dotprod::int8_peak_sdot});
  }
#endif
  return k;
}

}  // namespace edgellm::kernels
