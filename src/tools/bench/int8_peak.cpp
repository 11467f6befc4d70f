#include "tools/bench/int8_peak.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <thread>

#include "tools/bench/cpu_clock.h"
#include "core/error.h"
#include "kernels/kernels.h"

namespace edgellm::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Inputs that keep vpmaddubsw's int16 pair sums from saturating (a in 0..127, b in -64..63:
// |pair| <= 2 * 127 * 64), so every kernel does exactly the quad dot product it is tested for.
struct Inputs {
  alignas(64) std::array<uint8_t, kernels::kInt8PeakInputBytes> a{};
  alignas(64) std::array<uint8_t, kernels::kInt8PeakInputBytes> b{};
  Inputs() {
    for (int i = 0; i < kernels::kInt8PeakInputBytes; ++i) {
      a[static_cast<size_t>(i)] = static_cast<uint8_t>((i * 37 + 11) % 128);
      b[static_cast<size_t>(i)] = static_cast<uint8_t>(static_cast<int8_t>((i * 53 + 7) % 128 - 64));
    }
  }
};

uint64_t run_and_sum(const kernels::Int8PeakKernel& k, const Inputs& in, int64_t iterations) {
  std::array<int32_t, kernels::kInt8PeakMaxOut> out{};
  k.run(in.a.data(), in.b.data(), iterations, out.data());
  uint64_t s = 0;
  for (int i = 0; i < k.out_lanes(); ++i) s += static_cast<uint32_t>(out[static_cast<size_t>(i)]);
  return s;
}

}  // namespace

Int8PeakResult measure_int8_peak(const kernels::Int8PeakKernel& kernel, const Int8PeakOptions& options) {
  require(options.n_threads >= 1, ErrorCode::kInvalidArgument,
          "int8 peak thread count must be >= 1, got " + std::to_string(options.n_threads));
  require(options.passes >= 1, ErrorCode::kInvalidArgument,
          "int8 peak pass count must be >= 1, got " + std::to_string(options.passes));
  require(options.seconds > 0, ErrorCode::kInvalidArgument, "int8 peak pass time must be > 0 seconds");
  const Inputs in;
  Int8PeakResult best;
  best.kernel = kernel.name;
  best.instruction = kernel.instruction;
  best.n_threads = options.n_threads;

  // Calibrate on this thread: iterations for `seconds` at the rate of a short run (at least 2 ms
  // so the clock's resolution does not matter).
  int64_t iterations = 1024;
  std::atomic<uint64_t> sink{0};
  for (;;) {
    const auto t0 = Clock::now();
    sink.fetch_add(run_and_sum(kernel, in, iterations), std::memory_order_relaxed);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (s >= 2e-3 || iterations >= (int64_t{1} << 40)) {
      iterations = std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(iterations) * options.seconds / std::max(s, 1e-9)));
      break;
    }
    iterations *= 4;
  }
  best.iterations = iterations;

  const int n = options.n_threads;
  for (int pass = 0; pass < options.passes; ++pass) {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<double> cpu(static_cast<size_t>(n), 0.0);
    auto body = [&](int t) {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) {
      }
      const double c0 = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
      sink.fetch_add(run_and_sum(kernel, in, iterations), std::memory_order_relaxed);
      cpu[static_cast<size_t>(t)] = cpu_seconds(CLOCK_THREAD_CPUTIME_ID) - c0;
    };
    std::vector<std::thread> threads;
    for (int t = 1; t < n; ++t) threads.emplace_back(body, t);
    while (ready.load() < n - 1) std::this_thread::yield();
    const auto t0 = Clock::now();
    go.store(true, std::memory_order_release);
    body(0);
    for (auto& th : threads) th.join();
    // From the start signal until the slowest thread finished: the rate all N sustain together.
    const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
    const double rate = static_cast<double>(n) * static_cast<double>(iterations) *
                        static_cast<double>(kernel.macs_per_iteration()) / wall;
    double cpu_total = 0;
    for (const double c : cpu) cpu_total += c;
    const double per_cpu = static_cast<double>(n) * static_cast<double>(iterations) *
                           static_cast<double>(kernel.macs_per_iteration()) / std::max(cpu_total, 1e-9);
    if (rate > best.macs_per_second) {
      best.macs_per_second = rate;
      best.seconds = wall;
    }
    best.macs_per_cpu_second = std::max(best.macs_per_cpu_second, per_cpu);
  }
  best.checksum = sink.load();
  return best;
}

std::vector<Int8PeakResult> measure_int8_peaks(const Int8PeakOptions& options) {
  std::vector<Int8PeakResult> out;
  for (const auto& k : kernels::int8_peak_kernels()) out.push_back(measure_int8_peak(k, options));
  return out;
}

std::string int8_peak_kernel_for_active_isa() {
  switch (kernels::active_isa()) {
    case kernels::Isa::kAvx512: return "avx512_vnni";
    case kernels::Isa::kAvx2: return "avx2";
    case kernels::Isa::kDotprod: return "dotprod";
    case kernels::Isa::kI8mm: return "i8mm";
    case kernels::Isa::kAmx: return "amx_int8";
    case kernels::Isa::kScalar:
    case kernels::Isa::kNeon: return "";
  }
  return "";
}

std::string int8_vector_peak_kernel_for_active_isa() {
  return kernels::active_isa() == kernels::Isa::kAmx ? "avx512_vnni" : int8_peak_kernel_for_active_isa();
}

}  // namespace edgellm::bench
