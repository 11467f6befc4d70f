// Int8 peak probe kernels (timed by bench/int8_peak.h for `edgellm bench`): per ISA, a
// register-resident loop of the int8 dot-product instruction the quantized matmuls are built on,
// with enough independent accumulators to hide the instruction's latency, so that one core
// running it reaches the core's int8 multiply-accumulate (MAC) ceiling. 1 MAC = 2 ops.
//
//   kernel        instruction(s) per accumulator step              MACs   accumulators
//   avx512_vnni   vpdpbusd zmm (u8 x s8, 4 products per int32 lane)   64    16
//   avx_vnni      vpdpbusd ymm (VEX encoding, Alder Lake / SPR)       32    12 (16 ymm registers)
//   avx2          vpmaddubsw + vpmaddwd by ones + vpaddd ymm          32     8
//   dotprod       sdot v.4s (s8 x s8, 4 products per int32 lane)      16    16
//   i8mm          smmla v.4s (2x8 by 8x2 s8 -> 2x2 int32)              32    16
//   amx_int8      tdpbssd (16x64 by 64x16 s8 -> 16x16 int32)        16384     1 (tile unit: one at a time)
//
// Every kernel computes, for accumulator k (every int32 lane starting at k, so no two
// accumulators are the same value and none can be merged) and each of its int32 lanes j:
//   quad semantics:    acc[k][j] += sum_{t<4} a[4j+t] * b[4j+t]          (a unsigned for x86)
//   matrix semantics:  acc[k][2i+c] += sum_{t<8} a[8i+t] * b[8c+t]       (smmla, i, c < 2)
//   tile semantics:    acc[0][16m+n] += sum_{k<64} a[(k+4m)%64] * b[(k+4n)%64]   (tdpbssd: the
//                      tiles A[m][k] = a[(k+4m)%64], B[r][c] = b[(c+4r)%64]; m, n < 16)
// once per iteration, wrapping modulo 2^32 as the instructions do. The inputs pass through an
// empty asm statement every step, so the compiler cannot hoist, merge or fold the products
// (AVX2's vpmaddubsw does not read the accumulator and would otherwise be loop-invariant).
// tests/kernels/test_int8_peak.cpp checks every lane against a scalar computation.
#pragma once

#include <cstdint>
#include <vector>

namespace edgellm::kernels {

inline constexpr int kInt8PeakInputBytes = 64;  // a and b: one vector of the widest kernel
inline constexpr int kInt8PeakMaxOut = 256;     // int32 lanes a kernel writes at most (16 x 16)

enum class Int8PeakSemantics {
  kUnsignedSignedQuad,  // x86: a u8, b s8; vpmaddubsw saturates pairs to int16: keep |a*b| pair sums < 32768
  kSignedQuad,          // sdot: a, b s8
  kSignedMatrix2x8,     // smmla: a, b s8, each 16 bytes a row-major 2 x 8 matrix
  kSignedTile16x64,     // tdpbssd: a, b s8, expanded to 16 x 64 tiles (above)
};

struct Int8PeakKernel {
  const char* name;          // "avx512_vnni"
  const char* instruction;   // "vpdpbusd zmm"
  Int8PeakSemantics semantics;
  int vector_bytes;          // bytes of one accumulator (64 / 32 / 16; the AMX C tile: 1024)
  int accumulators;          // independent accumulator registers
  int macs_per_step;         // int8 MACs of one accumulator step
  // Runs `iterations` iterations of `accumulators` steps; writes accumulators * vector_bytes / 4
  // int32 lanes to out, accumulator-major. a and b hold kInt8PeakInputBytes bytes.
  void (*run)(const uint8_t* a, const uint8_t* b, int64_t iterations, int32_t* out);

  int64_t macs_per_iteration() const { return static_cast<int64_t>(accumulators) * macs_per_step; }
  int out_lanes() const { return accumulators * vector_bytes / 4; }
};

// The probe kernels this CPU can run (cpu_features()), widest first; empty on a CPU with none
// (no AVX2, plain NEON: the engine's int8 work there is widening multiplies, not probed).
std::vector<Int8PeakKernel> int8_peak_kernels();

}  // namespace edgellm::kernels
