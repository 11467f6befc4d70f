// The machine's sustained int8 dot-product rate, the ceiling of prefill: a prompt's matmuls are
// int8 dot products (weights' codes x the activations quantized to 8 bits), so prefill ops/s can
// never exceed it. bench_runner.h compares every pp test with it ("% int8 peak").
//
// Method: the register-resident loop of kernels/int8_peak.h (no memory traffic) of each ISA
// kernel this CPU has, run by N threads at once, each for about `seconds` (so the clock settles
// where it does under sustained load, e.g. AVX-512 licence levels), best of `passes`. Rates are
// MACs per second (1 MAC = 2 ops), total over the N threads; and per CPU-second (per core, from
// the threads' CPU time), for a machine shared with other work.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/int8_peak.h"

namespace edgellm::bench {

struct Int8PeakOptions {
  int n_threads = 1;
  double seconds = 0.2;  // per pass and thread
  int passes = 3;        // best of
};

struct Int8PeakResult {
  std::string kernel;        // kernels::Int8PeakKernel::name ("avx512_vnni")
  std::string instruction;   // "vpdpbusd zmm"
  int n_threads = 0;
  double macs_per_second = 0;  // best pass, all threads together
  double seconds = 0;          // wall time of the best pass
  // The same pass's MACs over the CPU time its threads got (CLOCK_THREAD_CPUTIME_ID): the rate of
  // one core that has the CPU to itself, which a machine shared with other work (time slices
  // given to other processes) does not lower the way it lowers the wall-time rate.
  double macs_per_cpu_second = 0;
  int64_t iterations = 0;      // loop iterations per thread and pass
  uint64_t checksum = 0;       // sum of the accumulators' lanes (keeps the work observable)

  double macs_per_second_per_thread() const { return n_threads > 0 ? macs_per_second / n_threads : 0.0; }
  double ops_per_second() const { return 2.0 * macs_per_second; }
};

// One kernel. Throws Error(kInvalidArgument) for n_threads / passes < 1 or seconds <= 0.
Int8PeakResult measure_int8_peak(const kernels::Int8PeakKernel& kernel, const Int8PeakOptions& options);

// Every kernel of this CPU (kernels::int8_peak_kernels(), widest first); empty when it has none.
std::vector<Int8PeakResult> measure_int8_peaks(const Int8PeakOptions& options);

// The probe kernel whose instructions the engine's quantized kernels of the active ISA use
// (avx512 -> avx512_vnni, avx2 -> avx2, dotprod -> dotprod, i8mm -> i8mm: smmla, the ISA's
// fastest, though its repacked kernels use sdot, so repacked prefill on i8mm is held to the
// stricter ceiling); "" for scalar and NEON, which have no int8 dot-product instruction.
std::string int8_peak_kernel_for_active_isa();
// The vector probe of the active ISA's family: the same kernel, except on a tile ISA (amx ->
// avx512_vnni), where the tile unit's peak is many times the vector units' and both are shown.
std::string int8_vector_peak_kernel_for_active_isa();

}  // namespace edgellm::bench
