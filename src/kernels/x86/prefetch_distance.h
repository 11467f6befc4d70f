// Internal: how far ahead decode prefetches the packed weights (x86). One definition for the
// kernels (packed_prefetch.h) and the bandwidth probe (bench/memory_bandwidth.cpp), which must
// read with the kernels' own pattern to be the roofline they are measured against.
#pragma once

namespace edgellm::kernels::x86 {

// Into L1, per ISA. A likely reason AVX-512 wants more: its kernels take a 64-byte line per load
// and catch up with an L1 prefetch 1.5 KiB out before the line has arrived from L2. 2 threads,
// tg128, alternating 1536 / 3072 binaries in both orders (means of 3-5 pairs per order):
// Qwen2.5-0.5B Q4_0 +4.9 / +3.9 / +2.0 / -3.7 %, Q8_0 +2.5 / +2.0 %, TinyLlama Q4_K_M +3.4 /
// +4.7 / +7.9 / +2.6 %, Qwen2.5-1.5B Q4_K_M -0.1 / +0.4 %. AVX2 showed no clear change (-3.2 /
// 0 % on Qwen2.5-0.5B Q4_0) and keeps 1.5 KiB.
inline constexpr int kPrefetchL1BytesAvx2 = 1536;
inline constexpr int kPrefetchL1BytesAvx512 = 3072;
// Into L2, far enough to hide the DRAM latency (both ISAs).
inline constexpr int kPrefetchL2Bytes = 16384;

}  // namespace edgellm::kernels::x86
