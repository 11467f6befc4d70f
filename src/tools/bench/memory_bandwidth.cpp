#include "tools/bench/memory_bandwidth.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <new>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif

#include "core/error.h"
#include "platform/memory_stats.h"
#if defined(__x86_64__) || defined(_M_X64)
#include "kernels/x86/prefetch_distance.h"
#endif

namespace edgellm::bench {
namespace {

constexpr size_t kMinBytes = 4096;
constexpr size_t kLine = 64;  // slices start on cache-line boundaries

// Sums 64-bit words with eight independent accumulators so the loop is bound by loads, not by
// the add dependency chain; the compiler vectorizes it (SSE2 baseline).
uint64_t sum_words_generic(const uint64_t* p, size_t n) {
  uint64_t a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) a[k] += p[i + static_cast<size_t>(k)];
  }
  for (; i < n; ++i) a[0] += p[i];
  uint64_t s = 0;
  for (const uint64_t v : a) s += v;
  return s;
}

#if defined(__x86_64__) || defined(_M_X64)
// The read pattern of the x86 probes: the slice is read as four streams at once (its quarters)
// and each stream is prefetched as the decode kernels of that ISA prefetch their weights
// (kernels/x86/prefetch_distance.h: into L1 1.5 KiB ahead with AVX2, 3 KiB with AVX-512, into
// L2 16 KiB ahead). The probe is the roofline decode is measured against, so it must read at least
// as fast as the kernels' own pattern. Alternating 1 GiB reads on this 2-core guest, both
// threads, median GB/s: one plain stream 20.8, four plain streams (the previous probe) 21.8, one
// prefetched stream 23.1, four prefetched streams 24.0; then, five alternating `edgellm bench`
// probes with the AVX-512 L1 distance at 1.5 and at 3 KiB: 27.0 and 27.7 GB/s on average.
template <int kPrefetchL1>
inline void prefetch_stream(const uint64_t* p) {
  _mm_prefetch(reinterpret_cast<const char*>(p) + kPrefetchL1, _MM_HINT_T0);
  _mm_prefetch(reinterpret_cast<const char*>(p) + kernels::x86::kPrefetchL2Bytes, _MM_HINT_T1);
}

// 256-bit loads, one 64-byte line per stream and step.
__attribute__((target("avx2"))) uint64_t sum_words_avx2(const uint64_t* p, size_t n) {
  const size_t quarter = n / 4 / 8 * 8;  // whole 64-byte lines per stream
  const uint64_t* s[4] = {p, p + quarter, p + 2 * quarter, p + 3 * quarter};
  __m256i a[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256()};
  for (size_t i = 0; i < quarter; i += 8) {
    for (int k = 0; k < 4; ++k) {
      prefetch_stream<kernels::x86::kPrefetchL1BytesAvx2>(s[k] + i);
      const __m256i lo = _mm256_load_si256(reinterpret_cast<const __m256i*>(s[k] + i));
      const __m256i hi = _mm256_load_si256(reinterpret_cast<const __m256i*>(s[k] + i + 4));
      a[k] = _mm256_add_epi64(a[k], _mm256_add_epi64(lo, hi));
    }
  }
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes),
                     _mm256_add_epi64(_mm256_add_epi64(a[0], a[1]), _mm256_add_epi64(a[2], a[3])));
  uint64_t total = lanes[0] + lanes[1] + lanes[2] + lanes[3];
  for (size_t i = 4 * quarter; i < n; ++i) total += p[i];
  return total;
}
// 512-bit loads, one 64-byte line per stream and step.
__attribute__((target("avx512f"))) uint64_t sum_words_avx512(const uint64_t* p, size_t n) {
  const size_t quarter = n / 4 / 8 * 8;
  const uint64_t* s[4] = {p, p + quarter, p + 2 * quarter, p + 3 * quarter};
  __m512i a[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512()};
  for (size_t i = 0; i < quarter; i += 8) {
    for (int k = 0; k < 4; ++k) {
      prefetch_stream<kernels::x86::kPrefetchL1BytesAvx512>(s[k] + i);
      a[k] = _mm512_add_epi64(a[k], _mm512_loadu_si512(s[k] + i));
    }
  }
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(lanes, _mm512_add_epi64(_mm512_add_epi64(a[0], a[1]), _mm512_add_epi64(a[2], a[3])));
  uint64_t total = 0;
  for (const uint64_t v : lanes) total += v;
  for (size_t i = 4 * quarter; i < n; ++i) total += p[i];
  return total;
}
#endif

using SumFn = uint64_t (*)(const uint64_t*, size_t);

SumFn pick_sum() {
#if defined(__x86_64__) || defined(_M_X64)
  if (__builtin_cpu_supports("avx512f")) return sum_words_avx512;
  if (__builtin_cpu_supports("avx2")) return sum_words_avx2;
#endif
  return sum_words_generic;
}

}  // namespace

BandwidthResult measure_read_bandwidth(const BandwidthOptions& options) {
  require(options.buffer_bytes >= kMinBytes, ErrorCode::kInvalidArgument,
          "bandwidth buffer of " + std::to_string(options.buffer_bytes) + " bytes is under the 4096-byte minimum");
  require(options.n_threads >= 1, ErrorCode::kInvalidArgument,
          "bandwidth thread count must be >= 1, got " + std::to_string(options.n_threads));
  require(options.passes >= 1, ErrorCode::kInvalidArgument,
          "bandwidth pass count must be >= 1, got " + std::to_string(options.passes));

  AlignedBuffer buf(options.buffer_bytes, "memory bandwidth buffer");
  const size_t n_words_total = buf.size() / sizeof(uint64_t);
  // Write a non-zero pattern: every page gets its own physical frame (an untouched or zero page
  // could be the shared zero page, which would measure the cache) and faults in before timing.
  auto* fill = buf.as<uint64_t>();
  for (size_t i = 0; i < n_words_total; ++i) fill[i] = i;
  const auto* words = buf.as<const uint64_t>();
  const SumFn sum = pick_sum();

  const int n_threads = options.n_threads;
  // Slice boundaries on cache lines so no line is read by two threads.
  const size_t words_per_line = kLine / sizeof(uint64_t);
  const size_t lines = n_words_total / words_per_line;
  std::vector<size_t> begin(static_cast<size_t>(n_threads) + 1);
  for (int t = 0; t <= n_threads; ++t) {
    begin[static_cast<size_t>(t)] = lines * static_cast<size_t>(t) / static_cast<size_t>(n_threads) * words_per_line;
  }

  BandwidthResult best;
  best.n_threads = n_threads;
  best.bytes = begin.back() * sizeof(uint64_t);
  std::atomic<uint64_t> sink{0};  // keeps the sums observable so the reads are not elided
  for (int pass = 0; pass < options.passes; ++pass) {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    std::vector<double> elapsed(static_cast<size_t>(n_threads), 0.0);
    auto body = [&](int t) {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) {
      }
      const auto t0 = std::chrono::steady_clock::now();
      const size_t a = begin[static_cast<size_t>(t)];
      const size_t b = begin[static_cast<size_t>(t) + 1];
      sink.fetch_add(sum(words + a, b - a), std::memory_order_relaxed);
      elapsed[static_cast<size_t>(t)] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    for (int t = 1; t < n_threads; ++t) threads.emplace_back(body, t);
    while (ready.load() < n_threads - 1) std::this_thread::yield();
    const auto t0 = std::chrono::steady_clock::now();
    go.store(true, std::memory_order_release);
    body(0);
    for (auto& th : threads) th.join();
    // Wall time from the start signal until the slowest thread finished.
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double secs = std::max(wall, *std::max_element(elapsed.begin(), elapsed.end()));
    const double gbps = static_cast<double>(best.bytes) / secs / 1e9;
    if (gbps > best.gbps) {
      best.gbps = gbps;
      best.seconds = secs;
    }
  }
  best.checksum = sink.load();
  return best;
}

}  // namespace edgellm::bench
